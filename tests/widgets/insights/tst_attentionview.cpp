// Tests AttentionView: one head and the mean of the constructed maps, the comparison pane, its CSV, and probes without tokens, with mismatched maps or NaN weights.
// Every expected value below is worked out by hand from the constructed data.
#include "InsightTestData.h"

using namespace widelab;
using namespace widelab::insighttest;

class TestAttentionView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void attentionOneHeadAndMeanShowTheConstructedMaps();
    void attentionComparisonPaneAndMessages();
    void attentionCsvHoldsEveryWeightOfEveryShownRun();
    void attentionWithoutAProbeShowsBothRunsOnTheSameText();
    void attentionWithoutTokensOrWithMismatchedMapsShowsWhy();
    void attentionWithNaNWeightsKeepsAFiniteScale();
    void attentionControlsFitALaptopsInsightsPage();
    void aMaskedLanguageModelPredictsItsHiddenLastToken();
};

void TestAttentionView::attentionOneHeadAndMeanShowTheConstructedMaps()
{
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(attentionProbe(10));
    history->addCapture(attentionProbe(20));

    AttentionView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setStep(10);
    view.setProbe(QStringLiteral("probe"));
    view.refresh();
    QVERIFY(view.primaryPane()->capture() != nullptr);
    QCOMPARE(view.primaryPane()->capture()->step, 10);
    QVERIFY(view.primaryPane()->header()->text().contains(QStringLiteral("Run A")));
    QVERIFY(!view.comparisonPane()->isVisible());
    QCOMPARE(view.primaryPane()->grid()->heads(), 2);

    view.setLayer(1);
    QCOMPARE(view.layer(), 1);
    view.showHead(1);
    QCOMPARE(view.mode(), AttentionPane::Mode::Head);
    QCOMPARE(view.head(), 1);
    const MatrixView* matrix = view.primaryPane()->matrix();
    QVERIFY(matrix->isVisible());
    QCOMPARE(matrix->matrix().rows, 3);
    QCOMPARE(matrix->matrix().cols, 3);
    QVERIFY(sameValues(matrix->matrix().values, kL1H1));  // step 10's map, not step 20's
    QCOMPARE(matrix->matrix().rowLabels, kTokens);
    QCOMPARE(matrix->matrix().columnLabels, kTokens);
    // Its largest weight, 1 (query 2, key 2), has the top colour; a 0 the bottom one.
    QCOMPARE(matrix->cellColor(2, 2), QColor(colorscale::sequential(1.0)));
    QCOMPARE(matrix->cellColor(0, 2), QColor(colorscale::sequential(0.0)));

    view.showHead(0);
    QVERIFY(sameValues(view.primaryPane()->matrix()->matrix().values, kL1H0));

    // Live: the newest capture, step 20.
    view.setStep(-1);
    view.showHead(1);
    view.refresh();
    QVERIFY(sameValues(view.primaryPane()->matrix()->matrix().values, kL1H1Later));
    view.setStep(10);

    // The mean over layer 2's heads, cell by cell: (kL1H0 + kL1H1) / 2.
    view.setMode(AttentionPane::Mode::Mean);
    const Map mean{0.125f, 0.375f, 0.5f, /**/ 0.0625f, 0.6875f, 0.25f, /**/ 0.5f, 0.0f, 0.5f};
    QVERIFY(sameValues(view.primaryPane()->matrix()->matrix().values, mean));

    // Layer 1's grid: both heads, the layer's largest weight 1.
    view.setLayer(0);
    view.setMode(AttentionPane::Mode::Grid);
    QCOMPARE(view.primaryPane()->shownLayer(), 0);
    QCOMPARE(view.primaryPane()->grid()->heads(), 2);
    QVERIFY(view.primaryPane()->gridArea()->isVisible());
    const HeadGrid* grid = view.primaryPane()->grid();
    const QRectF r = grid->mapRect(1);
    // Head 2 of layer 1 sends query 1 to keys 0 and 1 with 0.5 each.
    const HeadGrid::Hit hit = grid->hitAt(QPointF(r.left() + 0.5 * r.width() / 3, r.top() + 1.5 * r.height() / 3));
    QCOMPARE(hit.head, 1);
    QCOMPARE(hit.query, 1);
    QCOMPARE(hit.key, 0);
    QVERIFY2(grid->readout(hit).contains(QStringLiteral("0.500")), qPrintable(grid->readout(hit)));

    // A layer past the model's is clamped to its last.
    view.setLayer(5);
    QCOMPARE(view.primaryPane()->shownLayer(), 1);
}

void TestAttentionView::attentionComparisonPaneAndMessages()
{
    auto a = std::make_shared<InsightHistory>();
    a->addCapture(attentionProbe(10));
    auto b = std::make_shared<InsightHistory>();
    b->addCapture(captureOf(8, QStringLiteral("probe"), {QStringLiteral("p"), QStringLiteral("q")},
                            {{Map{0.25f, 0.75f, 1.0f, 0.0f}}}));
    auto c = std::make_shared<InsightHistory>();
    c->addCapture(captureOf(8, QStringLiteral("another text"), {QStringLiteral("p")}, {{Map{1.0f}}}));
    auto late = std::make_shared<InsightHistory>();
    late->addCapture(captureOf(50, QStringLiteral("probe"), {QStringLiteral("p")}, {{Map{1.0f}}}));

    AttentionView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setStep(10);
    view.setProbe(QStringLiteral("probe"));

    // A comparison run with its own capture: the second pane, naming that run.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("b"), QStringLiteral("Run B"), b});
    view.refresh();
    QVERIFY(view.comparisonPane()->isVisible());
    QVERIFY2(view.comparisonPane()->header()->text().contains(QStringLiteral("Run B")),
             qPrintable(view.comparisonPane()->header()->text()));
    QVERIFY(!view.comparisonPane()->header()->text().contains(QStringLiteral("Run A")));
    QVERIFY(view.comparisonPane()->capture() != nullptr);
    QCOMPARE(view.comparisonPane()->capture()->step, 8);
    QCOMPARE(view.comparisonPane()->grid()->tokens(), 2);
    view.setLayer(0);
    view.showHead(0);
    QVERIFY(sameValues(view.comparisonPane()->matrix()->matrix().values, Map{0.25f, 0.75f, 1.0f, 0.0f}));
    QVERIFY(sameValues(view.primaryPane()->matrix()->matrix().values, kL0H0));

    // A comparison run that never captured the text: a message naming the run and the text.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("c"), QStringLiteral("Run C"), c});
    view.refresh();
    QVERIFY(view.comparisonPane()->isVisible());
    QCOMPARE(view.comparisonPane()->capture(), nullptr);
    const QString why = view.comparisonPane()->matrix()->emptyText();
    QVERIFY2(why.contains(QStringLiteral("Run C")) && why.contains(QStringLiteral("\"probe\"")), qPrintable(why));
    QVERIFY(view.primaryPane()->capture() != nullptr);

    // One whose first capture comes after the frozen step: a message naming the step.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("l"), QStringLiteral("Run L"), late});
    view.refresh();
    QCOMPARE(view.comparisonPane()->capture(), nullptr);
    const QString after = view.comparisonPane()->matrix()->emptyText();
    QVERIFY2(after.contains(QStringLiteral("10")), qPrintable(after));

    // No comparison: the second pane goes away.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a}, {});
    view.refresh();
    QVERIFY(!view.comparisonPane()->isVisible());

    // No run at all: a message in the first pane.
    view.setSources({}, {});
    view.refresh();
    QCOMPARE(view.primaryPane()->capture(), nullptr);
    QVERIFY(!view.primaryPane()->matrix()->emptyText().isEmpty());
}

void TestAttentionView::attentionCsvHoldsEveryWeightOfEveryShownRun()
{
    auto a = std::make_shared<InsightHistory>();
    a->addCapture(attentionProbe(10));
    a->addCapture(attentionProbe(20));
    auto b = std::make_shared<InsightHistory>();
    b->addCapture(captureOf(8, QStringLiteral("probe"), {QStringLiteral("p"), QStringLiteral("q")},
                            {{Map{0.25f, 0.75f, 1.0f, 0.0f}}}));

    AttentionView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("b"), QStringLiteral("Run B"), b});
    view.setStep(10);
    view.setProbe(QStringLiteral("probe"));
    view.refresh();

    const QByteArray csv = view.csv();
    const QList<QByteArray> lines = csv.split('\n');
    // Header + run A: 2 layers x 2 heads x 3 x 3 + run B: 1 x 1 x 2 x 2, each ending in a newline.
    QCOMPARE(csv.count('\n'), 1 + 36 + 4);
    QVERIFY(csv.endsWith('\n'));
    QCOMPARE(lines.front(), QByteArray("run,step,probe,layer,head,query_index,query,key_index,key,weight"));
    // Layer 2, head 2, query 1 "cat" -> key 2 "sat": 0.5 at step 10 (0 at step 20).
    QVERIFY(lines.contains("Run A,10,probe,2,2,1,cat,2,sat,0.5"));
    // Layer 1, head 1, query 0 -> key 0: 0.5; the token with a comma is quoted.
    QVERIFY(lines.contains("Run A,10,probe,1,1,0,\"x,y\",0,\"x,y\",0.5"));
    QVERIFY(lines.contains("Run A,10,probe,2,2,1,cat,0,\"x,y\",0.125"));
    // Run B's map, query 1 "q" -> key 0 "p": 1.
    QVERIFY(lines.contains("Run B,8,probe,1,1,1,q,0,p,1"));
    QVERIFY(lines.contains("Run B,8,probe,1,1,0,p,1,q,0.75"));
    QVERIFY(!csv.contains("Run A,20,"));

    // Without the comparison: run A's 36 lines only.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a}, {});
    view.refresh();
    QCOMPARE(view.csv().count('\n'), 1 + 36);
    QVERIFY(!view.csv().contains("Run B"));
}

void TestAttentionView::attentionWithoutAProbeShowsBothRunsOnTheSameText()
{
    // AttentionView.h: "a second run beside the first on the same text". With no probe set, the
    // first run's first text is shown; the comparison run holds that text too (its second one).
    auto a = std::make_shared<InsightHistory>();
    a->addCapture(captureOf(10, QStringLiteral("alpha"), {QStringLiteral("a")}, {{Map{1.0f}}}));
    auto b = std::make_shared<InsightHistory>();
    b->addCapture(captureOf(10, QStringLiteral("beta"), {QStringLiteral("b")}, {{Map{1.0f}}}));
    b->addCapture(captureOf(10, QStringLiteral("alpha"), {QStringLiteral("a")}, {{Map{1.0f}}}));

    AttentionView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("b"), QStringLiteral("Run B"), b});
    view.refresh();
    QVERIFY(view.primaryPane()->capture() != nullptr);
    QCOMPARE(probeTextOf(*view.primaryPane()->capture()), QStringLiteral("alpha"));
    QVERIFY(view.comparisonPane()->capture() != nullptr);
    QCOMPARE(probeTextOf(*view.comparisonPane()->capture()), QStringLiteral("alpha"));
}

void TestAttentionView::attentionWithoutTokensOrWithMismatchedMapsShowsWhy()
{
    // Zero tokens with a layer of one (empty) head: what a damaged probe line would give.
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(captureOf(5, QStringLiteral("probe"), {}, {{Map{}}}));
    AttentionView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setProbe(QStringLiteral("probe"));
    for (const AttentionPane::Mode mode :
         {AttentionPane::Mode::Grid, AttentionPane::Mode::Head, AttentionPane::Mode::Mean, AttentionPane::Mode::Tokens}) {
        view.setMode(mode);
        view.refresh();
        QCOMPARE(view.primaryPane()->grid()->heads(), 0);
        QVERIFY(view.primaryPane()->matrix()->isVisible());
        const QString why = view.primaryPane()->matrix()->emptyText();
        QVERIFY2(why.contains(QStringLiteral("no tokens")) && why.contains(QStringLiteral("step 5")), qPrintable(why));
        QVERIFY(!painted(&view).isNull());
    }
    QCOMPARE(view.csv().count('\n'), 1);  // the header: no weight to export

    // The grid on its own, given such a capture directly.
    HeadGrid grid;
    const ProbeResult empty = captureOf(5, QStringLiteral("probe"), {}, {{Map{}, Map{}}});
    grid.setCapture(&empty, 0);
    QCOMPARE(grid.heads(), 0);
    QVERIFY(!grid.hitAt(QPointF(50, 50)).valid());
    QVERIFY(!painted(&grid).isNull());
    TokenFlowView flow;
    flow.setCapture(&empty, 0);
    QVERIFY(flow.lines().isEmpty());
    QVERIFY(!painted(&flow).isNull());

    // Three tokens but maps of four weights: nothing is drawn from them, and the pane says so.
    auto mismatched = std::make_shared<InsightHistory>();
    mismatched->addCapture(captureOf(6, QStringLiteral("probe"), kTokens, {{Map{1.0f, 0.0f, 0.0f, 1.0f}}}));
    view.setSources({QStringLiteral("m"), QStringLiteral("Run M"), mismatched}, {});
    view.setMode(AttentionPane::Mode::Grid);
    view.refresh();
    QCOMPARE(view.primaryPane()->grid()->heads(), 0);
    const QString why = view.primaryPane()->matrix()->emptyText();
    QVERIFY2(why.contains(QStringLiteral("do not match")) && why.contains(QStringLiteral("3 tokens")), qPrintable(why));
    QVERIFY(!painted(&view).isNull());

    // Layers with different numbers of heads, one head the wrong size: the good maps are drawn.
    auto ragged = std::make_shared<InsightHistory>();
    ragged->addCapture(captureOf(7, QStringLiteral("probe"), kTokens, {{kL0H0, kL0H1}, {kL1H0, Map{0.5f}}}));
    view.setSources({QStringLiteral("r"), QStringLiteral("Run R"), ragged}, {});
    view.refresh();  // the layer control learns of the second layer
    view.setLayer(1);
    QCOMPARE(view.primaryPane()->shownLayer(), 1);
    QCOMPARE(view.primaryPane()->grid()->heads(), 1);  // kL1H0 alone
    view.showHead(1);  // the short map: the matrix explains instead of drawing
    QVERIFY(!view.primaryPane()->matrix()->emptyText().isEmpty());
    QVERIFY(!painted(&view).isNull());
}

void TestAttentionView::attentionWithNaNWeightsKeepsAFiniteScale()
{
    auto history = std::make_shared<InsightHistory>();
    const Map diverged{kNaN, 0.5f, 0.25f, /**/ kInf, 0.0f, 1.0f, /**/ kNaN, kNaN, kNaN};
    ProbeResult capture = captureOf(9, QStringLiteral("probe"), kTokens, {{diverged}});
    capture.prediction = {kNaN, 0.75f, 0.25f};
    history->addCapture(capture);
    AttentionView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setProbe(QStringLiteral("probe"));
    view.refresh();
    // The layer's largest finite weight, 1, sets the grid's scale.
    QCOMPARE(view.primaryPane()->grid()->heads(), 1);
    QCOMPARE(view.primaryPane()->grid()->maxWeight(), 1.0f);
    QVERIFY(!painted(&view).isNull());
    view.showHead(0);
    const MatrixView* matrix = view.primaryPane()->matrix();
    QCOMPARE(matrix->scaleHighText(), QStringLiteral("1.000"));
    QCOMPARE(matrix->cellColor(1, 2), QColor(colorscale::sequential(1.0)));
    QVERIFY(!painted(&view).isNull());
    view.setMode(AttentionPane::Mode::Mean);
    QVERIFY(finiteText(view.primaryPane()->matrix()->scaleHighText()));
    view.setMode(AttentionPane::Mode::Tokens);
    QVERIFY(!painted(&view).isNull());
    // The prediction leaves the NaN out: 75 %, then 25 %.
    const auto bars = view.primaryPane()->prediction()->shown();
    QCOMPARE(bars.size(), 2);
    QCOMPARE(bars[0].second, 0.75f);
}

// At 1366x768 with the default docks the Insights page is about 740 pixels wide (measured on a
// screenshot): the controls' row must not make the page wider, in either colour range, or the page
// scrolls sideways and cuts the prediction column off.
void TestAttentionView::attentionControlsFitALaptopsInsightsPage()
{
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(attentionProbe(10));
    AttentionView view;
    view.resize(740, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setProbe(QStringLiteral("probe"));
    for (const bool perHead : {false, true}) {
        view.setScalePerHead(perHead);
        view.refresh();
        QVERIFY(view.primaryPane()->capture() != nullptr);
        QVERIFY2(view.minimumSizeHint().width() <= 740,
                 qPrintable(QStringLiteral("per head %1: at least %2 pixels")
                                .arg(perHead)
                                .arg(view.minimumSizeHint().width())));
    }
}

// A probe of a token model (a prediction over 30 tokens): "Next token", or for a
// masked language model, whose probe hides its last token, "Hidden last token".
void TestAttentionView::aMaskedLanguageModelPredictsItsHiddenLastToken()
{
    for (const auto& [head, title] : {std::pair{"language_model", "Next token"}, std::pair{"masked_lm", "Hidden last token"}}) {
        ProbeResult capture = attentionProbe(10);
        capture.prediction.assign(30, 1.0f / 30.0f);
        capture.predictionLabels.assign(30, "x");
        auto history = std::make_shared<InsightHistory>();
        ArchitectureSketch sketch = sketchWith(1, 1);
        sketch.headKind = QString::fromLatin1(head);
        history->setArchitecture(sketch);
        history->addCapture(capture);
        AttentionView view;
        view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
        view.setStep(10);
        view.setProbe(QStringLiteral("probe"));
        view.refresh();
        QCOMPARE(view.primaryPane()->prediction()->title(), QString::fromLatin1(title));
    }
}

int main(int argc, char** argv)
{
    // Runs without a display, also when started by hand rather than by ctest.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestAttentionView test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_attentionview.moc"
