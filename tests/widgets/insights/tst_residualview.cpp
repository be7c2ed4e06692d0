// Tests ResidualView: the residual stream's norm against depth at the shown step,
// the run's first measured step dashed beside it, the compared run, steps that
// measured nothing passed over, non-finite values left out, and the CSV.
// Every expected value below is worked out by hand from the constructed data.
#include "InsightTestData.h"

#include "insights/InsightsView.h"
#include "insights/ResidualView.h"

#include <QTabWidget>

#include <qcustomplot.h>

using namespace widelab;
using namespace widelab::insighttest;

namespace {

TrainingSnapshot measured(qint64 step, std::vector<double> norms)
{
    TrainingSnapshot state = stateAt(step);
    state.residualNorms = std::move(norms);
    return state;
}

}  // namespace

class TestResidualView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void normsAgainstDepthAtTheShownStep();
    void aRunWithoutMeasurementsSaysSo();
    void theInsightsBarShowsItLive();
};

void TestResidualView::normsAgainstDepthAtTheShownStep()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(measured(10, {1.0, 2.0, 4.0}));
    history->addState(measured(20, {1.5, 3.0, std::numeric_limits<double>::quiet_NaN()}));
    history->addState(stateAt(30));  // a stop between log steps: nothing measured
    auto other = std::make_shared<InsightHistory>();
    other->addState(measured(20, {2.0, 2.5}));

    ResidualView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history},
                    {QStringLiteral("b"), QStringLiteral("Run B"), other});
    view.refresh();
    QCustomPlot* plot = view.plot();
    // Live: step 20 is the newest that measured; step 10, the first, dashed.
    QCOMPARE(plot->graphCount(), 3);
    QCOMPARE(plot->graph(0)->name(), QStringLiteral("step 10"));  // the shown run is named above
    QCOMPARE(plot->graph(0)->pen().style(), Qt::DashLine);
    QVERIFY(sameCurve(pointsOf(plot->graph(0)), Curve{{1, 1.0}, {2, 2.0}, {3, 4.0}}));
    QCOMPARE(plot->graph(1)->name(), QStringLiteral("step 20"));
    QCOMPARE(plot->graph(1)->pen().style(), Qt::SolidLine);
    QVERIFY(sameCurve(pointsOf(plot->graph(1)), Curve{{1, 1.5}, {2, 3.0}}));  // NaN left out, not drawn at 0
    QCOMPARE(plot->graph(2)->name(), QStringLiteral("Run B · step 20"));
    QVERIFY(sameCurve(pointsOf(plot->graph(2)), Curve{{1, 2.0}, {2, 2.5}}));
    QVERIFY(near(plot->xAxis->range().upper, 3.5));
    QVERIFY(near(plot->yAxis->range().upper, 4.0 * 1.15));

    // Frozen on step 15: step 10 is shown (and is the first, so no dashed twin);
    // the compared run measured nothing by then.
    view.setStep(15);
    view.refresh();
    QCOMPARE(plot->graphCount(), 1);
    QCOMPARE(plot->graph(0)->name(), QStringLiteral("step 10"));  // the shown run is named above
    QCOMPARE(plot->graph(0)->pen().style(), Qt::SolidLine);

    QCOMPARE(view.csv(), QByteArray("run,step,block,residual_norm\n"
                                    "Run A,10,1,1\nRun A,10,2,2\nRun A,10,3,4\n"
                                    "Run A,20,1,1.5\nRun A,20,2,3\nRun A,20,3,nan\n"
                                    "Run B,20,1,2\nRun B,20,2,2.5\n"));
    QCOMPARE(view.exportTitle(), QStringLiteral("residual stream Run A"));
}

void TestResidualView::aRunWithoutMeasurementsSaysSo()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(stateAt(10));  // a run recorded before the measurement existed
    ResidualView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.show();
    view.refresh();
    QVERIFY(!view.plot()->isVisible());
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("No measurement yet")) != nullptr);
}

void TestResidualView::theInsightsBarShowsItLive()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(measured(10, {1.0, 2.0}));
    InsightsView insights;
    insights.addRun(QStringLiteral("a"), QStringLiteral("Run A"), history);
    insights.show();  // a hidden view draws nothing
    auto* page = showInsightsTab<ResidualView>(insights, QStringLiteral("Residual stream"));
    QVERIFY(page != nullptr);
    QCOMPARE(page->plot()->graphCount(), 1);
    // A new step reaches the page when the app says the history changed.
    history->addState(measured(20, {1.5, 3.0}));
    insights.historyChanged(QStringLiteral("a"));
    insights.refreshNow();
    QCOMPARE(page->plot()->graphCount(), 2);
    QCOMPARE(page->plot()->graph(1)->name(), QStringLiteral("step 20"));
}

QTEST_MAIN(TestResidualView)
#include "tst_residualview.moc"
