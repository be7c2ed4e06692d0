// Tests WeightsView: a parameter group's spread over training (bands between
// percentiles, the median a line), its histogram at the shown step beside the
// compared run's, the group kept by name, steps without histograms passed over,
// and the CSV. Every expected value below is worked out by hand from the
// constructed data.
#include "InsightTestData.h"

#include "insights/InsightsView.h"
#include "insights/WeightsView.h"

#include <QComboBox>
#include <QTabWidget>

#include <qcustomplot.h>

using namespace widelab;
using namespace widelab::insighttest;

namespace {

TrainingSnapshot measured(qint64 step, std::vector<ValueHistogram> weights, std::vector<ValueHistogram> gradients)
{
    TrainingSnapshot state = stateAt(step);
    state.weightHistograms = std::move(weights);
    state.gradientHistograms = std::move(gradients);
    return state;
}

QCPBars* barsAt(QCustomPlot* plot, int index) { return qobject_cast<QCPBars*>(plot->plottable(index)); }

// Two runs: A measured at 10 and 30 (20 is a line without histograms), B at 30.
struct Runs {
    std::shared_ptr<InsightHistory> a = std::make_shared<InsightHistory>();
    std::shared_ptr<InsightHistory> b = std::make_shared<InsightHistory>();
    Runs()
    {
        // "ffn.0" at 10: four values in [0, 1) and four in [3, 4]: from 0 to 4 in buckets 1 wide.
        a->addState(measured(10, {{"embed", -1, 1, {2, 2}}, {"ffn.0", 0, 4, {4, 0, 0, 4}}},
                             {{"embed", -0.5, 0.5, {1, 1}}, {"ffn.0", -2, 2, {1, 2, 0, 1}}}));
        a->addState(stateAt(20));
        // At 30 the weights are all equal (one bucket), the gradients spread from -1 to 1.
        a->addState(measured(30, {{"embed", -2, 2, {1, 3}}, {"ffn.0", 0.5, 0.5, {8, 0, 0, 0}}},
                             {{"embed", -1, 1, {1, 1}}, {"ffn.0", -1, 1, {0, 4, 4, 0}}}));
        b->addState(measured(30, {{"ffn.0", 0, 2, {2, 6}}}, {{"ffn.0", -4, 4, {8, 0}}}));
    }
};

}  // namespace

class TestWeightsView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void bandsJoinPercentilesOverTraining();
    void theHistogramAtTheShownStepBesideTheComparedRun();
    void theChosenGroupIsKeptByName();
    void aRunWithoutHistogramsSaysSo();
    void csvHoldsEveryBucket();
    void theInsightsBarHasTheWeightsPage();
};

void TestWeightsView::bandsJoinPercentilesOverTraining()
{
    Runs runs;
    WeightsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), runs.a}, {});
    view.refresh();
    QCOMPARE(view.groups()->count(), 2);
    QCOMPARE(view.groups()->currentText(), QStringLiteral("embed"));
    view.groups()->setCurrentIndex(1);  // ffn.0, redrawn at once
    QCustomPlot* spread = view.spreadPlot();
    QCOMPARE(spread->graphCount(), 9);
    // The median of ffn.0's weights: at 10, half of the 8 values lie in [0, 1),
    // so the 50th percentile is where bucket 0 ends, 1; at 30 all are 0.5.
    QCOMPARE(view.spreadLine(4)->name(), QStringLiteral("median"));
    QVERIFY(sameCurve(pointsOf(view.spreadLine(4)), Curve{{10, 1.0}, {30, 0.5}}));
    // The outermost band: smallest to largest, 0 to 4 at 10; step 20 has no point.
    QVERIFY(sameCurve(pointsOf(view.spreadLine(0)), Curve{{10, 0.0}, {30, 0.5}}));
    QVERIFY(sameCurve(pointsOf(view.spreadLine(8)), Curve{{10, 4.0}, {30, 0.5}}));
    QCOMPARE(view.spreadLine(8)->channelFillGraph(), view.spreadLine(0));
    QCOMPARE(view.spreadLine(5)->channelFillGraph(), view.spreadLine(3));
    // Inner bands over outer ones, the median over all.
    QCOMPARE(spread->graph(0), view.spreadLine(0));
    QCOMPARE(spread->graph(8), view.spreadLine(4));
    QVERIFY(view.spreadLine(4)->pen().style() != Qt::NoPen);
    QCOMPARE(view.exportTitle(), QStringLiteral("weights ffn.0 Run A"));
    // Gradients: the 16th percentile at 10 is 0.63 of 4 values, inside the one
    // value in [-2, -1): -2 + 0.63 = -1.3652.
    view.kinds()->setCurrentIndex(1);
    QVERIFY(near(view.spreadLine(2)->data()->constBegin()->value, -2 + 0.1587 * 4, 1e-9));
    QCOMPARE(spread->yAxis->label(), QStringLiteral("gradient"));
    QCOMPARE(view.exportTitle(), QStringLiteral("gradients ffn.0 Run A"));
}

void TestWeightsView::theHistogramAtTheShownStepBesideTheComparedRun()
{
    Runs runs;
    WeightsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), runs.a}, {QStringLiteral("b"), QStringLiteral("Run B"), runs.b});
    view.refresh();
    view.groups()->setCurrentIndex(1);  // ffn.0
    // Live: step 30, whose equal weights are one bar of 8 at 0.5; B's beside them,
    // from 0 to 2 in buckets 1 wide: 2 at 0.5, 6 at 1.5.
    QCustomPlot* histogram = view.histogramPlot();
    QCOMPARE(histogram->plottableCount(), 2);
    QVERIFY(sameCurve(pointsOf(barsAt(histogram, 0)), Curve{{0.5, 8}}));
    QVERIFY(sameCurve(pointsOf(barsAt(histogram, 1)), Curve{{0.5, 2}, {1.5, 6}}));
    QCOMPARE(barsAt(histogram, 1)->name(), QStringLiteral("Run B · step 30"));
    QCOMPARE(barsAt(histogram, 1)->brush().style(), Qt::NoBrush);  // an outline over A's bars
    QCOMPARE(histogram->xAxis->label(), QStringLiteral("weight at step 30"));
    // Gradients at 30: from -1 to 1 in buckets 0.5 wide, centres -0.75 ... 0.75.
    view.kinds()->setCurrentIndex(1);
    QVERIFY(sameCurve(pointsOf(barsAt(histogram, 0)), Curve{{-0.75, 0}, {-0.25, 4}, {0.25, 4}, {0.75, 0}}));
    view.kinds()->setCurrentIndex(0);

    // Frozen on step 25: step 10 is shown; B measured nothing by then.
    view.setStep(25);
    view.refresh();
    QCOMPARE(histogram->plottableCount(), 1);
    QVERIFY(sameCurve(pointsOf(barsAt(histogram, 0)), Curve{{0.5, 4}, {1.5, 0}, {2.5, 0}, {3.5, 4}}));
    QCOMPARE(histogram->xAxis->label(), QStringLiteral("weight at step 10"));
    // The spread still covers the run, with a line at the shown step.
    QCOMPARE(view.spreadLine(4)->dataCount(), 2);
    QCOMPARE(view.spreadPlot()->itemCount(), 1);
    auto* line = qobject_cast<QCPItemStraightLine*>(view.spreadPlot()->item(0));
    QVERIFY(line != nullptr);
    QCOMPARE(line->point1->coords().x(), 10.0);
}

void TestWeightsView::theChosenGroupIsKeptByName()
{
    Runs runs;
    auto history = std::make_shared<InsightHistory>();
    history->addState(measured(10, {{"ffn.0", 0, 1, {1}}}, {}));
    WeightsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QCOMPARE(view.groups()->currentText(), QStringLiteral("ffn.0"));
    // A later step measures a group first that the earlier did not: ffn.0 stays chosen.
    history->addState(measured(20, {{"embed", 0, 1, {1}}, {"ffn.0", 0, 1, {1}}}, {}));
    view.refresh();
    QCOMPARE(view.groups()->count(), 2);
    QCOMPARE(view.groups()->currentText(), QStringLiteral("ffn.0"));
}

void TestWeightsView::aRunWithoutHistogramsSaysSo()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(stateAt(10));  // a run recorded before histograms existed
    WeightsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.show();
    view.refresh();
    QVERIFY(!view.exportArea()->isVisible());
    QVERIFY(!view.groups()->isEnabled());
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("No histograms yet")) != nullptr);
}

void TestWeightsView::csvHoldsEveryBucket()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(measured(10, {{"ffn.0", -1, 1, {3, 5}}}, {{"ffn.0", 0, 0, {8}}}));
    WeightsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    QCOMPARE(view.csv(), QByteArray("run,step,kind,group,low,high,bucket,count\n"
                                    "Run A,10,weights,ffn.0,-1,1,1,3\n"
                                    "Run A,10,weights,ffn.0,-1,1,2,5\n"
                                    "Run A,10,gradients,ffn.0,0,0,1,8\n"));
}

void TestWeightsView::theInsightsBarHasTheWeightsPage()
{
    Runs runs;
    InsightsView insights;
    insights.addRun(QStringLiteral("a"), QStringLiteral("Run A"), runs.a);
    insights.show();
    auto* page = showInsightsTab<WeightsView>(insights, QStringLiteral("Weights"));
    QVERIFY(page != nullptr);
    QCOMPARE(page->histogramPlot()->plottableCount(), 1);
}

QTEST_MAIN(TestWeightsView)
#include "tst_weightsview.moc"
