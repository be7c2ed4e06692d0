// Tests AblationView with hand-built scans: the heatmap cells, the table sorted
// by Δloss, the baseline line, CSV, the probe's prediction under an ablation,
// progress, the buttons while busy, the request it emits, scans kept per run,
// the kinds a model offers, and its place in InsightsView.
// Every expected value below is worked out by hand from the constructed data.
#include "insights/AblationView.h"
#include "insights/ColorScale.h"
#include "insights/InsightsView.h"
#include "insights/MatrixView.h"
#include "insights/PredictionBars.h"

#include <QComboBox>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include <cmath>
#include <memory>

using namespace widelab;

namespace {

AblationRow row(int layer, int index, double delta, double accuracyDelta, const QVector<float>& prediction)
{
    AblationRow r;
    r.layer = layer;
    r.index = index;
    r.label = QStringLiteral("layer %1 head %2").arg(layer + 1).arg(index + 1);
    r.loss = 0.5 + delta;
    r.lossDelta = delta;
    r.accuracyDelta = accuracyDelta;
    r.probePrediction = prediction;
    return r;
}

// Two layers of three heads. Δloss:  layer 1: 0.1, -0.02, -0.0001;  layer 2: 0.5, 0.05, 0.2.
AblationScan headScan()
{
    AblationScan s;
    s.kind = QStringLiteral("heads");
    s.mode = QStringLiteral("zero");
    s.step = 1200;
    s.weights = QStringLiteral("best.pt");
    s.baselineLoss = 0.812;
    s.baselineAccuracy = 0.713;
    s.examples = 2000;
    s.layers = 2;
    s.columns = 3;
    s.probeText = QStringLiteral("a fine film");
    s.predictionLabels = {QStringLiteral("neg"), QStringLiteral("pos")};
    s.baselinePrediction = {0.25f, 0.75f};
    s.rows << row(0, 0, 0.1, -0.01, {0.4f, 0.6f}) << row(0, 1, -0.02, 0.005, {0.2f, 0.8f})
           << row(0, 2, -0.0001, 0.0, {0.25f, 0.75f}) << row(1, 0, 0.5, -0.125, {0.9f, 0.1f})
           << row(1, 1, 0.05, 0.0, {0.3f, 0.7f}) << row(1, 2, 0.2, -0.05, {0.6f, 0.4f});
    return s;
}

ArchitectureSketch sketch(int experts, int paths)
{
    ArchitectureSketch a;
    a.layers = 2;
    a.experts = experts;
    a.paths = paths;
    a.heads = 3;
    return a;
}

std::shared_ptr<InsightHistory> historyWith(int experts, int paths)
{
    auto h = std::make_shared<InsightHistory>();
    h->setArchitecture(sketch(experts, paths));
    return h;
}

QStringList tableColumn(const QTableWidget* table, int column)
{
    QStringList out;
    for (int r = 0; r < table->rowCount(); ++r)
        out << table->item(r, column)->text();
    return out;
}

}  // namespace

class TestAblationView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void scanFillsHeatmapTableAndBaseline();
    void csvIsOneLinePerRowInScanOrder();
    void selectingAPartShowsItsPrediction();
    void progressAndButtonsWhileBusy();
    void scanRequestCarriesKindAndMode();
    void scansAreKeptPerRun();
    void kindsFollowTheArchitecture();
    void insightsViewHasTheAblationPage();
};

void TestAblationView::scanFillsHeatmapTableAndBaseline()
{
    AblationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), historyWith(1, 1)}, {});
    view.refresh();
    QVERIFY(!view.exportArea()->isVisibleTo(&view));  // nothing scanned yet
    view.setScan(QStringLiteral("a"), headScan());
    QVERIFY(view.exportArea()->isVisibleTo(&view));

    const MatrixView::Matrix& m = view.heatmap()->matrix();
    QCOMPARE(m.rows, 2);
    QCOMPARE(m.cols, 3);
    QCOMPARE(m.scale, MatrixView::Scale::Diverging);
    QCOMPARE(m.values, (QVector<float>{0.1f, -0.02f, -0.0001f, 0.5f, 0.05f, 0.2f}));
    QCOMPARE(m.rowLabels, (QStringList{QStringLiteral("1"), QStringLiteral("2")}));
    QCOMPARE(m.columnLabels, (QStringList{QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("3")}));
    QCOMPARE(m.cellTexts[3], QStringLiteral("+0.500"));
    QCOMPARE(m.cellTexts[1], QStringLiteral("−0.020"));
    QCOMPARE(m.cellTexts[2], QStringLiteral("0.000"));  // rounds to zero: no sign
    // Centred at 0, spanning the largest |Δloss| (0.5): layer 2 head 1 at the hurting end,
    // layer 1 head 2 at -0.02 / 0.5 towards "helps".
    QCOMPARE(view.heatmap()->cellColor(1, 0).rgb(), colorscale::diverging(1.0));
    QCOMPARE(view.heatmap()->cellColor(0, 1).rgb(), colorscale::diverging(-0.04));
    QCOMPARE(view.heatmap()->cellColor(0, 2).rgb(), colorscale::diverging(-0.0002));
    // A multi-path scan: 2 paths per sublayer, the attention's columns first.
    AblationScan paths = headScan();
    paths.kind = QStringLiteral("paths");
    paths.layers = 1;
    paths.columns = 4;
    paths.rows.clear();
    for (int p = 0; p < 4; ++p)
        paths.rows << row(0, p, 0.01 * p, 0.0, {0.25f, 0.75f});
    AblationView pathsView;
    pathsView.setSources({QStringLiteral("p"), QStringLiteral("Run P"), historyWith(1, 2)}, {});
    pathsView.setScan(QStringLiteral("p"), paths);
    QCOMPARE(pathsView.heatmap()->matrix().columnLabels,
             (QStringList{QStringLiteral("attn 1"), QStringLiteral("attn 2"), QStringLiteral("FFN 1"), QStringLiteral("FFN 2")}));

    const QString tip = view.heatmap()->readout(1, 2);
    QVERIFY2(tip.contains(QStringLiteral("layer 2 head 3")) && tip.contains(QStringLiteral("0.7000"))
                 && tip.contains(QStringLiteral("+0.2000")) && tip.contains(QStringLiteral("−5.00")),
             qPrintable(tip));

    // The table, by Δloss descending.
    QCOMPARE(tableColumn(view.table(), 0),
             (QStringList{QStringLiteral("layer 2 head 1"), QStringLiteral("layer 2 head 3"), QStringLiteral("layer 1 head 1"),
                          QStringLiteral("layer 2 head 2"), QStringLiteral("layer 1 head 3"), QStringLiteral("layer 1 head 2")}));
    QCOMPARE(tableColumn(view.table(), 2),
             (QStringList{QStringLiteral("+0.5000"), QStringLiteral("+0.2000"), QStringLiteral("+0.1000"),
                          QStringLiteral("+0.0500"), QStringLiteral("−0.0001"), QStringLiteral("−0.0200")}));
    QCOMPARE(view.table()->item(0, 1)->text(), QStringLiteral("1.0000"));
    QCOMPARE(view.table()->item(0, 3)->text(), QStringLiteral("−12.50 pts"));
    // Sortable: by accuracy change ascending, the largest drop first.
    view.table()->sortItems(3, Qt::AscendingOrder);
    QCOMPARE(view.table()->item(0, 0)->text(), QStringLiteral("layer 2 head 1"));
    QCOMPARE(view.table()->item(5, 0)->text(), QStringLiteral("layer 1 head 2"));

    QCOMPARE(view.baselineLabel()->text(),
             QStringLiteral("baseline: loss 0.812, accuracy 71.3% on 2000 validation examples (step 1200, best.pt)"));
    QCOMPARE(view.exportTitle(), QStringLiteral("ablation heads"));
    QCOMPARE(view.progressBar()->text(), QStringLiteral("done: 6 parts scanned"));
}

void TestAblationView::csvIsOneLinePerRowInScanOrder()
{
    AblationView view;
    QCOMPARE(view.csv(), QByteArray("layer,index,label,loss,loss_delta,accuracy_delta\n"));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), historyWith(1, 1)}, {});
    view.refresh();
    AblationScan scan = headScan();
    scan.rows.resize(2);
    scan.rows[1].label = QStringLiteral("layer 1, head 2");  // a comma: quoted
    view.setScan(QStringLiteral("a"), scan);
    QCOMPARE(view.csv(), QByteArray("layer,index,label,loss,loss_delta,accuracy_delta\n"
                                    "1,1,layer 1 head 1,0.6,0.1,-0.01\n"
                                    "1,2,\"layer 1, head 2\",0.48,-0.02,0.005\n"));
}

void TestAblationView::selectingAPartShowsItsPrediction()
{
    AblationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), historyWith(1, 1)}, {});
    view.refresh();
    view.setScan(QStringLiteral("a"), headScan());
    // The part that matters most is selected first: layer 2 head 1 (scan row 3).
    QCOMPARE(view.selectedRow(), 3);
    QCOMPARE(view.heatmap()->matrix().marked, (QVector<QPoint>{QPoint(0, 1)}));
    QCOMPARE(view.baselinePrediction()->shown().front().first, QStringLiteral("pos"));
    QCOMPARE(view.ablatedPrediction()->shown().front().first, QStringLiteral("neg"));
    QCOMPARE(view.ablatedPrediction()->shown().front().second, 0.9f);
    QCOMPARE(view.topClassLabel()->text(),
             QStringLiteral("Probe “a fine film”: top class “pos” (75.0%) with every part, “neg” (90.0%) without layer 2 head 1."));

    // A click on a heatmap cell: layer 1 head 2.
    Q_EMIT view.heatmap()->cellClicked(0, 1);
    QCOMPARE(view.selectedRow(), 1);
    QCOMPARE(view.heatmap()->matrix().marked, (QVector<QPoint>{QPoint(1, 0)}));
    QCOMPARE(view.ablatedPrediction()->shown().front().second, 0.8f);
    QCOMPARE(view.table()->item(view.table()->currentRow(), 0)->text(), QStringLiteral("layer 1 head 2"));
    // Choosing a table row: its third row is layer 1 head 1 (Δloss 0.1).
    view.table()->setCurrentCell(2, 1);
    QCOMPARE(view.selectedRow(), 0);
    QCOMPARE(view.ablatedPrediction()->shown().front().second, 0.6f);

    // A scan without a probe says so.
    AblationScan plain = headScan();
    plain.probeText.clear();
    plain.baselinePrediction.clear();
    view.setScan(QStringLiteral("a"), plain);
    QVERIFY(view.topClassLabel()->text().contains(QStringLiteral("no probe")));
}

void TestAblationView::progressAndButtonsWhileBusy()
{
    AblationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), historyWith(1, 1)}, {});
    view.refresh();
    QVERIFY(view.scanButton()->isEnabled());
    QVERIFY(!view.cancelButton()->isEnabled());
    QCOMPARE(view.progressBar()->text(), QStringLiteral("no scan yet"));

    view.setBusy(QStringLiteral("a"), true);
    QVERIFY(!view.scanButton()->isEnabled());
    QVERIFY(view.cancelButton()->isEnabled());
    QCOMPARE(view.progressBar()->text(), QStringLiteral("starting the scan…"));
    view.setProgress(QStringLiteral("a"), 12, 48, QStringLiteral("layer 1 head 12"));
    QCOMPARE(view.progressBar()->text(), QStringLiteral("12 / 48: layer 1 head 12"));
    QCOMPARE(view.progressBar()->value(), 12);
    QCOMPARE(view.progressBar()->maximum(), 48);
    // Before the first result the controls stay at the top of a tall page.
    view.resize(900, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY2(view.scanButton()->geometry().bottom() < 100, qPrintable(QString::number(view.scanButton()->y())));
    view.hide();

    QSignalSpy cancel(&view, &AblationView::cancelRequested);
    QTest::mouseClick(view.cancelButton(), Qt::LeftButton);
    QCOMPARE(cancel.size(), 1);
    QCOMPARE(cancel.front().front().toString(), QStringLiteral("a"));

    // A failure ends the scan and says why.
    view.setFailed(QStringLiteral("a"), QStringLiteral("out of memory"));
    QVERIFY(view.scanButton()->isEnabled());
    QVERIFY(!view.cancelButton()->isEnabled());
    QVERIFY(view.statusLabel()->isVisibleTo(&view));
    QVERIFY2(view.statusLabel()->text().contains(QStringLiteral("out of memory")), qPrintable(view.statusLabel()->text()));

    // A finished scan.
    view.setBusy(QStringLiteral("a"), true);
    QVERIFY(!view.statusLabel()->text().contains(QStringLiteral("out of memory")));
    view.setScan(QStringLiteral("a"), headScan());
    view.setBusy(QStringLiteral("a"), false);
    QVERIFY(view.scanButton()->isEnabled());
    QVERIFY(!view.cancelButton()->isEnabled());
}

void TestAblationView::scanRequestCarriesKindAndMode()
{
    AblationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), historyWith(4, 1)}, {});
    view.refresh();
    QSignalSpy scan(&view, &AblationView::scanRequested);
    view.setKind(QStringLiteral("experts"));
    view.setMode(QStringLiteral("mean"));
    QTest::mouseClick(view.scanButton(), Qt::LeftButton);
    QCOMPARE(scan.size(), 1);
    QCOMPARE(scan.front()[0].toString(), QStringLiteral("a"));
    QCOMPARE(scan.front()[1].toString(), QStringLiteral("experts"));
    QCOMPARE(scan.front()[2].toString(), QStringLiteral("mean"));
    // Busy: the button asks for nothing.
    view.setBusy(QStringLiteral("a"), true);
    view.scanButton()->click();
    QCOMPARE(scan.size(), 1);
    // Without a run there is nothing to scan.
    AblationView empty;
    empty.refresh();
    QVERIFY(!empty.scanButton()->isEnabled());
}

void TestAblationView::scansAreKeptPerRun()
{
    AblationView view;
    const InsightSource a{QStringLiteral("a"), QStringLiteral("Run A"), historyWith(1, 1)};
    const InsightSource b{QStringLiteral("b"), QStringLiteral("Run B"), historyWith(1, 1)};
    view.setSources(a, {});
    view.refresh();
    view.setScan(QStringLiteral("a"), headScan());
    view.setBusy(QStringLiteral("a"), true);  // a second scan of a under way
    view.setProgress(QStringLiteral("a"), 3, 6, QStringLiteral("layer 1 head 3"));

    // Run B: nothing scanned, not busy.
    view.setSources(b, {});
    view.refresh();
    QVERIFY(!view.exportArea()->isVisibleTo(&view));
    QVERIFY(view.scanButton()->isEnabled());
    QCOMPARE(view.progressBar()->text(), QStringLiteral("no scan yet"));
    // B's scan arrives while B is shown; A's progress does not disturb B.
    AblationScan other = headScan();
    other.rows.resize(3);
    other.rows[0].lossDelta = 0.3;
    view.setScan(QStringLiteral("b"), other);
    view.setProgress(QStringLiteral("a"), 4, 6, QStringLiteral("layer 2 head 1"));
    QCOMPARE(view.progressBar()->text(), QStringLiteral("done: 3 parts scanned"));
    QCOMPARE(view.heatmap()->matrix().values, (QVector<float>{0.3f, -0.02f, -0.0001f}));

    // Back to A: its scan and its progress.
    view.setSources(a, {});
    view.refresh();
    QCOMPARE(view.heatmap()->matrix().values.size(), 6);
    QCOMPARE(view.progressBar()->text(), QStringLiteral("4 / 6: layer 2 head 1"));
    QVERIFY(!view.scanButton()->isEnabled());

    // A compared with B: B's heatmap beside A's.
    view.setSources(a, b);
    view.refresh();
    QVERIFY(view.comparisonHeatmap()->isVisibleTo(&view));
    QCOMPARE(view.comparisonHeatmap()->matrix().values, (QVector<float>{0.3f, -0.02f, -0.0001f}));
    QVERIFY(view.comparisonHeatmap()->title().startsWith(QStringLiteral("Run B")));
    view.setSources(a, {});
    view.refresh();
    QVERIFY(!view.comparisonHeatmap()->isVisibleTo(&view));
    QCOMPARE(view.scanOf(QStringLiteral("b"))->rows.size(), 3);
}

void TestAblationView::kindsFollowTheArchitecture()
{
    QCOMPARE(AblationView::kindsOf(historyWith(1, 1).get()), (QStringList{QStringLiteral("heads"), QStringLiteral("sublayers")}));
    QCOMPARE(AblationView::kindsOf(historyWith(4, 1).get()),
             (QStringList{QStringLiteral("heads"), QStringLiteral("experts"), QStringLiteral("sublayers")}));
    QCOMPARE(AblationView::kindsOf(historyWith(4, 3).get()),
             (QStringList{QStringLiteral("heads"), QStringLiteral("experts"), QStringLiteral("paths"), QStringLiteral("sublayers")}));
    QCOMPARE(AblationView::kindsOf(nullptr), QStringList{});

    AblationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), historyWith(4, 3)}, {});
    view.refresh();
    view.setKind(QStringLiteral("paths"));
    QCOMPARE(view.offeredKinds().size(), 4);
    // A dense one-path model: no experts, no paths; the choice falls back to the first kind.
    view.setSources({QStringLiteral("b"), QStringLiteral("Run B"), historyWith(1, 1)}, {});
    view.refresh();
    QCOMPARE(view.offeredKinds(), (QStringList{QStringLiteral("heads"), QStringLiteral("sublayers")}));
    QCOMPARE(view.kind(), QStringLiteral("heads"));
}

void TestAblationView::insightsViewHasTheAblationPage()
{
    InsightsView insights;
    insights.addRun(QStringLiteral("a"), QStringLiteral("Run A"), historyWith(1, 1));
    insights.resize(1000, 700);
    insights.show();
    QVERIFY(QTest::qWaitForWindowExposed(&insights));
    insights.setPage(InsightsView::Page::Ablation);
    QCOMPARE(insights.currentPage(), static_cast<InsightPage*>(insights.ablation()));
    const auto* tabs = insights.findChild<QTabWidget*>();
    QCOMPARE(tabs->tabText(int(InsightsView::Page::Ablation)), QStringLiteral("Ablation"));
    QSignalSpy scan(insights.ablation(), &AblationView::scanRequested);
    insights.ablation()->scanButton()->click();
    QCOMPARE(scan.size(), 1);
    QCOMPARE(scan.front()[0].toString(), QStringLiteral("a"));
    insights.ablation()->setScan(QStringLiteral("a"), headScan());
    QCOMPARE(insights.currentPage()->csv().count('\n'), 1 + 6);
}

QTEST_MAIN(TestAblationView)
#include "tst_ablationview.moc"
