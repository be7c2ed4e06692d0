// Tests the drawing widgets of the insight pages: MatrixView, HeadGrid, TokenFlowView and PredictionBars, on constructed and on damaged data.
// Every expected value below is worked out by hand from the constructed data.
#include "InsightTestData.h"

using namespace widelab;
using namespace widelab::insighttest;

class TestHeatmaps : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matrixSequentialColoursSpanTheRange();
    void matrixCellGeometryAndReadout();
    void matrixCategoricalAndDivergingColours();
    void headGridHitsReadoutsAndClicks();
    void headGridColourRangeOfTheLayerOrEachHead();
    void tokenFlowLinesFollowTheFocus();
    void predictionBarsSortAndLabel();
    void matrixRangesIgnoreNonFiniteValuesAndMismatchesExplainThemselves();
    void predictionBarsLeaveOutNaN();
    void predictionBarsMarkTheTrueClass();
};

void TestHeatmaps::matrixSequentialColoursSpanTheRange()
{
    MatrixView view;
    view.resize(500, 400);
    MatrixView::Matrix m;
    m.rows = 2;
    m.cols = 3;
    m.values = {0, 1, 2, 3, 4, 5};  // low = high = 0: the data's min..max, 0..5
    view.setMatrix(m);
    QCOMPARE(view.cellColor(1, 2), QColor(colorscale::sequential(1.0)));  // the max, 5
    QCOMPARE(view.cellColor(0, 0), QColor(colorscale::sequential(0.0)));  // the min, 0
    QCOMPARE(view.cellColor(0, 1), QColor(colorscale::sequential(0.2)));  // 1 of 0..5
    QCOMPARE(view.cellColor(1, 0), QColor(colorscale::sequential(0.6)));  // 3 of 0..5
    // The ramp's ends are the viridis stops.
    QCOMPARE(colorscale::sequential(0.0), qRgb(68, 1, 84));
    QCOMPARE(colorscale::sequential(1.0), qRgb(253, 231, 37));

    // A fixed range: 0..10, so 5 is the middle and 0 the bottom.
    m.low = 0;
    m.high = 10;
    view.setMatrix(m);
    QCOMPARE(view.cellColor(1, 2), QColor(colorscale::sequential(0.5)));
    QCOMPARE(view.cellColor(0, 0), QColor(colorscale::sequential(0.0)));
    QCOMPARE(view.scaleLowText(), QStringLiteral("0.000"));
    QCOMPARE(view.scaleHighText(), QStringLiteral("10.000"));

    // Equal values: every cell the bottom colour, no division by zero.
    m.low = m.high = 0;
    m.values = {2, 2, 2, 2, 2, 2};
    view.setMatrix(m);
    QCOMPARE(view.cellColor(1, 1), QColor(colorscale::sequential(0.0)));

    view.clear(QStringLiteral("nothing here"));
    QCOMPARE(view.emptyText(), QStringLiteral("nothing here"));
    QVERIFY(!view.cellColor(0, 0).isValid());
    QCOMPARE(view.cellAt(QPointF(250, 200)), QPoint(-1, -1));
}

void TestHeatmaps::matrixCellGeometryAndReadout()
{
    MatrixView view;
    view.resize(500, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    MatrixView::Matrix m;
    m.rows = 2;
    m.cols = 3;
    m.values = {0, 1, 2, 3, 4, 5};
    m.rowLabels = {QStringLiteral("r0"), QStringLiteral("r1")};
    m.columnLabels = {QStringLiteral("c0"), QStringLiteral("c1"), QStringLiteral("c2")};
    m.rowTitle = QStringLiteral("query");
    m.columnTitle = QStringLiteral("key");
    m.valueName = QStringLiteral("weight");
    view.setMatrix(m);

    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) {
            const QRectF cell = view.cellRect(r, c);
            QVERIFY(cell.width() > 4 && cell.height() > 4);
            QVERIFY(view.rect().contains(cell.toRect()));
            QCOMPARE(view.cellAt(cell.center()), QPoint(c, r));
        }
    // Cells tile: the next column starts where this one ends, rows stack downwards.
    QVERIFY(near(view.cellRect(0, 1).left(), view.cellRect(0, 0).right()));
    QVERIFY(near(view.cellRect(1, 0).top(), view.cellRect(0, 0).bottom()));
    QCOMPARE(view.cellAt(QPointF(1, 1)), QPoint(-1, -1));  // the margin

    const QString text = view.readout(1, 2);
    QVERIFY2(text.contains(QStringLiteral("query r1")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("key c2")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("weight 5.000")), qPrintable(text));
    QVERIFY(view.readout(2, 0).isEmpty());  // outside

    // Scaled values with a suffix: 0.25 reads 25.0%.
    m.values = {0.25f, 0.5f, 0.0f, 0.0f, 0.125f, 1.0f};
    m.valueScale = 100;
    m.valueSuffix = QStringLiteral("%");
    m.decimals = 1;
    view.setMatrix(m);
    QVERIFY2(view.readout(0, 0).endsWith(QStringLiteral("25.0%")), qPrintable(view.readout(0, 0)));
    QVERIFY2(view.readout(1, 1).endsWith(QStringLiteral("12.5%")), qPrintable(view.readout(1, 1)));

    // A custom read-out replaces the default.
    view.setReadout([](int row, int col) { return QStringLiteral("cell %1/%2").arg(row).arg(col); });
    QCOMPARE(view.readout(1, 0), QStringLiteral("cell 1/0"));

    // A click on a cell names it (row, column).
    QSignalSpy clicked(&view, &MatrixView::cellClicked);
    QTest::mouseClick(&view, Qt::LeftButton, {}, view.cellRect(1, 0).center().toPoint());
    QCOMPARE(clicked.size(), 1);
    QCOMPARE(clicked.front().at(0).toInt(), 1);
    QCOMPARE(clicked.front().at(1).toInt(), 0);
}

void TestHeatmaps::matrixCategoricalAndDivergingColours()
{
    MatrixView view;
    view.resize(400, 300);
    MatrixView::Matrix m;
    m.scale = MatrixView::Scale::Categorical;
    m.rows = 1;
    m.cols = 4;
    m.categories = {0, 2, -1, 9};
    view.setMatrix(m);
    QCOMPARE(view.cellColor(0, 0).rgb(), colorscale::categorical(0).rgb());
    QCOMPARE(view.cellColor(0, 1).rgb(), colorscale::categorical(2).rgb());
    QCOMPARE(view.cellColor(0, 3).rgb(), colorscale::categorical(9).rgb());
    for (int category = 0; category < 12; ++category)  // -1 (none) is none of the categories' colours
        QVERIFY(view.cellColor(0, 2).rgb() != colorscale::categorical(category).rgb());
    // Categories past the eight base colours are variants, not repeats.
    QVERIFY(colorscale::categorical(9).rgb() != colorscale::categorical(1).rgb());
    QVERIFY(colorscale::categorical(0).rgb() != colorscale::categorical(1).rgb());

    // Diverging around 1: |value - 1| at most 3, so -2 is the blue end, 1 the neutral middle.
    MatrixView::Matrix d;
    d.scale = MatrixView::Scale::Diverging;
    d.rows = 1;
    d.cols = 3;
    d.center = 1;
    d.values = {-2.0f, 1.0f, 2.5f};
    view.setMatrix(d);
    QCOMPARE(view.cellColor(0, 1), QColor(colorscale::diverging(0)));
    QCOMPARE(view.cellColor(0, 0), QColor(colorscale::diverging(-1)));
    QCOMPARE(view.cellColor(0, 2), QColor(colorscale::diverging(0.5)));  // (2.5 - 1) / 3
    QCOMPARE(colorscale::diverging(0), qRgb(236, 236, 236));
    QCOMPARE(view.scaleLowText(), QStringLiteral("-2.000"));
    QCOMPARE(view.scaleHighText(), QStringLiteral("4.000"));

    // A fixed half range of 6: 2.5 is a quarter of the way to orange.
    d.halfRange = 6;
    view.setMatrix(d);
    QCOMPARE(view.cellColor(0, 1), QColor(colorscale::diverging(0)));
    QCOMPARE(view.cellColor(0, 2), QColor(colorscale::diverging(0.25)));
    QCOMPARE(view.cellColor(0, 0), QColor(colorscale::diverging(-0.5)));
}

void TestHeatmaps::headGridHitsReadoutsAndClicks()
{
    const ProbeResult capture = shiftedHeads();
    HeadGrid grid;
    grid.setCapture(&capture, 0);
    QCOMPARE(grid.heads(), 3);
    QCOMPARE(grid.tokens(), 4);
    QCOMPARE(grid.maxWeight(), 1.0f);
    grid.setCellSize(80);  // 20 pixels a token: labels shown
    QCOMPARE(grid.cellSize(), 80);
    QVERIFY(grid.showsLabels());
    // Two 80-pixel maps with a 10-pixel gap need 170 pixels plus the label gutter (at most 90);
    // three would need 260 plus the gutter (at least 4): 262 fits two per row whatever the gutter.
    grid.resize(262, std::max(400, grid.minimumHeight()));
    grid.show();
    QVERIFY(QTest::qWaitForWindowExposed(&grid));
    QCOMPARE(grid.columns(), 2);

    const QRectF first = grid.mapRect(0), second = grid.mapRect(1), third = grid.mapRect(2);
    QCOMPARE(first.size(), QSizeF(80, 80));
    QVERIFY(near(second.top(), first.top()));
    QVERIFY(second.left() >= first.right());
    QVERIFY(third.top() > first.bottom());  // the third head wraps to a second row
    QVERIFY(near(third.left(), first.left()));
    QVERIFY(grid.mapRect(3).isNull());
    QVERIFY(grid.height() >= third.bottom());

    const QStringList tokens = probeTokens(capture);
    for (int h = 0; h < 3; ++h) {
        const QRectF r = grid.mapRect(h);
        for (int q = 0; q < 4; ++q)
            for (int k = 0; k < 4; ++k) {
                const QPointF centre(r.left() + (k + 0.5) * r.width() / 4, r.top() + (q + 0.5) * r.height() / 4);
                const HeadGrid::Hit hit = grid.hitAt(centre);
                QCOMPARE(hit.head, h);
                QCOMPARE(hit.query, q);
                QCOMPARE(hit.key, k);
                if (k == (q + h) % 4) {
                    const QString text = grid.readout(hit);
                    QVERIFY2(text.contains(tokens[q]) && text.contains(tokens[k])
                                 && text.contains(QStringLiteral("1.000")),
                             qPrintable(text));
                }
            }
    }
    const QString zero = grid.readout({2, 0, 0});  // head 3 sends query 0 to key 2, not 0
    QVERIFY2(zero.contains(QStringLiteral("0.000")), qPrintable(zero));
    if (second.left() - first.right() > 2)  // the gap between maps is no map
        QVERIFY(!grid.hitAt(QPointF((first.right() + second.left()) / 2, first.center().y())).valid());

    QSignalSpy clicked(&grid, &HeadGrid::headClicked);
    QTest::mouseClick(&grid, Qt::LeftButton, {}, grid.mapRect(2).center().toPoint());
    QTest::mouseClick(&grid, Qt::LeftButton, {}, grid.mapRect(1).center().toPoint());
    QTest::mouseClick(&grid, Qt::LeftButton, {}, QPoint(1, 1));  // not on a map
    QCOMPARE(clicked.size(), 2);
    QCOMPARE(clicked[0].at(0).toInt(), 2);
    QCOMPARE(clicked[1].at(0).toInt(), 1);

    // A wide grid: all three in one row.
    grid.resize(1000, grid.height());
    QCOMPARE(grid.columns(), 3);
    QVERIFY(near(grid.mapRect(2).top(), grid.mapRect(0).top()));

    grid.setCapture(nullptr, 0);
    QCOMPARE(grid.heads(), 0);
    QVERIFY(!grid.hitAt(first.center()).valid());
}

// Head 1 peaks at 1.0, head 2 at 0.25: in one range for the layer head 2's
// peak is a quarter of the way up the scale; in each head's own range it is at the top.
void TestHeatmaps::headGridColourRangeOfTheLayerOrEachHead()
{
    const Map strong{1.0f, 0.0f, 0.0f, 1.0f};
    const Map weak{0.25f, 0.0f, 0.0f, 0.25f};
    const ProbeResult capture = captureOf(5, QStringLiteral("a b"), {QStringLiteral("a"), QStringLiteral("b")},
                                           {{strong, weak}});
    for (const bool perHead : {false, true}) {
        HeadGrid grid;
        grid.setScalePerHead(perHead);
        grid.setCapture(&capture, 0);
        grid.setCellSize(80);
        grid.resize(400, std::max(300, grid.minimumHeight()));
        const QImage image = grid.grab().toImage();
        auto colourAt = [&](int head, int query, int key) {
            const QRectF r = grid.mapRect(head);
            const QPointF centre(r.left() + (key + 0.5) * r.width() / 2, r.top() + (query + 0.5) * r.height() / 2);
            return QColor(image.pixel(centre.toPoint()));
        };
        QCOMPARE(colourAt(0, 0, 0), QColor(colorscale::sequential(1.0)));
        QCOMPARE(colourAt(0, 0, 1), QColor(colorscale::sequential(0.0)));
        QCOMPARE(colourAt(1, 1, 1), QColor(colorscale::sequential(perHead ? 1.0 : 0.25)));
        QCOMPARE(colourAt(1, 1, 0), QColor(colorscale::sequential(0.0)));
    }
}

void TestHeatmaps::tokenFlowLinesFollowTheFocus()
{
    const Map head0{1.0f, 0.0f, 0.0f, /**/ 0.005f, 0.995f, 0.0f, /**/ 0.2f, 0.3f, 0.5f};
    const Map head1{0.6f, 0.4f, 0.0f, /**/ 0.5f, 0.25f, 0.25f, /**/ 0.0f, 0.0f, 1.0f};
    const ProbeResult capture = captureOf(
        1, QStringLiteral("a b c"), {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")}, {{head0, head1}});
    TokenFlowView view;
    view.resize(360, 480);
    view.setCapture(&capture, 0);

    using Key = std::tuple<int, int, int>;  // query, key, head
    auto linesOf = [&view] {
        std::set<Key> keys;
        for (const TokenFlowView::Line& line : view.lines())
            keys.insert({line.query, line.key, line.head});
        return keys;
    };

    // Query 1: head 1's 0.005 to key 0 and head 1's 0 are below 0.01.
    view.setFocusToken(1, true);
    QCOMPARE(view.focusToken(), 1);
    QVERIFY(view.focusIsQuery());
    QCOMPARE(view.lines().size(), 4);
    QCOMPARE(linesOf(), (std::set<Key>{{1, 1, 0}, {1, 0, 1}, {1, 1, 1}, {1, 2, 1}}));
    for (const TokenFlowView::Line& line : view.lines())
        QCOMPARE(line.weight, capture.attention[0][line.head][line.query][line.key]);

    // Query 2: head 0's three weights, head 1's one.
    view.setFocusToken(2, true);
    QCOMPARE(linesOf(), (std::set<Key>{{2, 0, 0}, {2, 1, 0}, {2, 2, 0}, {2, 2, 1}}));

    // Key 0 (right side): who looks at token 0.
    view.setFocusToken(0, false);
    QVERIFY(!view.focusIsQuery());
    QCOMPARE(linesOf(), (std::set<Key>{{0, 0, 0}, {2, 0, 0}, {0, 0, 1}, {1, 0, 1}}));

    // No focus: the mean over heads, every pair but (0, 2), whose mean is 0.
    view.setFocusToken(-1, true);
    QCOMPARE(view.lines().size(), 8);
    for (const TokenFlowView::Line& line : view.lines()) {
        QCOMPARE(line.head, -1);
        QVERIFY(!(line.query == 0 && line.key == 2));
        QVERIFY(near(line.weight, (head0[line.query * 3 + line.key] + head1[line.query * 3 + line.key]) / 2));
    }

    // A token's rectangle is where tokenAt finds it, on its side.
    bool left = true;
    QCOMPARE(view.tokenAt(view.tokenRect(2, false).center(), &left), 2);
    QVERIFY(!left);
    QCOMPARE(view.tokenAt(view.tokenRect(1, true).center(), &left), 1);
    QVERIFY(left);
    QVERIFY(view.tokenRect(1, true).top() > view.tokenRect(0, true).top());

    // An out-of-range focus is no focus.
    view.setFocusToken(7, true);
    QCOMPARE(view.focusToken(), -1);
}

void TestHeatmaps::predictionBarsSortAndLabel()
{
    PredictionBars bars;
    bars.setPrediction({0.1f, 0.6f, 0.3f}, {QStringLiteral("a"), QStringLiteral("b")}, QStringLiteral("Prediction"));
    const auto shown = bars.shown();
    QCOMPARE(shown.size(), 3);
    QCOMPARE(shown[0], (QPair<QString, float>(QStringLiteral("b"), 0.6f)));
    QCOMPARE(shown[1], (QPair<QString, float>(QStringLiteral("2"), 0.3f)));  // unlabelled: its index
    QCOMPARE(shown[2], (QPair<QString, float>(QStringLiteral("a"), 0.1f)));

    QVector<float> many(15);
    for (int i = 0; i < 15; ++i)
        many[i] = float(i) / 100.0f;
    bars.setPrediction(many, {}, QString());
    QCOMPARE(bars.shown().size(), PredictionBars::kShown);
    QCOMPARE(bars.shown().front().first, QStringLiteral("14"));
    QCOMPARE(bars.shown().back().first, QStringLiteral("5"));
}

void TestHeatmaps::matrixRangesIgnoreNonFiniteValuesAndMismatchesExplainThemselves()
{
    MatrixView view;
    view.resize(400, 300);
    MatrixView::Matrix m;
    m.rows = 2;
    m.cols = 2;
    m.values = {kNaN, 1.0f, kInf, 3.0f};
    view.setMatrix(m);
    // The automatic range spans the finite values only: 1 to 3.
    QCOMPARE(view.scaleLowText(), QStringLiteral("1.000"));
    QCOMPARE(view.scaleHighText(), QStringLiteral("3.000"));
    QCOMPARE(view.cellColor(0, 1), QColor(colorscale::sequential(0.0)));
    QCOMPARE(view.cellColor(1, 1), QColor(colorscale::sequential(1.0)));
    QVERIFY(!painted(&view).isNull());

    // Diverging around 1: the widest finite distance, |3 - 1| = 2, not infinity.
    m.scale = MatrixView::Scale::Diverging;
    m.center = 1;
    view.setMatrix(m);
    QCOMPARE(view.scaleLowText(), QStringLiteral("-1.000"));
    QCOMPARE(view.scaleHighText(), QStringLiteral("3.000"));

    // Nothing finite at all: a range of 0 to 1 rather than NaN.
    m.scale = MatrixView::Scale::Sequential;
    m.values = {kNaN, kNaN, kInf, -kInf};
    view.setMatrix(m);
    QVERIFY2(finiteText(view.scaleLowText()) && finiteText(view.scaleHighText()),
             qPrintable(view.scaleLowText() + QLatin1Char(' ') + view.scaleHighText()));

    // Fewer values than cells: nothing drawn, and the view says why.
    m.values = {1.0f, 2.0f, 3.0f};
    view.setMatrix(m);
    QVERIFY(!view.cellColor(0, 0).isValid());
    QVERIFY2(view.emptyText().contains(QStringLiteral("3 values")), qPrintable(view.emptyText()));
    QVERIFY(!painted(&view).isNull());
    // No rows: the same.
    m.rows = 0;
    view.setMatrix(m);
    QVERIFY(!view.emptyText().isEmpty());
    QCOMPARE(view.cellAt(QPointF(200, 150)), QPoint(-1, -1));
    QVERIFY(view.readout(0, 0).isEmpty());
}

void TestHeatmaps::predictionBarsLeaveOutNaN()
{
    PredictionBars bars;
    bars.setPrediction({kNaN, 0.25f, kNaN, 0.5f, kInf}, {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c"),
                                                        QStringLiteral("d"), QStringLiteral("e")},
                       QStringLiteral("Prediction"));
    const auto shown = bars.shown();
    QCOMPARE(shown.size(), 2);
    QCOMPARE(shown[0], qMakePair(QStringLiteral("d"), 0.5f));
    QCOMPARE(shown[1], qMakePair(QStringLiteral("b"), 0.25f));
    QVERIFY(!painted(&bars).isNull());
    bars.setPrediction({}, {}, QString());
    QVERIFY(bars.shown().isEmpty());
    QVERIFY(!painted(&bars).isNull());
}

void TestHeatmaps::predictionBarsMarkTheTrueClass()
{
    PredictionBars bars;
    bars.resize(300, 300);
    bars.setPrediction({0.1f, 0.6f, 0.3f}, {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")},
                       QStringLiteral("Prediction"), 2);
    QCOMPARE(bars.shown().size(), 3);
    QCOMPARE(bars.trueBar(), 1);  // c, the second most likely
    QCOMPARE(bars.shown()[bars.trueBar()].first, QStringLiteral("c"));
    QVERIFY(!bars.grab().isNull());

    // A true class outside the most likely: shown below them.
    QVector<float> many(15);
    for (int i = 0; i < 15; ++i)
        many[i] = float(i) / 100.0f;
    bars.setPrediction(many, {}, QString(), 0);
    QCOMPARE(bars.shown().size(), PredictionBars::kShown + 1);
    QCOMPARE(bars.trueBar(), PredictionBars::kShown);
    QCOMPARE(bars.shown().back(), (QPair<QString, float>(QStringLiteral("0"), 0.0f)));

    // Unknown, or out of range: nothing marked.
    bars.setPrediction(many, {}, QString());
    QCOMPARE(bars.trueBar(), -1);
    QCOMPARE(bars.shown().size(), PredictionBars::kShown);
    bars.setPrediction(many, {}, QString(), 99);
    QCOMPARE(bars.trueBar(), -1);
}

int main(int argc, char** argv)
{
    // Runs without a display, also when started by hand rather than by ctest.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestHeatmaps test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_heatmaps.moc"
