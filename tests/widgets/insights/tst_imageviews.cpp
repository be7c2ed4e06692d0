// Tests the views of image probes: a patch's attention weight is drawn in that
// patch's cell over the picture (from CLS, or the mean over query patches, and
// the view says which), each head's caption says what its map is, the experts
// grid tints a patch with its expert's colour and marks a dropped one, a text
// probe still draws as a token grid, and an image probe is added as
// "validation:N" or a file's path and listed by a readable name; a probe's
// pixels become a picture only when they and its grid agree.
// Expected colours are written out here: the sequential scale's ends (viridis)
// and the Okabe-Ito colours, blended over hand-picked image pixels.
#include "InsightTestData.h"
#include "insights/AttentionView.h"
#include "insights/ExpertsView.h"
#include "insights/HeadGrid.h"
#include "insights/ImageProbeDialog.h"
#include "insights/InsightHistory.h"
#include "insights/InsightsView.h"
#include "insights/PatchAttentionGrid.h"
#include "insights/PatchExpertGrid.h"
#include "insights/PatchMaps.h"
#include "common/ViewExport.h"

#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QRadioButton>
#include <QScrollArea>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <cmath>
#include <memory>

using namespace widelab;

namespace {

using Map = QVector<float>;

const QColor kLow(68, 1, 84);     // the sequential scale at 0
const QColor kHigh(253, 231, 37);  // ... at 1
const QColor kBlue(0x00, 0x72, 0xb2), kOrange(0xe6, 0x9f, 0x00), kGreen(0x00, 0x9e, 0x73);  // experts 1, 2, 3

// The picture of the tests: 8 x 8 pixels, 2 x 2 patches of 4 x 4, each patch one colour.
const QColor kPatchColours[4] = {QColor(200, 40, 40), QColor(40, 200, 40), QColor(40, 40, 200), QColor(120, 120, 120)};

ProbeImage testImage()
{
    ProbeImage image;
    image.width = image.height = 8;
    image.channels = 3;
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x) {
            const QColor& colour = kPatchColours[(y / 4) * 2 + x / 4];
            for (int channel : {colour.red(), colour.green(), colour.blue()})
                image.pixels.push_back(static_cast<std::uint8_t>(channel));
        }
    image.gridRows = image.gridCols = 2;
    return image;
}

ProbeImage imageOf(std::int64_t width, std::int64_t height, std::int64_t channels, std::vector<std::uint8_t> pixels,
                   std::int64_t gridRows, std::int64_t gridCols)
{
    ProbeImage image;
    image.width = width;
    image.height = height;
    image.channels = channels;
    image.pixels = std::move(pixels);
    image.gridRows = gridRows;
    image.gridCols = gridCols;
    return image;
}

QColor blend(const QColor& over, const QColor& under, double opacity)
{
    auto mix = [&](int a, int b) { return static_cast<int>(std::lround(opacity * a + (1 - opacity) * b)); };
    return {mix(over.red(), under.red()), mix(over.green(), under.green()), mix(over.blue(), under.blue())};
}

bool close(const QColor& actual, const QColor& expected, int tolerance = 3)
{
    const bool ok = std::abs(actual.red() - expected.red()) <= tolerance
                    && std::abs(actual.green() - expected.green()) <= tolerance
                    && std::abs(actual.blue() - expected.blue()) <= tolerance;
    if (!ok)
        qWarning() << "colour" << actual.name() << "expected" << expected.name();
    return ok;
}

// An image probe with a CLS token: tokens CLS, p1..p4; one layer of two heads.
// Head 1: CLS looks at patch 4 only. Head 2: CLS looks at patches 1 and 2, half each.
// Rows of the other queries are uniform (they do not matter with CLS).
ProbeResult clsCapture()
{
    ProbeResult c;
    c.step = 30;
    c.text = "validation:3";
    c.tokens = {"CLS", "p1", "p2", "p3", "p4"};
    Map h1(25, 0.2f), h2(25, 0.2f);
    const Map row1{0, 0, 0, 0, 1}, row2{0, 0.5f, 0.5f, 0, 0};
    for (int k = 0; k < 5; ++k) {
        h1[k] = row1[k];
        h2[k] = row2[k];
    }
    c.attention = {{insighttest::rowsOf(h1, 5), insighttest::rowsOf(h2, 5)}};
    c.image = testImage();
    c.prediction = {0.75f, 0.25f};
    c.predictionLabels = {"circle", "square"};
    return c;
}

// The same picture without a CLS token: four patch tokens, one head. Column sums
// over the four queries: patch 1: 0, patch 2: 1, patch 3: 1, patch 4: 2; the means a quarter of those.
ProbeResult meanCapture()
{
    ProbeResult c = clsCapture();
    c.tokens = {"p1", "p2", "p3", "p4"};
    const Map h{0, 0, 0, 1, /**/ 0, 1, 0, 0, /**/ 0, 0, 1, 0, /**/ 0, 0, 0, 1};
    c.attention = {{insighttest::rowsOf(h, 4)}};
    return c;
}

std::shared_ptr<InsightHistory> historyWith(const ProbeResult& capture)
{
    auto history = std::make_shared<InsightHistory>();
    TrainingSnapshot state;
    state.step = capture.step;
    history->addState(state);
    history->addCapture(capture);
    return history;
}

void showIn(InsightPage& page, std::shared_ptr<InsightHistory> history, const QString& probe)
{
    page.setSources({QStringLiteral("a"), QStringLiteral("Run A"), std::move(history)}, {});
    page.setStep(-1);
    page.setProbe(probe);
    page.refresh();
}

QColor pixelAt(const QImage& image, const QPointF& point) { return image.pixelColor(point.toPoint()); }

// Finds the visible ImageProbeDialog and lets `answer` fill it in (polling until it is open).
void answerImageDialog(std::function<void(ImageProbeDialog&)> answer, int triesLeft = 200)
{
    QTimer::singleShot(10, [answer, triesLeft] {
        for (QWidget* widget : QApplication::topLevelWidgets())
            if (auto* dialog = qobject_cast<ImageProbeDialog*>(widget); dialog != nullptr && dialog->isVisible()) {
                answer(*dialog);
                dialog->accept();
                return;
            }
        if (triesLeft > 0)
            answerImageDialog(answer, triesLeft - 1);
        else if (QWidget* modal = QApplication::activeModalWidget())
            modal->close();  // never leave the test hanging in exec()
    });
}

}  // namespace

class TestImageViews : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void captureImageFromPixelsOrNothing();
    void patchWeightsComeFromClsOrTheMeanOverQueries();
    void patchWeightsOfMismatchedMapsAreEmpty();
    void overlayDrawsEachPatchWeightInItsCellOverThePicture();
    void attentionViewSaysWhatItDrawsOverAnImage();
    void meanOverHeadsDrawsEveryLayerOverThePicture();
    void headCaptionsSayWhatEachMapIs();
    void textProbeStillDrawsTheTokenGrid();
    void imageGridExportsWhole();
    void expertsGridTintsAPatchWithItsExpertAndMarksADroppedOne();
    void expertsViewShowsTheImageGridWithALegend();
    void probeDialogGivesValidationOrAPath();
    void probeNamesAreReadable();
    void insightsAddsAnImageProbeThroughTheDialog();
};

void TestImageViews::captureImageFromPixelsOrNothing()
{
    // 2 x 3 RGB, row-major HWC: the pixel at (x 2, y 1) is the last three bytes.
    std::vector<quint8> rgb(2 * 3 * 3);
    for (std::size_t i = 0; i < rgb.size(); ++i)
        rgb[i] = static_cast<quint8>(10 * i);
    const ProbeImage c = imageOf(3, 2, 3, rgb, 1, 3);
    QVERIFY(validProbeImage(c));
    const QImage picture = probeQImage(c);
    QCOMPARE(picture.size(), QSize(3, 2));
    QCOMPARE(picture.pixelColor(0, 0), QColor(0, 10, 20));
    QCOMPARE(picture.pixelColor(2, 1), QColor(150, 160, 170));
    // Grey: one byte a pixel.
    const std::vector<quint8> grey{0, 255, 128, 64};
    const QImage g = probeQImage(imageOf(2, 2, 1, grey, 2, 2));
    QCOMPARE(g.pixelColor(1, 0), QColor(255, 255, 255));
    QCOMPARE(g.pixelColor(0, 1), QColor(128, 128, 128));
    // Damaged: too few bytes, two channels, a grid that does not divide the image.
    const std::vector<quint8> short17(rgb.begin(), rgb.end() - 1);
    QVERIFY(probeQImage(imageOf(3, 2, 3, short17, 1, 3)).isNull());
    QVERIFY(!validProbeImage(imageOf(3, 2, 3, short17, 1, 3)));
    QVERIFY(probeQImage(imageOf(3, 3, 2, rgb, 1, 3)).isNull());
    QVERIFY(probeQImage(imageOf(3, 2, 3, rgb, 2, 2)).isNull());
    QVERIFY(probeQImage(imageOf(0, 0, 3, {}, 0, 0)).isNull());
    QVERIFY(probeQImage(ProbeImage()).isNull());  // a text probe's
}

void TestImageViews::patchWeightsComeFromClsOrTheMeanOverQueries()
{
    const ProbeResult cls = clsCapture();
    QVERIFY(probeHasImage(cls));
    QCOMPARE(probePatchCount(cls), 4);
    QCOMPARE(patchSource(cls), PatchSource::FromCls);
    QCOMPARE(patchAttention(cls, 0, 0), (Map{0, 0, 0, 1}));
    QCOMPARE(patchAttention(cls, 0, 1), (Map{0.5f, 0.5f, 0, 0}));

    const ProbeResult mean = meanCapture();
    QCOMPARE(patchSource(mean), PatchSource::MeanOverPatches);
    QCOMPARE(patchAttention(mean, 0, 0), (Map{0, 0.25f, 0.25f, 0.5f}));
    QVERIFY(patchSourceText(PatchSource::FromCls).contains(QStringLiteral("from CLS")));
    QVERIFY(patchSourceText(PatchSource::MeanOverPatches).contains(QStringLiteral("mean attention over patches")));
}

void TestImageViews::patchWeightsOfMismatchedMapsAreEmpty()
{
    ProbeResult c = clsCapture();
    c.attention[0][1].resize(4);  // 4 rows of 5: not 5 x 5
    QVERIFY(patchAttention(c, 0, 1).isEmpty());
    QVERIFY(patchAttention(c, 1, 0).isEmpty());   // no such layer
    QVERIFY(patchAttention(c, 0, 2).isEmpty());   // no such head
    PatchAttentionGrid grid;
    grid.setCapture(&c, 0);
    QCOMPARE(grid.heads(), 0);  // every head or none: nothing guessed

    ProbeResult text = clsCapture();
    text.image = ProbeImage();  // a text probe
    QVERIFY(!probeHasImage(text));
    QCOMPARE(probePatchCount(text), 0);
    QVERIFY(patchAttention(text, 0, 0).isEmpty());
    QVERIFY(patchExperts(text, 0).isEmpty());
}

void TestImageViews::overlayDrawsEachPatchWeightInItsCellOverThePicture()
{
    const ProbeResult c = clsCapture();
    PatchAttentionGrid grid;
    grid.setCapture(&c, 0);
    grid.setCellSize(160);
    grid.resize(400, grid.heightFor(400));
    QCOMPARE(grid.heads(), 2);
    QCOMPARE(grid.maxWeight(), 1.0f);
    const QImage shot = grid.grab().toImage();
    const double a = PatchAttentionGrid::kOpacity;
    // Head 1: all weight on patch 4 (bottom right), none elsewhere.
    QVERIFY(close(pixelAt(shot, grid.patchRect(0, 1, 1).center()), blend(kHigh, kPatchColours[3], a)));
    QVERIFY(close(pixelAt(shot, grid.patchRect(0, 0, 0).center()), blend(kLow, kPatchColours[0], a)));
    QVERIFY(close(pixelAt(shot, grid.patchRect(0, 0, 1).center()), blend(kLow, kPatchColours[1], a)));
    // Head 2: patches 1 and 2 at half the layer's largest weight: the same colour, over different pixels.
    const QColor half1 = pixelAt(shot, grid.patchRect(1, 0, 0).center());
    const QColor half2 = pixelAt(shot, grid.patchRect(1, 0, 1).center());
    QVERIFY(close(half1, blend(grid.weightColor(1, 0, 0), kPatchColours[0], a)));
    QVERIFY(close(half2, blend(grid.weightColor(1, 0, 1), kPatchColours[1], a)));
    QCOMPARE(grid.weightColor(1, 0, 0), grid.weightColor(1, 0, 1));
    QVERIFY(grid.weightColor(1, 0, 0) != kLow && grid.weightColor(1, 0, 0) != kHigh);
    QVERIFY(close(pixelAt(shot, grid.patchRect(1, 1, 0).center()), blend(kLow, kPatchColours[2], a)));
    // Each head its own range: head 2's largest weight (0.5) is its top.
    grid.setScalePerHead(true);
    grid.setCapture(&c, 0);
    QVERIFY(close(grid.weightColor(1, 0, 0), kHigh, 0));
}

void TestImageViews::attentionViewSaysWhatItDrawsOverAnImage()
{
    AttentionView view;
    view.resize(1000, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    showIn(view, historyWith(clsCapture()), QStringLiteral("validation:3"));
    AttentionPane* pane = view.primaryPane();
    QVERIFY(pane->showsPatches());
    QCOMPARE(pane->patches()->heads(), 2);
    QVERIFY2(pane->header()->text().contains(QStringLiteral("attention from CLS")), qPrintable(pane->header()->text()));
    QVERIFY(pane->header()->text().contains(QStringLiteral("2 × 2 patches")));
    // Clicking a head enlarges its whole token map, as in the token grid.
    QTest::mouseClick(pane->patches(), Qt::LeftButton, {}, pane->patches()->tileRect(1).center().toPoint());
    QCOMPARE(view.mode(), AttentionPane::Mode::Head);
    QCOMPARE(view.head(), 1);

    AttentionView mean;
    mean.resize(1000, 600);
    mean.show();
    QVERIFY(QTest::qWaitForWindowExposed(&mean));
    showIn(mean, historyWith(meanCapture()), QStringLiteral("validation:3"));
    QVERIFY(mean.primaryPane()->showsPatches());
    QVERIFY(mean.primaryPane()->header()->text().contains(QStringLiteral("mean attention over patches")));
    QVERIFY(!mean.primaryPane()->header()->text().contains(QStringLiteral("from CLS")));
}

void TestImageViews::meanOverHeadsDrawsEveryLayerOverThePicture()
{
    // Layer 1 as clsCapture; layer 2: both heads' CLS rows on patch 3 only.
    ProbeResult c = clsCapture();
    Map onThree(25, 0.2f);
    const Map row{0, 0, 0, 1, 0};
    for (int k = 0; k < 5; ++k)
        onThree[k] = row[k];
    c.attention.push_back({insighttest::rowsOf(onThree, 5), insighttest::rowsOf(onThree, 5)});

    AttentionView view;
    view.resize(1000, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    showIn(view, historyWith(c), QStringLiteral("validation:3"));
    view.setMode(AttentionPane::Mode::Mean);
    AttentionPane* pane = view.primaryPane();
    QVERIFY(pane->showsPatches());
    PatchAttentionGrid* grid = pane->patches();
    QVERIFY(grid->showsLayers());
    QCOMPARE(grid->tiles(), 2);
    QCOMPARE(grid->title(0), QStringLiteral("layer 1 · mean over 2 heads"));
    // Layer 1: head 1 puts 1 on patch 4, head 2 puts 0.5 on patches 1 and 2.
    QCOMPARE(grid->weight(0, 0, 0), 0.25f);
    QCOMPARE(grid->weight(0, 0, 1), 0.25f);
    QCOMPARE(grid->weight(0, 1, 0), 0.0f);
    QCOMPARE(grid->weight(0, 1, 1), 0.5f);
    QCOMPARE(grid->weight(1, 1, 0), 1.0f);
    QCOMPARE(grid->maxWeight(), 1.0f);
    const QString header = pane->header()->text();
    QVERIFY2(header.contains(QStringLiteral("2 layers")) && header.contains(QStringLiteral("mean over heads")),
             qPrintable(header));
    // Clicking layer 2's tile opens its heads.
    QTest::mouseClick(grid, Qt::LeftButton, {}, grid->tileRect(1).center().toPoint());
    QCOMPARE(view.mode(), AttentionPane::Mode::Grid);
    QCOMPARE(view.layer(), 1);
    QVERIFY(!grid->showsLayers());
    QCOMPARE(grid->title(0), QStringLiteral("head 1"));
    QCOMPARE(grid->weight(0, 1, 0), 1.0f);
}

void TestImageViews::headCaptionsSayWhatEachMapIs()
{
    auto history = historyWith(clsCapture());
    history->setHeadCaptions({{QStringLiteral("full"), QStringLiteral("exact")},
                              {QStringLiteral("linformer"), QStringLiteral("implied")}});
    AttentionView view;
    view.resize(1200, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    showIn(view, history, QStringLiteral("validation:3"));
    PatchAttentionGrid* grid = view.primaryPane()->patches();
    QCOMPARE(grid->title(0), QStringLiteral("head 1 · full (exact)"));
    QCOMPARE(grid->title(1), QStringLiteral("head 2 · linformer (implied)"));
    QVERIFY(view.mapKinds()->isVisibleTo(&view));
    QVERIFY(view.mapKinds()->text().startsWith(QStringLiteral("implied:")));

    // A text probe's grid carries the same captions; a multi-path model repeats them per path.
    ProbeResult text = clsCapture();
    text.image = ProbeImage();
    HeadGrid heads;
    heads.setCaptions(history->headCaptions());
    heads.setCellSize(400);
    heads.setCapture(&text, 0);
    QCOMPARE(heads.headTitle(1), QStringLiteral("head 2 · linformer (implied)"));
    QCOMPARE(headCaptionText(history->headCaptions(), 3, 4, 2), QStringLiteral("linformer (implied)"));
    QCOMPARE(headCaptionText({}, 0, 2, 1), QString());

    // Only exact maps: nothing to explain.
    history->setHeadCaptions({{QStringLiteral("full"), QStringLiteral("exact")},
                              {QStringLiteral("local"), QStringLiteral("sparse pattern")}});
    view.refresh();
    QVERIFY(view.mapKinds()->text().startsWith(QStringLiteral("sparse pattern:")));
    QVERIFY(!view.mapKinds()->text().contains(QStringLiteral("implied")));
    history->setHeadCaptions({});
    view.refresh();
    QVERIFY(!view.mapKinds()->isVisibleTo(&view));
    QCOMPARE(view.primaryPane()->patches()->title(1), QStringLiteral("head 2"));
}

void TestImageViews::textProbeStillDrawsTheTokenGrid()
{
    ProbeResult text = clsCapture();
    text.image = ProbeImage();
    text.text = "hello";
    AttentionView view;
    view.resize(1000, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    showIn(view, historyWith(text), QStringLiteral("hello"));
    AttentionPane* pane = view.primaryPane();
    QVERIFY(!pane->showsPatches());
    QVERIFY(pane->gridArea()->isVisibleTo(pane));
    QCOMPARE(pane->grid()->heads(), 2);
    QCOMPARE(pane->grid()->tokens(), 5);
    QCOMPARE(pane->grid()->colorAt(0, 0, 4), kHigh);  // CLS -> p4 = 1, the layer's largest
    QCOMPARE(pane->grid()->colorAt(0, 0, 0), kLow);
    QVERIFY(!pane->header()->text().contains(QStringLiteral("CLS")));
}

void TestImageViews::imageGridExportsWhole()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    AttentionView view;
    view.resize(600, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    showIn(view, historyWith(clsCapture()), QStringLiteral("validation:3"));
    view.exportArea();
    QWidget* sheet = nullptr;  // the last export's, once the PNG is written
    for (const QString& name : {QStringLiteral("grid.svg"), QStringLiteral("grid.pdf"), QStringLiteral("grid.png")}) {
        QString error;
        QVERIFY2(viewexport::exportWidgetImage(view.exportArea(), dir.filePath(name), view.exportTitle(), &error),
                 qPrintable(error));
        QVERIFY(QFileInfo(dir.filePath(name)).size() > 0);
    }
    // The PNG (exported last) holds the overlay: head 1's patch 4 at the top colour over its grey.
    sheet = view.exportArea();
    const QList<PatchAttentionGrid*> grids = sheet->findChildren<PatchAttentionGrid*>();
    QCOMPARE(grids.size(), 1);
    QCOMPARE(grids.front()->heads(), 2);
    QVERIFY(grids.front()->cellSize() >= 96);
    const QImage png(dir.filePath(QStringLiteral("grid.png")));
    QVERIFY(!png.isNull());
    QCOMPARE(png.size(), sheet->size() * 2);
    PatchAttentionGrid* grid = grids.front();
    const QPointF centre = grid->mapTo(sheet, grid->patchRect(0, 1, 1).center().toPoint());
    QVERIFY(close(png.pixelColor((centre * 2).toPoint()), blend(kHigh, kPatchColours[3], PatchAttentionGrid::kOpacity)));
}

void TestImageViews::expertsGridTintsAPatchWithItsExpertAndMarksADroppedOne()
{
    ProbeResult c = clsCapture();
    // Block 1: CLS -> 1, p1 -> expert 1, p2 -> expert 2, p3 -> expert 3, p4 dropped (first choice -1).
    // Block 2: every patch to expert 2.
    c.experts = {{{0}, {0}, {1}, {2}, {-1}}, {{1}, {1}, {1}, {1}, {1}}};
    PatchExpertGrid grid;
    grid.setCapture(&c);
    grid.setCellSize(160);
    grid.resize(400, grid.heightFor(400));
    QCOMPARE(grid.blocks(), 2);
    QCOMPARE(grid.expertAt(0, 1, 1), -1);
    const QImage shot = grid.grab().toImage();
    const double a = PatchExpertGrid::kOpacity;
    QVERIFY(close(pixelAt(shot, grid.patchRect(0, 0, 0).center()), blend(kBlue, kPatchColours[0], a)));
    QVERIFY(close(pixelAt(shot, grid.patchRect(0, 0, 1).center()), blend(kOrange, kPatchColours[1], a)));
    QVERIFY(close(pixelAt(shot, grid.patchRect(0, 1, 0).center()), blend(kGreen, kPatchColours[2], a)));
    QVERIFY(close(pixelAt(shot, grid.patchRect(1, 1, 1).center()), blend(kOrange, kPatchColours[3], a)));
    // The dropped patch: crossed (its centre in the text colour), grey beside the cross.
    const QRectF dropped = grid.patchRect(0, 1, 1);
    QVERIFY(close(pixelAt(shot, dropped.center()), grid.palette().color(QPalette::Text), 40));
    const QPointF besideCross(dropped.center().x(), dropped.top() + dropped.height() * 0.3);
    QVERIFY(close(pixelAt(shot, besideCross), blend(PatchExpertGrid::kDroppedFill, kPatchColours[3], a)));

    // Routing that does not cover the tokens draws nothing rather than a guess.
    c.experts[1].pop_back();
    grid.setCapture(&c);
    QCOMPARE(grid.blocks(), 0);
}

void TestImageViews::expertsViewShowsTheImageGridWithALegend()
{
    ProbeResult c = clsCapture();
    c.experts = {{{0}, {0}, {1}, {2}, {-1}}};
    auto history = historyWith(c);
    TrainingSnapshot state;
    state.step = c.step;
    RoutingStats load;
    load.block = 0;
    load.tokensPerExpert = {2, 1, 1};
    load.droppedPercentPerChoice = {20.0};
    load.loadVsFair = {1.2, 0.6, 0.6};
    state.routing = {load};
    history->addState(state);
    ExpertsView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    showIn(view, history, QStringLiteral("validation:3"));
    QVERIFY(view.showsPatches());
    QCOMPARE(view.patchRouting()->blocks(), 1);
    const QString legend = view.patchLegend()->text();
    QVERIFY(legend.contains(QStringLiteral("expert 3")));
    QVERIFY(legend.contains(QStringLiteral("dropped")));
    QVERIFY(legend.contains(kGreen.name()));

    // A text probe keeps the token matrix.
    ProbeResult text = c;
    text.image = ProbeImage();
    text.text = "hello";
    history->addCapture(text);
    showIn(view, history, QStringLiteral("hello"));
    QVERIFY(!view.showsPatches());
}

void TestImageViews::probeDialogGivesValidationOrAPath()
{
    ImageProbeDialog dialog;
    QVERIFY(dialog.validationChoice()->isChecked());
    dialog.example()->setValue(7);
    QCOMPARE(dialog.probe(), QStringLiteral("validation:7"));
    dialog.path()->setText(QStringLiteral("/data/cats/tabby.png"));
    QVERIFY(dialog.fileChoice()->isChecked());  // typing a path chooses the file
    QCOMPARE(dialog.probe(), QStringLiteral("/data/cats/tabby.png"));
    dialog.example()->setValue(2);
    QCOMPARE(dialog.probe(), QStringLiteral("validation:2"));
}

void TestImageViews::probeNamesAreReadable()
{
    QCOMPARE(imageProbeName(QStringLiteral("validation:12")), QStringLiteral("validation #12"));
    QCOMPARE(imageProbeName(QStringLiteral("/home/me/pics/Dog.JPG")), QStringLiteral("Dog.JPG"));
    QCOMPARE(imageProbeName(QStringLiteral("cat.jpeg")), QStringLiteral("cat.jpeg"));
    QCOMPARE(imageProbeName(QStringLiteral("the cat sat")), QStringLiteral("the cat sat"));
    QCOMPARE(imageProbeName(QStringLiteral("validation:x")), QStringLiteral("validation:x"));
}

void TestImageViews::insightsAddsAnImageProbeThroughTheDialog()
{
    auto history = historyWith(clsCapture());
    history->setImageInput(true);
    InsightsView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), history);
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QComboBox* box = nullptr;
    for (QComboBox* b : view.findChildren<QComboBox*>())
        if (b->accessibleName() == QStringLiteral("Probe text"))
            box = b;
    QVERIFY(box != nullptr);
    QCOMPARE(box->currentText(), QStringLiteral("validation #3"));  // the captured probe, by name
    QCOMPARE(view.probe(), QStringLiteral("validation:3"));

    QSignalSpy requested(&view, &InsightsView::probeRequested);
    answerImageDialog([](ImageProbeDialog& d) { d.example()->setValue(5); });
    view.askForProbe();
    QCOMPARE(requested.size(), 1);
    QCOMPARE(requested.front().at(1).toString(), QStringLiteral("validation:5"));
    QCOMPARE(view.probe(), QStringLiteral("validation:5"));
    QCOMPARE(box->currentText(), QStringLiteral("validation #5"));

    answerImageDialog([](ImageProbeDialog& d) { d.path()->setText(QStringLiteral("/tmp/pics/dog.png")); });
    view.askForProbe();
    QCOMPARE(requested.size(), 2);
    QCOMPARE(requested.back().at(1).toString(), QStringLiteral("/tmp/pics/dog.png"));
    QCOMPARE(box->currentText(), QStringLiteral("dog.png"));
}

QTEST_MAIN(TestImageViews)
#include "tst_imageviews.moc"
