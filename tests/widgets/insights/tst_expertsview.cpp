// Tests ExpertsView: warnings, shares and routing, load over time, the frozen step, a dense model, missing experts or tokens, and the configuration it follows.
// Every expected value below is worked out by hand from the constructed data.
#include "InsightTestData.h"

using namespace widelab;
using namespace widelab::insighttest;

class TestExpertsView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void expertsWarningsSharesAndRouting();
    void expertsOverTimeAndFrozenStep();
    void expertsWithoutRoutingShowsTheDenseMessage();
    void expertsWithoutExpertsOrTokensShowWhy();
    void expertsFollowTheConfigurationAndShowTheNewestRoutedStep();
};

void TestExpertsView::expertsWarningsSharesAndRouting()
{
    auto history = routedHistory();
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setProbe(QStringLiteral("probe"));
    view.refresh();

    QVERIFY(view.exportArea()->isVisibleTo(&view));
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("no experts")), nullptr);
    const QStringList warnings = view.warnings();
    QCOMPARE(warnings.size(), 2);  // block 2: unused experts, imbalance; block 1 is fine
    QVERIFY(!warnings.join(QLatin1Char('\n')).contains(QStringLiteral("block 1")));
    QVERIFY2(warnings[0].contains(QStringLiteral("block 2")) && warnings[0].contains(QStringLiteral("3, 4")),
             qPrintable(warnings[0]));
    QVERIFY2(warnings[1].contains(QStringLiteral("block 2")) && warnings[1].contains(QStringLiteral("3.0")),
             qPrintable(warnings[1]));

    // Shares: tokens / the block's total.
    const MatrixView::Matrix& share = view.shareMap()->matrix();
    QCOMPARE(share.rows, 2);
    QCOMPARE(share.cols, 4);
    QVERIFY(sameValues(share.values, {0.25f, 0.25f, 0.25f, 0.25f, /**/ 0.25f, 0.75f, 0.0f, 0.0f}));
    QCOMPARE(share.rowLabels, (QStringList{QStringLiteral("1"), QStringLiteral("2")}));
    QCOMPARE(share.columnLabels,
             (QStringList{QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("3"), QStringLiteral("4")}));
    QCOMPARE(view.shareMap()->cellColor(1, 1), QColor(colorscale::sequential(1.0)));  // 75 %, the largest
    QVERIFY2(view.shareMap()->readout(1, 1).contains(QStringLiteral("75.0%")),
             qPrintable(view.shareMap()->readout(1, 1)));

    // Routing of the probe: each token's first choice, -1 where it was dropped.
    const MatrixView::Matrix& routing = view.routingMap()->matrix();
    QCOMPARE(routing.scale, MatrixView::Scale::Categorical);
    QCOMPARE(routing.rows, 2);
    QCOMPARE(routing.cols, 3);
    QCOMPARE(routing.categories, (QVector<int>{1, 0, -1, /**/ 3, -1, 2}));
    QCOMPARE(view.routingMap()->cellColor(1, 0).rgb(), colorscale::categorical(3).rgb());
    QCOMPARE(view.routingMap()->cellColor(0, 1).rgb(), colorscale::categorical(0).rgb());

    // The table: one row per block.
    QCOMPARE(view.table()->rowCount(), 2);

    // CSV: block 2, expert 2: 30 tokens, share 0.75, 3x fair, entropy 0.5, 2 unused, dropped "0 12.5".
    const QList<QByteArray> lines = view.csv().split('\n');
    QCOMPARE(lines.front(),
             QByteArray("run,step,block,expert,tokens,share,load_vs_fair,router_entropy,unused_experts,"
                        "dropped_percent_per_choice"));
    QVERIFY(lines.contains("Run A,100,2,2,30,0.75,3,0.5,2,0 12.5"));
    QVERIFY(lines.contains("Run A,100,1,4,20,0.25,1,1.25,0,0 0"));
    QCOMPARE(view.csv().count('\n'), 1 + 8);
}

void TestExpertsView::expertsOverTimeAndFrozenStep()
{
    auto history = routedHistory();
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();

    // Over time, the mean of both blocks; rows are experts, columns steps 50 and 100.
    //   step 50: (1 + 0) / 2, 0, (0 + 1) / 2, 0; step 100: (0.25 + 0.25) / 2, (0.25 + 0.75) / 2, 0.25 / 2, 0.25 / 2
    const MatrixView::Matrix& time = view.timeMap()->matrix();
    QCOMPARE(time.rows, 4);
    QCOMPARE(time.cols, 2);
    QCOMPARE(time.columnLabels, (QStringList{QStringLiteral("50"), QStringLiteral("100")}));
    QVERIFY(sameValues(time.values, {0.5f, 0.25f, /**/ 0.0f, 0.5f, /**/ 0.5f, 0.125f, /**/ 0.0f, 0.125f}));

    // Block 2 alone.
    view.setTimeBlock(1);
    QVERIFY(sameValues(view.timeMap()->matrix().values,
                       {0.0f, 0.25f, /**/ 0.0f, 0.75f, /**/ 1.0f, 0.0f, /**/ 0.0f, 0.0f}));
    view.setTimeBlock(-1);

    // Frozen on step 50: that state's shares and flags, and time up to it only.
    view.setStep(50);
    view.refresh();
    QVERIFY(sameValues(view.shareMap()->matrix().values, {1.0f, 0.0f, 0.0f, 0.0f, /**/ 0.0f, 0.0f, 1.0f, 0.0f}));
    QCOMPARE(view.timeMap()->matrix().cols, 1);
    const QString flags = view.warnings().join(QLatin1Char('\n'));
    QVERIFY2(flags.contains(QStringLiteral("block 1")) && flags.contains(QStringLiteral("2, 3, 4")), qPrintable(flags));
    QVERIFY2(flags.contains(QStringLiteral("1, 2, 4")), qPrintable(flags));
    QCOMPARE(view.warnings().size(), 4);  // both blocks: unused experts and 4x imbalance
    // No capture at or before step 50: the routing map explains instead.
    QVERIFY(view.routingMap()->matrix().categories.isEmpty());
    QVERIFY(!view.routingMap()->emptyText().isEmpty());
}

void TestExpertsView::expertsWithoutRoutingShowsTheDenseMessage()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(stateAt(10));  // a dense model: no routing
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QVERIFY(!view.exportArea()->isVisibleTo(&view));
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("no experts")) != nullptr);
    QVERIFY(view.warnings().isEmpty());
    QCOMPARE(view.csv().count('\n'), 1);  // the header only
}

void TestExpertsView::expertsWithoutExpertsOrTokensShowWhy()
{
    // A routed block that names no expert, and a probe without tokens.
    auto history = std::make_shared<InsightHistory>();
    TrainingSnapshot state = stateAt(40);
    RoutingStats load;
    load.block = 0;
    state.routing = {load};
    history->addState(state);
    ProbeResult capture = captureOf(40, QStringLiteral("probe"), {});
    capture.experts = {{}};
    history->addCapture(capture);
    ExpertsView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setProbe(QStringLiteral("probe"));
    view.refresh();
    QVERIFY2(view.shareMap()->emptyText().contains(QStringLiteral("no experts")), qPrintable(view.shareMap()->emptyText()));
    QVERIFY(!view.timeMap()->emptyText().isEmpty());
    QVERIFY2(view.routingMap()->emptyText().contains(QStringLiteral("no tokens")),
             qPrintable(view.routingMap()->emptyText()));
    QVERIFY(!painted(&view).isNull());

    // Blocks that disagree on the experts (4 and 2) and a NaN balance: drawn at the widest.
    auto ragged = std::make_shared<InsightHistory>();
    TrainingSnapshot mixed = stateAt(50);
    RoutingStats four, two;
    four.block = 0;
    four.tokensPerExpert = {1, 1, 1, 1};
    four.loadVsFair = {std::numeric_limits<double>::quiet_NaN(), 3, 1, 1};
    two.block = 1;
    two.tokensPerExpert = {3, 1};
    mixed.routing = {four, two};
    ragged->addState(mixed);
    view.setSources({QStringLiteral("r"), QStringLiteral("Run R"), ragged}, {});
    view.refresh();
    const MatrixView::Matrix& share = view.shareMap()->matrix();
    QCOMPARE(share.rows, 2);
    QCOMPARE(share.cols, 4);
    QVERIFY(sameValues(share.values, {0.25f, 0.25f, 0.25f, 0.25f, /**/ 0.75f, 0.25f, 0.0f, 0.0f}));
    QCOMPARE(view.timeMap()->matrix().rows, 4);
    // The busiest expert is the finite 3x, flagged; NaN neither hides it nor shows as "nan".
    const QString flags = view.warnings().join(QLatin1Char(' '));
    QVERIFY2(flags.contains(QStringLiteral("3.0")) && !flags.contains(QStringLiteral("nan"), Qt::CaseInsensitive),
             qPrintable(flags));
    QCOMPARE(view.table()->item(0, view.table()->columnCount() - 1)->text(), QStringLiteral("3.00×"));
    QVERIFY(!painted(&view).isNull());
}

void TestExpertsView::expertsFollowTheConfigurationAndShowTheNewestRoutedStep()
{
    // A WideNet run stopped between log steps: its newest state (step 120) has no routing.
    auto history = routedHistory();
    history->addState(stateAt(120));
    history->setArchitecture(sketchWith(4, 1));
    ExpertsView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("no experts")), nullptr);
    QVERIFY(view.exportArea()->isVisibleTo(&view));
    QVERIFY2(view.shareMap()->title().contains(QStringLiteral("100")), qPrintable(view.shareMap()->title()));
    // Frozen on the stop's step: the routing measured last before it.
    view.setStep(120);
    view.refresh();
    QVERIFY2(view.shareMap()->title().contains(QStringLiteral("100")), qPrintable(view.shareMap()->title()));
    // Frozen before any routing was measured: said so, not "no experts".
    view.setStep(20);
    view.refresh();
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("no experts")), nullptr);
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("20")) != nullptr);

    // A model with experts before its first measurement, and a dense one.
    auto fresh = std::make_shared<InsightHistory>();
    fresh->setArchitecture(sketchWith(4, 1));
    view.setSources({QStringLiteral("b"), QStringLiteral("Run B"), fresh}, {});
    view.setStep(-1);
    view.refresh();
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("no experts")), nullptr);
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("No measurement yet")) != nullptr);
    auto dense = std::make_shared<InsightHistory>();
    dense->addState(stateAt(10));
    dense->setArchitecture(sketchWith(1, 1));
    view.setSources({QStringLiteral("c"), QStringLiteral("Run C"), dense}, {});
    view.refresh();
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("no experts")) != nullptr);
    // An MoE layer on no block is no expert either.
    ArchitectureSketch nowhere = sketchWith(4, 1);
    nowhere.moeAtBlock = {false, false};
    dense->setArchitecture(nowhere);
    QVERIFY(!dense->hasExperts());
}

int main(int argc, char** argv)
{
    // Runs without a display, also when started by hand rather than by ctest.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestExpertsView test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_expertsview.moc"
