// Tests what the views export and how heads are named: heatmaps go to SVG and
// PDF as exact cells (vector rectangles, or a lossless image enlarged without
// smoothing), the attention grid exports whole whatever the scroll, Fit fits
// both panes of a comparison, multi-path heads carry their path, and the model
// view (every head of every layer) shows and exports as one figure.
// Expected colours come from the colour scale's stops as ColorScale.cpp lists
// them (viridis samples), written out here, or from grabbing the widget on screen.
#include "insights/AttentionView.h"
#include "insights/HeadGrid.h"
#include "insights/HeadLabel.h"
#include "insights/InsightHistory.h"
#include "insights/MatrixView.h"
#include "insights/ModelViewFigure.h"
#include "insights/TokenFlowView.h"
#include "common/ViewExport.h"

#include <QApplication>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QMainWindow>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QStatusBar>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include <cmath>
#include <memory>
#include <optional>

using namespace widelab;

namespace {

// The sequential scale's stops at t = 0, 0.2, 0.4, 0.6, 0.8, 1 (viridis samples).
const QColor kStops[6] = {QColor(68, 1, 84),    QColor(65, 68, 135),  QColor(42, 120, 142),
                          QColor(34, 168, 132), QColor(122, 209, 81), QColor(253, 231, 37)};
const QColor kLow = kStops[0], kHigh = kStops[5];

// A filled rectangle of an SVG file, in the file's user units.
struct SvgRect {
    QRectF rect;
    QColor fill;
};

struct SvgContent {
    QVector<SvgRect> rects;
    int images = 0;
    QVector<QByteArray> pngs;  // the embedded images' data, decoded
};

// "matrix(a,b,c,d,e,f)" or "translate(x,y)" as a transform; anything else: identity.
QTransform parseTransform(const QString& text)
{
    static const QRegularExpression number(QStringLiteral("-?[0-9.]+(?:e-?[0-9]+)?"));
    QVector<double> v;
    for (auto it = number.globalMatch(text); it.hasNext();)
        v.push_back(it.next().captured().toDouble());
    if (text.startsWith(QStringLiteral("matrix")) && v.size() == 6)
        return QTransform(v[0], v[1], v[2], v[3], v[4], v[5]);
    if (text.startsWith(QStringLiteral("translate")) && v.size() >= 1)
        return QTransform::fromTranslate(v[0], v.value(1));
    return {};
}

// Every <rect> with its fill (its own or its nearest group's) and its place
// after the groups' transforms; every <image>.
SvgContent readSvg(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    SvgContent content;
    QXmlStreamReader xml(&file);
    struct Group {
        QString fill;
        QTransform transform;
    };
    QVector<Group> groups{{QString(), QTransform()}};
    while (!xml.atEnd()) {
        const QXmlStreamReader::TokenType token = xml.readNext();
        if (token == QXmlStreamReader::StartElement) {
            const QXmlStreamAttributes a = xml.attributes();
            Group group = groups.last();
            if (a.hasAttribute(QStringLiteral("fill")))
                group.fill = a.value(QStringLiteral("fill")).toString();
            if (a.hasAttribute(QStringLiteral("transform")))
                group.transform = parseTransform(a.value(QStringLiteral("transform")).toString()) * group.transform;
            groups.push_back(group);
            if (xml.name() == QLatin1String("rect") && group.fill.startsWith(QLatin1Char('#'))) {
                const QRectF r(a.value(QStringLiteral("x")).toDouble(), a.value(QStringLiteral("y")).toDouble(),
                               a.value(QStringLiteral("width")).toDouble(),
                               a.value(QStringLiteral("height")).toDouble());
                content.rects.push_back({group.transform.mapRect(r), QColor(group.fill)});
            } else if (xml.name() == QLatin1String("image")) {
                ++content.images;
                const QString href = a.value(QStringLiteral("xlink:href")).toString();
                const qsizetype comma = href.indexOf(QLatin1Char(','));
                if (comma > 0)
                    content.pngs.push_back(QByteArray::fromBase64(href.mid(comma + 1).toLatin1()));
            }
        } else if (token == QXmlStreamReader::EndElement) {
            groups.pop_back();
        }
    }
    return content;
}

// The colour an SVG shows at `point`: the last filled rectangle drawn there.
QColor svgColourAt(const SvgContent& svg, const QPointF& point)
{
    QColor colour;
    for (const SvgRect& r : svg.rects)
        if (r.rect.contains(point))
            colour = r.fill;
    return colour;
}

// The PDF's streams, inflated where they are FlateDecode (the header gives
// qUncompress a size it grows from).
QVector<QByteArray> pdfStreams(const QByteArray& pdf)
{
    QVector<QByteArray> streams;
    qsizetype at = 0;
    while ((at = pdf.indexOf("stream", at)) >= 0) {
        if (at >= 3 && pdf.mid(at - 3, 3) == "end") {
            at += 6;
            continue;
        }
        qsizetype begin = at + 6;
        if (pdf.mid(begin, 2) == "\r\n")
            begin += 2;
        else if (pdf.mid(begin, 1) == "\n")
            begin += 1;
        const qsizetype end = pdf.indexOf("endstream", begin);
        if (end < 0)
            break;
        const QByteArray raw = pdf.mid(begin, end - begin);
        const qsizetype dict = pdf.lastIndexOf("<<", at);
        const bool flate = dict >= 0 && pdf.mid(dict, at - dict).contains("/FlateDecode");
        if (flate) {
            QByteArray sized(4, '\0');
            const quint32 guess = static_cast<quint32>(raw.size()) * 64 + 4096;
            sized[0] = char(guess >> 24);
            sized[1] = char(guess >> 16);
            sized[2] = char(guess >> 8);
            sized[3] = char(guess);
            streams.push_back(qUncompress(sized + raw));
        } else {
            streams.push_back(raw);
        }
        at = end + 9;
    }
    return streams;
}

// The fill colours set in a PDF content stream ("r g b rg", or "r g b scn" in
// an RGB colour space), as 0..255 colours.
QVector<QColor> pdfFillColours(const QByteArray& stream)
{
    QVector<QColor> colours;
    static const QRegularExpression rg(QStringLiteral("([0-9.]+) ([0-9.]+) ([0-9.]+) (?:rg|scn)\\b"));
    for (auto it = rg.globalMatch(QString::fromLatin1(stream)); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        colours.push_back(QColor::fromRgbF(m.captured(1).toFloat(), m.captured(2).toFloat(), m.captured(3).toFloat()));
    }
    return colours;
}

bool containsColour(const QVector<QColor>& colours, const QColor& wanted)
{
    for (const QColor& c : colours)
        if (std::abs(c.red() - wanted.red()) <= 1 && std::abs(c.green() - wanted.green()) <= 1
            && std::abs(c.blue() - wanted.blue()) <= 1)
            return true;
    return false;
}

// rows x cols values in [0, 1] on the fixed sequential range 0..1.
MatrixView::Matrix sequentialMatrix(int rows, int cols, const QVector<float>& values)
{
    MatrixView::Matrix m;
    m.rows = rows;
    m.cols = cols;
    m.values = values;
    m.low = 0;
    m.high = 1;
    return m;
}

// `heads` heads over `tokens` tokens; head h of layer l puts all of query q's
// weight on key (q + h + l) % tokens.
ProbeResult shiftedCapture(qint64 step, int layers, int heads, int tokens)
{
    ProbeResult capture;
    capture.step = step;
    capture.text = "probe";
    for (int t = 0; t < tokens; ++t)
        capture.tokens.push_back(QStringLiteral("t%1").arg(t).toStdString());
    const auto n = static_cast<std::size_t>(tokens);
    for (int l = 0; l < layers; ++l) {
        capture.attention.emplace_back();
        for (int h = 0; h < heads; ++h) {
            std::vector<std::vector<float>> map(n, std::vector<float>(n, 0.0f));  // [query][key]
            for (int q = 0; q < tokens; ++q)
                map[static_cast<std::size_t>(q)][static_cast<std::size_t>((q + h + l) % tokens)] = 1.0f;
            capture.attention.back().push_back(std::move(map));
        }
    }
    return capture;
}

int keyOf(int query, int layer, int head, int tokens) { return (query + head + layer) % tokens; }

// A history holding one capture, and a model state when the model has paths.
std::shared_ptr<InsightHistory> historyOf(const ProbeResult& capture, int paths = 1)
{
    auto history = std::make_shared<InsightHistory>();
    if (paths > 1) {
        TrainingSnapshot state;
        state.step = capture.step + 5;  // snapshots may begin after the first capture
        for (int block = 0; block < probeLayers(capture); ++block)
            for (const char* sublayer : {"attention", "ffn"}) {
                PathWeights p;
                p.block = block;
                p.sublayer = sublayer;
                p.paths = paths;
                p.alpha = std::vector<float>(static_cast<std::size_t>(paths), 1.0f);
                state.paths.push_back(p);
            }
        history->addState(state);
    }
    history->addCapture(capture);
    return history;
}

QColor pixelAt(const QImage& image, const QPointF& logical)
{
    const double ratio = image.devicePixelRatio();
    return QColor(image.pixel(QPoint(static_cast<int>(logical.x() * ratio), static_cast<int>(logical.y() * ratio))));
}

}  // namespace

class TestViewExport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void headLabelsNameThePath();
    void matrixSvgHasOneRectanglePerCellInTheScreensColours();
    void matrixPdfHasVectorCellsAndNoJpeg();
    void largeMatrixExportsALosslessSharpImage();
    void attentionGridExportsEveryHeadWhateverTheScroll();
    void fitFitsBothPanesAndOneHeadFillsItsPane();
    void multiPathHeadsAreNamedWithTheirPath();
    void modelViewShowsEveryHeadOfEveryLayerAndExports();
    void aWrittenExportIsConfirmedInTheStatusBar();
};

void TestViewExport::headLabelsNameThePath()
{
    // 4 paths of 4 heads, path-major: head index 5 is path 2's second head.
    QCOMPARE(headLabel(5, 16, 4), QStringLiteral("path 2 · head 2"));
    QCOMPARE(headShortLabel(5, 16, 4), QStringLiteral("p2 h2"));
    QCOMPARE(headLabel(15, 16, 4), QStringLiteral("path 4 · head 4"));
    QCOMPARE(headLabel(0, 16, 4), QStringLiteral("path 1 · head 1"));
    QCOMPARE(headLabel(5, 16, 1), QStringLiteral("head 6"));
    QCOMPARE(headLabel(5, 15, 4), QStringLiteral("head 6"));  // 4 does not divide 15: no guessed path
    QCOMPARE(headsPerPath(16, 4), 4);
    QCOMPARE(headsPerPath(15, 4), 15);
    QCOMPARE(attentionPaths(nullptr), 1);
    TrainingSnapshot state;
    state.paths.push_back({0, "ffn", 3, {}, 1, 0});
    QCOMPARE(attentionPaths(&state), 1);  // only the FFN has paths here
    state.paths.push_back({0, "attention", 2, {}, 1, 0});
    QCOMPARE(attentionPaths(&state), 2);
}

void TestViewExport::matrixSvgHasOneRectanglePerCellInTheScreensColours()
{
    // 2 x 3 cells, each a stop of the scale: 0, 0.2, 0.4 / 0.6, 0.8, 1.
    MatrixView view;
    view.setMatrix(sequentialMatrix(2, 3, {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f}));
    view.resize(420, 300);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QImage screen = view.grab().toImage();

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("matrix.svg"));
    QString error;
    QVERIFY2(viewexport::exportWidgetImage(&view, path, QStringLiteral("matrix"), &error), qPrintable(error));
    const SvgContent svg = readSvg(path);
    QCOMPARE(svg.images, 0);  // no embedded picture of the cells
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) {
            const QRectF cell = view.cellRect(r, c);
            const QColor expected = kStops[r * 3 + c];
            QCOMPARE(pixelAt(screen, cell.center()), expected);  // on screen
            QCOMPARE(svgColourAt(svg, cell.center()), expected);  // in the file
            // Near the cell's corners too: no colour from a neighbour bleeds in.
            QCOMPARE(svgColourAt(svg, cell.topLeft() + QPointF(1.5, 1.5)), expected);
            QCOMPARE(svgColourAt(svg, cell.bottomRight() - QPointF(1.5, 1.5)), expected);
        }
}

void TestViewExport::matrixPdfHasVectorCellsAndNoJpeg()
{
    MatrixView view;
    view.setMatrix(sequentialMatrix(2, 3, {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f}));
    view.resize(420, 300);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("matrix.pdf"));
    QString error;
    QVERIFY2(viewexport::exportWidgetImage(&view, path, QStringLiteral("matrix"), &error), qPrintable(error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray pdf = file.readAll();
    QVERIFY(pdf.startsWith("%PDF-"));
    QVERIFY(!pdf.contains("/DCTDecode"));
    QVERIFY(!pdf.contains("/Subtype /Image"));
    QVector<QColor> fills;
    bool filledRectangles = false;  // "x y w h re" then "f": a filled path
    for (const QByteArray& stream : pdfStreams(pdf)) {
        fills += pdfFillColours(stream);
        filledRectangles = filledRectangles || QRegularExpression(QStringLiteral("\\bre\\s+f\\b"))
                                                   .match(QString::fromLatin1(stream))
                                                   .hasMatch();
    }
    QVERIFY(filledRectangles);
    QVERIFY2(!fills.isEmpty(), "no fill colours in the PDF's content");
    for (const QColor& stop : kStops)
        QVERIFY2(containsColour(fills, stop), qPrintable(stop.name()));
}

void TestViewExport::largeMatrixExportsALosslessSharpImage()
{
    // 80 x 80 cells (more than CellPainter draws as rectangles), a checkerboard of 0 and 1.
    const int n = 80;
    QVector<float> values(n * n);
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c)
            values[r * n + c] = (r + c) % 2 == 0 ? 1.0f : 0.0f;
    MatrixView view;
    view.setMatrix(sequentialMatrix(n, n, values));
    view.resize(700, 600);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());

    const QString svgPath = dir.filePath(QStringLiteral("large.svg"));
    QString error;
    QVERIFY2(viewexport::exportWidgetImage(&view, svgPath, QStringLiteral("large"), &error), qPrintable(error));
    const SvgContent svg = readSvg(svgPath);
    QCOMPARE(svg.images, 1);
    QCOMPARE(svg.pngs.size(), 1);
    QImage embedded;
    QVERIFY(embedded.loadFromData(svg.pngs[0], "PNG"));  // PNG: lossless
    QVERIFY(embedded.width() >= n && embedded.width() % n == 0);
    QCOMPARE(embedded.height(), embedded.width());
    const int k = embedded.width() / n;  // pixels a cell
    QVERIFY2(k > 1, "the image is enlarged, so a viewer's smoothing stays inside each cell");
    for (int r = 0; r < n; r += 7)
        for (int c = 0; c < n; c += 5) {
            const QColor expected = (r + c) % 2 == 0 ? kHigh : kLow;
            // Every pixel of the cell, its edges included.
            QCOMPARE(QColor(embedded.pixel(c * k, r * k)), expected);
            QCOMPARE(QColor(embedded.pixel(c * k + k - 1, r * k + k - 1)), expected);
        }

    const QString pdfPath = dir.filePath(QStringLiteral("large.pdf"));
    QVERIFY2(viewexport::exportWidgetImage(&view, pdfPath, QStringLiteral("large"), &error), qPrintable(error));
    QFile file(pdfPath);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray pdf = file.readAll();
    QVERIFY(pdf.contains("/Subtype /Image"));
    QVERIFY(!pdf.contains("/DCTDecode"));
}

void TestViewExport::attentionGridExportsEveryHeadWhateverTheScroll()
{
    // 48 heads at a zoom that shows a few: the view scrolls, the export holds all 48.
    const int heads = 48, tokens = 6;
    auto history = historyOf(shiftedCapture(10, 1, heads, tokens));
    AttentionView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    view.setCellSize(200);
    QApplication::processEvents();
    const HeadGrid* onScreen = view.primaryPane()->grid();
    QCOMPARE(onScreen->heads(), heads);
    QScrollBar* scroll = view.primaryPane()->gridArea()->verticalScrollBar();
    QVERIFY(scroll->maximum() > 0);  // on screen, most heads are below the fold
    scroll->setValue(scroll->maximum() / 2);

    QWidget* area = view.exportArea();
    QVERIFY(area != nullptr);
    const QList<HeadGrid*> grids = area->findChildren<HeadGrid*>();
    QCOMPARE(grids.size(), 1);
    const HeadGrid* grid = grids[0];
    QCOMPARE(grid->heads(), heads);
    QVERIFY(grid->showsLabels());  // readable: a token label per row and column
    // The colour range goes with the picture: 0 to the layer's largest weight, 1.
    bool legend = false;
    for (const QLabel* label : area->findChildren<QLabel*>())
        legend = legend || label->text().contains(QStringLiteral("0 (dark) … 1.00 (light)"));
    QVERIFY(legend);
    // Every head lies inside the exported area.
    for (int h = 0; h < heads; ++h) {
        const QRectF r = grid->mapRect(h).translated(grid->mapTo(area, QPoint(0, 0)));
        QVERIFY2(QRectF(area->rect()).contains(r), qPrintable(QStringLiteral("head %1").arg(h + 1)));
    }

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("grid.png"));
    QString error;
    QVERIFY2(viewexport::exportWidgetImage(area, path, view.exportTitle(), &error), qPrintable(error));
    QImage image(path);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), area->size() * 2);
    image.setDevicePixelRatio(2);
    // The last head's query 2 looks at key (2 + 47) % 6 only: that cell at the top of the scale.
    for (const int head : {0, 20, heads - 1}) {
        const QRectF r = grid->mapRect(head).translated(grid->mapTo(area, QPoint(0, 0)));
        const double step = r.width() / tokens;
        for (int key = 0; key < tokens; ++key) {
            const QPointF centre(r.left() + (key + 0.5) * step, r.top() + 2.5 * step);
            QCOMPARE(pixelAt(image, centre), key == keyOf(2, 0, head, tokens) ? kHigh : kLow);
        }
    }
}

void TestViewExport::fitFitsBothPanesAndOneHeadFillsItsPane()
{
    auto a = historyOf(shiftedCapture(10, 1, 8, 5));
    auto b = historyOf(shiftedCapture(10, 1, 8, 5));
    AttentionView view;
    view.resize(1300, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a}, {});
    view.refresh();
    view.setCellSize(300);  // a zoom that overflows
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a}, {QStringLiteral("b"), QStringLiteral("Run B"), b});
    view.refresh();
    view.fitCells();
    QApplication::processEvents();
    QVERIFY(view.comparisonPane()->isVisible());
    int cells[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
        const AttentionPane* pane = i == 0 ? view.primaryPane() : view.comparisonPane();
        const QSize viewport = pane->gridArea()->viewport()->size();
        const HeadGrid* grid = pane->grid();
        QCOMPARE(grid->heads(), 8);
        for (int h = 0; h < 8; ++h) {
            const QRectF r = grid->mapRect(h);
            QVERIFY2(r.right() <= viewport.width() && r.bottom() <= viewport.height(),
                     qPrintable(QStringLiteral("pane %1, head %2 outside %3x%4").arg(i).arg(h + 1)
                                    .arg(viewport.width()).arg(viewport.height())));
        }
        QCOMPARE(pane->gridArea()->verticalScrollBar()->maximum(), 0);
        QCOMPARE(pane->gridArea()->horizontalScrollBar()->maximum(), 0);
        cells[i] = grid->cellSize();
        QVERIFY(cells[i] > 40);
    }
    QVERIFY(std::abs(cells[0] - cells[1]) <= 8);  // the panes got even room

    // One head: its map fills its pane (as wide or as tall as the pane allows, less
    // the grid's 10-pixel gap and 4-pixel margin under its last row).
    auto one = historyOf(shiftedCapture(10, 1, 1, 4));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), one}, {QStringLiteral("b"), QStringLiteral("Run B"), one});
    view.refresh();
    view.fitCells();
    QApplication::processEvents();
    for (const AttentionPane* pane : {view.primaryPane(), view.comparisonPane()}) {
        const QSize viewport = pane->gridArea()->viewport()->size();
        const QRectF r = pane->grid()->mapRect(0);
        QVERIFY(r.right() <= viewport.width() && r.bottom() <= viewport.height());
        const double room = std::min(viewport.width() - r.left(), viewport.height() - r.top());
        QVERIFY2(r.width() >= room - 16, qPrintable(QStringLiteral("%1 of %2").arg(r.width()).arg(room)));
    }
    // And after the window changes size, still.
    view.resize(1000, 600);
    QApplication::processEvents();
    for (const AttentionPane* pane : {view.primaryPane(), view.comparisonPane()}) {
        const QSize viewport = pane->gridArea()->viewport()->size();
        const QRectF r = pane->grid()->mapRect(0);
        QVERIFY(r.right() <= viewport.width() && r.bottom() <= viewport.height());
        const double room = std::min(viewport.width() - r.left(), viewport.height() - r.top());
        QVERIFY2(r.width() >= room - 16, qPrintable(QStringLiteral("%1 of %2").arg(r.width()).arg(room)));
    }
    // One head enlarged in each of the two narrow panes: the prediction goes under
    // the map, and the map takes most of its pane's width.
    view.showHead(0);
    QApplication::processEvents();
    for (const AttentionPane* pane : {view.primaryPane(), view.comparisonPane()}) {
        const MatrixView* matrix = pane->matrix();
        QVERIFY(matrix->isVisible());
        const double mapWidth = matrix->cellRect(0, 3).right() - matrix->cellRect(0, 0).left();
        QVERIFY2(mapWidth >= 0.7 * pane->width(),
                 qPrintable(QStringLiteral("%1 of a %2-pixel pane").arg(mapWidth).arg(pane->width())));
    }
}

void TestViewExport::multiPathHeadsAreNamedWithTheirPath()
{
    // 2 paths of 3 heads: 6 heads, path-major.
    auto history = historyOf(shiftedCapture(10, 1, 6, 3), 2);
    AttentionView view;
    view.resize(1200, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setStep(10);  // before the run's first snapshot (step 15): the paths come from it all the same
    view.refresh();
    const AttentionPane* pane = view.primaryPane();
    QVERIFY2(pane->header()->text().contains(QStringLiteral("2 paths × 3 heads")), qPrintable(pane->header()->text()));
    HeadGrid* grid = pane->grid();
    grid->setCellSize(200);
    QCOMPARE(grid->headTitle(4), QStringLiteral("path 2 · head 2"));
    const QString readout = grid->readout({4, 0, 0});
    QVERIFY2(readout.startsWith(QStringLiteral("path 2 · head 2")), qPrintable(readout));
    // Whole paths to a row when there is room for a path: head 4 (path 2 · head 1) starts the second row.
    if (grid->columns() < 6) {
        QCOMPARE(grid->columns() % 3, 0);
        QVERIFY(grid->mapRect(3).top() > grid->mapRect(2).top());
    }

    view.showHead(4);
    const QString title = pane->matrix()->title();
    QVERIFY2(title.startsWith(QStringLiteral("Path 2 · head 2")), qPrintable(title));
    QSpinBox* head = nullptr;
    for (QSpinBox* box : view.findChildren<QSpinBox*>())
        if (box->accessibleName() == QStringLiteral("Head"))
            head = box;
    QVERIFY(head != nullptr);
    QCOMPARE(head->text(), QStringLiteral("path 2 · head 2"));
    // Typing a path and a head picks that head.
    head->selectAll();
    QTest::keyClicks(head, QStringLiteral("p1 h3"));
    QTest::keyClick(head, Qt::Key_Enter);
    QCOMPARE(view.head(), 2);

    // The token view's legend names the colours the same way.
    view.setMode(AttentionPane::Mode::Tokens);
    view.refresh();
    QCOMPARE(pane->tokens()->headName(4), QStringLiteral("p2 h2"));
    QCOMPARE(pane->tokens()->headName(0), QStringLiteral("p1 h1"));

    // A one-path model keeps plain numbers.
    auto plain = historyOf(shiftedCapture(10, 1, 6, 3));
    view.setSources({QStringLiteral("b"), QStringLiteral("Run B"), plain}, {});
    view.setMode(AttentionPane::Mode::Grid);
    view.refresh();
    QCOMPARE(pane->grid()->readout({4, 0, 0}).left(7), QStringLiteral("head 5:"));
    view.setMode(AttentionPane::Mode::Tokens);
    view.refresh();
    QCOMPARE(pane->tokens()->headName(4), QStringLiteral("h5"));
}

void TestViewExport::modelViewShowsEveryHeadOfEveryLayerAndExports()
{
    const int layers = 3, heads = 4, tokens = 5;
    auto history = historyOf(shiftedCapture(10, layers, heads, tokens), 2);
    AttentionView view;
    view.resize(1200, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    view.setMode(AttentionPane::Mode::Model);
    QApplication::processEvents();
    ModelViewFigure* figure = view.primaryPane()->modelView();
    QVERIFY(figure->isVisible());
    QCOMPARE(figure->layers(), layers);
    QCOMPARE(figure->heads(), heads);
    // Layers are rows, heads columns.
    QVERIFY(figure->mapRect(1, 0).top() > figure->mapRect(0, 0).bottom());
    QVERIFY(figure->mapRect(0, 1).left() > figure->mapRect(0, 0).right());
    QCOMPARE(figure->mapRect(2, 3).top(), figure->mapRect(2, 0).top());
    // Fitted: the whole figure is in view.
    const QSize viewport = view.primaryPane()->modelArea()->viewport()->size();
    QVERIFY(figure->width() <= viewport.width() && figure->height() <= viewport.height());
    // Heads carry their path, layers their number.
    QVERIFY(figure->columnLabel(2).contains(QStringLiteral("2")));
    QVERIFY(figure->columnLabel(2).startsWith(QStringLiteral("p")));
    // On screen: layer 3, head 2 (path 1 · head 2), query 1 looks at key (1 + 1 + 2) % 5 = 4.
    const QImage screen = figure->grab().toImage();
    const QRectF r = figure->mapRect(2, 1);
    const double step = r.width() / tokens;
    for (int key = 0; key < tokens; ++key)
        QCOMPARE(pixelAt(screen, QPointF(r.left() + (key + 0.5) * step, r.top() + 1.5 * step)),
                 key == keyOf(1, 2, 1, tokens) ? kHigh : kLow);
    const ModelViewFigure::Hit hit = figure->hitAt(QPointF(r.left() + 4.5 * step, r.top() + 1.5 * step));
    QCOMPARE(hit.layer, 2);
    QCOMPARE(hit.head, 1);
    QCOMPARE(hit.query, 1);
    QCOMPARE(hit.key, 4);
    QVERIFY2(figure->readout(hit).contains(QStringLiteral("layer 3, path 1 · head 2")), qPrintable(figure->readout(hit)));
    QVERIFY(figure->readout(hit).contains(QStringLiteral("1.000")));

    // Exported: one figure of every head, cells exact in PNG, rectangles in SVG.
    QWidget* area = view.exportArea();
    const QList<ModelViewFigure*> figures = area->findChildren<ModelViewFigure*>();
    QCOMPARE(figures.size(), 1);
    const ModelViewFigure* exported = figures[0];
    QCOMPARE(exported->layers(), layers);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString png = dir.filePath(QStringLiteral("model.png"));
    QString error;
    QVERIFY2(viewexport::exportWidgetImage(area, png, view.exportTitle(), &error), qPrintable(error));
    QImage image(png);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), area->size() * 2);
    image.setDevicePixelRatio(2);
    const QPoint offset = exported->mapTo(area, QPoint(0, 0));
    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < heads; ++h) {
            const QRectF m = exported->mapRect(l, h).translated(offset);
            QVERIFY(QRectF(area->rect()).contains(m));
            const double s = m.width() / tokens;
            for (int key = 0; key < tokens; ++key)
                QCOMPARE(pixelAt(image, QPointF(m.left() + (key + 0.5) * s, m.top() + 0.5 * s)),
                         key == keyOf(0, l, h, tokens) ? kHigh : kLow);
        }
    const QString svgPath = dir.filePath(QStringLiteral("model.svg"));
    QVERIFY2(viewexport::exportWidgetImage(area, svgPath, view.exportTitle(), &error), qPrintable(error));
    const SvgContent svg = readSvg(svgPath);
    QCOMPARE(svg.images, 0);
    const QRectF last = exported->mapRect(layers - 1, heads - 1).translated(offset);
    const double s = last.width() / tokens;
    const int hot = keyOf(3, layers - 1, heads - 1, tokens);
    QCOMPARE(svgColourAt(svg, QPointF(last.left() + (hot + 0.5) * s, last.top() + 3.5 * s)), kHigh);
    QCOMPARE(svgColourAt(svg, QPointF(last.left() + ((hot + 1) % tokens + 0.5) * s, last.top() + 3.5 * s)), kLow);

    // A click on a map enlarges that head of that layer.
    QTest::mouseClick(figure, Qt::LeftButton, {}, figure->mapRect(1, 3).center().toPoint());
    QCOMPARE(view.mode(), AttentionPane::Mode::Head);
    QCOMPARE(view.layer(), 1);
    QCOMPARE(view.head(), 3);
}

void TestViewExport::aWrittenExportIsConfirmedInTheStatusBar()
{
    // A view deep inside a main window: the window's status bar says where the file went.
    QMainWindow window;
    auto* central = new QWidget;
    auto* view = new QLabel(QStringLiteral("a view"), central);
    window.setCentralWidget(central);
    QVERIFY(window.statusBar()->currentMessage().isEmpty());
    viewexport::reportExport(view, QStringLiteral("/tmp/figures/loss.png"), true, QString());
    QCOMPARE(window.statusBar()->currentMessage(), QStringLiteral("Exported /tmp/figures/loss.png"));
    // A view in no main window: nothing to say it in, and nothing breaks.
    QLabel alone(QStringLiteral("alone"));
    viewexport::reportExport(&alone, QStringLiteral("/tmp/x.csv"), true, QString());
    // The views that offer an image or their numbers tell a CSV by its suffix.
    QVERIFY(viewexport::isCsvPath(QStringLiteral("/tmp/run.CSV")));
    QVERIFY(viewexport::isCsvPath(QStringLiteral("table.csv")));
    QVERIFY(!viewexport::isCsvPath(QStringLiteral("table.csv.png")));
    QVERIFY(!viewexport::isCsvPath(QStringLiteral("/tmp/csv")));
}

QTEST_MAIN(TestViewExport)
#include "tst_viewexport.moc"
