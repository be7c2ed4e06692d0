// Tests CurvesView: metric routing, one colour per run in every chart, the
// shared controls reaching every chart, what is smoothed and what is not, the
// balance-loss chart of models without experts, legends beside the data, and
// the link to the insight views (a clicked step, the step cursor).
#include "curves/CurvesView.h"
#include "curves/MetricChooser.h"
#include "common/Palette.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QTableWidget>
#include <QToolButton>
#include <QtTest>

#include <algorithm>
#include <limits>

using widelab::CurvePlot;
using widelab::CurvePoint;
using widelab::CurvesView;
using widelab::MetricChooser;
namespace palette = widelab::palette;

namespace {

QVector<CurvePoint> ramp(int count, double scale = 1.0)
{
    QVector<CurvePoint> points;
    for (int i = 0; i < count; ++i)
        points.append({double(i), 0.5 * i, scale * (i + 1)});
    return points;
}

int visibleActions(const CurvesView& view)
{
    const QList<QAction*> actions = view.findChild<QToolButton*>(QStringLiteral("exportButton"))->menu()->actions();
    return static_cast<int>(std::count_if(actions.begin(), actions.end(), [](const QAction* a) { return a->isVisible(); }));
}

const QStringList kChartKeys{QStringLiteral("loss"),          QStringLiteral("accuracy"),
                             QStringLiteral("balance_loss"),  QStringLiteral("learning_rate"),
                             QStringLiteral("gradient_norm"), QStringLiteral("tokens_per_second"),
                             QStringLiteral("bleu")};

}  // namespace

class TestCurvesView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hasTheSevenCharts();
    void theBleuChartIsShownOnlyWithTranslationsScored();
    void metricsGoToTheirCharts();
    void unknownMetricsAndRunsAreIgnored();
    void aRunKeepsItsColourAcrossCharts();
    void removedRunsFreeTheirColour();
    void clearRunEmptiesEveryChart();
    void controlsReachEveryChart();
    void resetButtonFitsEveryChart();
    void everyControlHasAnAccessibleName();
    void clickingAChartMakesItCurrent();
    void smoothingAtMaxLeavesTheLearningRateAsLogged();
    void validationPointsAreMarkersAtTheirValues();
    void balanceChartLeavesOutRunsWithoutExperts();
    void balanceChartOfAModelWithoutExpertsSaysWhyItIsEmpty();
    void legendsOfFiveRunsStayOffTheData();
    void aClickedPointOfAnyChartNamesItsStep();
    void theCursorStepReachesEveryChart();
    void thePointerDrawsACrosshairOnEveryChartAndTabulatesTheValuesThere();
    void theFirstRunsBlueIsReadableOnADarkTheme();
    // Charts you choose (issue 37).
    void anyMetricGetsAChartOfItsOwnWithTheRunsAndSettings();
    void aMetricChartIsRemovedAndTheOthersKeepTheirPoints();
    void theChooserKeepsTheChartedOrderAndFilters();
};

void TestCurvesView::hasTheSevenCharts()
{
    CurvesView view;
    QCOMPARE(view.chartKeys(), kChartKeys);
    for (const QString& key : kChartKeys)
        QVERIFY2(view.chart(key) != nullptr, qPrintable(key));
    QVERIFY(view.chart(QStringLiteral("perplexity")) == nullptr);
    QCOMPARE(view.chart(QStringLiteral("loss"))->title(), QStringLiteral("Loss"));
    QCOMPARE(view.chart(QStringLiteral("loss"))->seriesNames(),
             (QStringList{QStringLiteral("loss"), QStringLiteral("validation_loss")}));
    QCOMPARE(view.chart(QStringLiteral("accuracy"))->seriesNames(),
             (QStringList{QStringLiteral("accuracy"), QStringLiteral("validation_accuracy")}));
    QCOMPARE(view.currentChart(), view.chart(QStringLiteral("loss")));
}

void TestCurvesView::theBleuChartIsShownOnlyWithTranslationsScored()
{
    CurvesView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    CurvePlot* bleu = view.chart(QStringLiteral("bleu"));
    QCOMPARE(bleu->seriesNames(), (QStringList{QStringLiteral("validation_bleu"), QStringLiteral("validation_chrf")}));
    view.addRun(QStringLiteral("lm"), QStringLiteral("language model"), 0);
    view.appendPoints(QStringLiteral("lm"), QStringLiteral("validation_loss"), ramp(3));
    QVERIFY(!bleu->isVisible());  // no run translates: six charts, no empty seventh
    QVERIFY(view.chart(QStringLiteral("tokens_per_second"))->isVisible());

    view.addRun(QStringLiteral("mt"), QStringLiteral("translation"), 0);
    view.appendPoints(QStringLiteral("mt"), QStringLiteral("validation_bleu"), {{100, 10, 3.5}, {200, 20, 7.25}});
    QCOMPARE(view.chartKeyForMetric(QStringLiteral("validation_chrf")), QStringLiteral("bleu"));
    QVERIFY(bleu->isVisible());
    QCOMPARE(visibleActions(view), 7);  // and it can be exported
    QCOMPARE(bleu->points(QStringLiteral("mt"), QStringLiteral("validation_bleu")).back().value, 7.25);
    QCOMPARE(bleu->seriesStyle(QStringLiteral("validation_bleu")), CurvePlot::SeriesStyle::Markers);
    // Its geometry is the grid's: beside or under the others, never on them.
    QCoreApplication::processEvents();
    for (const QString& key : kChartKeys)
        if (key != QLatin1String("bleu"))
            QVERIFY2(!view.chart(key)->geometry().intersects(bleu->geometry()), qPrintable(key));

    view.removeRun(QStringLiteral("mt"));
    QVERIFY(!bleu->isVisible());
}

void TestCurvesView::metricsGoToTheirCharts()
{
    CurvesView view;
    view.addRun(QStringLiteral("r"), QStringLiteral("run"), 1e6);
    const QStringList metrics{QStringLiteral("loss"),          QStringLiteral("validation_loss"),
                              QStringLiteral("accuracy"),      QStringLiteral("validation_accuracy"),
                              QStringLiteral("balance_loss"),  QStringLiteral("learning_rate"),
                              QStringLiteral("gradient_norm"), QStringLiteral("tokens_per_second")};
    const QStringList charts{QStringLiteral("loss"),          QStringLiteral("loss"),
                             QStringLiteral("accuracy"),      QStringLiteral("accuracy"),
                             QStringLiteral("balance_loss"),  QStringLiteral("learning_rate"),
                             QStringLiteral("gradient_norm"), QStringLiteral("tokens_per_second")};
    for (qsizetype i = 0; i < metrics.size(); ++i) {
        view.appendPoints(QStringLiteral("r"), metrics[i], ramp(int(i) + 2));
        QCOMPARE(view.chartKeyForMetric(metrics[i]), charts[i]);
        QCOMPARE(view.chart(charts[i])->points(QStringLiteral("r"), metrics[i]).size(), i + 2);
    }
    // Nothing lands in a chart it does not belong to.
    QVERIFY(view.chart(QStringLiteral("loss"))->points(QStringLiteral("r"), QStringLiteral("accuracy")).isEmpty());
    QCOMPARE(view.chart(QStringLiteral("loss"))->seriesNames().size(), 2);
}

void TestCurvesView::unknownMetricsAndRunsAreIgnored()
{
    CurvesView view;
    view.addRun(QStringLiteral("r"), QStringLiteral("run"), 0);
    view.appendPoints(QStringLiteral("r"), QStringLiteral("task_loss"), ramp(3));
    view.appendPoints(QStringLiteral("r"), QString(), ramp(3));
    view.appendPoints(QStringLiteral("ghost"), QStringLiteral("loss"), ramp(3));
    QVERIFY(view.chartKeyForMetric(QStringLiteral("task_loss")).isEmpty());
    for (const QString& key : kChartKeys) {
        QVERIFY(!view.chart(key)->seriesNames().contains(QStringLiteral("task_loss")));
        QVERIFY(!view.chart(key)->hasRun(QStringLiteral("ghost")));
    }
    QCOMPARE(view.runs(), QStringList{QStringLiteral("r")});
}

void TestCurvesView::aRunKeepsItsColourAcrossCharts()
{
    CurvesView view;
    view.addRun(QStringLiteral("deep"), QStringLiteral("deep 6x8"), 2e6);
    view.addRun(QStringLiteral("wide"), QStringLiteral("wide 1x48"), 2.1e6);
    for (const QString& run : {QStringLiteral("deep"), QStringLiteral("wide")}) {
        view.appendPoints(run, QStringLiteral("loss"), ramp(5));
        view.appendPoints(run, QStringLiteral("validation_loss"), ramp(2));
        view.appendPoints(run, QStringLiteral("accuracy"), ramp(5, 0.1));
        view.appendPoints(run, QStringLiteral("learning_rate"), ramp(5, 1e-4));
    }
    // Later appends do not change it either.
    view.appendPoints(QStringLiteral("deep"), QStringLiteral("loss"), ramp(3));

    const QColor deep = palette::seriesColor(0);
    const QColor wide = palette::seriesColor(1);
    QCOMPARE(view.runColor(QStringLiteral("deep")), deep);
    QCOMPARE(view.runColor(QStringLiteral("wide")), wide);
    QCOMPARE(view.chart(QStringLiteral("loss"))->seriesColor(QStringLiteral("deep"), QStringLiteral("loss")), deep);
    QCOMPARE(view.chart(QStringLiteral("loss"))->seriesColor(QStringLiteral("deep"), QStringLiteral("validation_loss")),
             deep);
    QCOMPARE(view.chart(QStringLiteral("accuracy"))->seriesColor(QStringLiteral("deep"), QStringLiteral("accuracy")),
             deep);
    QCOMPARE(view.chart(QStringLiteral("learning_rate"))
                 ->seriesColor(QStringLiteral("deep"), QStringLiteral("learning_rate")),
             deep);
    QCOMPARE(view.chart(QStringLiteral("loss"))->seriesColor(QStringLiteral("wide"), QStringLiteral("loss")), wide);
    QCOMPARE(view.chart(QStringLiteral("accuracy"))->seriesColor(QStringLiteral("wide"), QStringLiteral("accuracy")),
             wide);
    // Train solid, validation dashed.
    QCOMPARE(view.chart(QStringLiteral("loss"))->seriesPenStyle(QStringLiteral("wide"), QStringLiteral("loss")),
             Qt::SolidLine);
    QCOMPARE(
        view.chart(QStringLiteral("loss"))->seriesPenStyle(QStringLiteral("wide"), QStringLiteral("validation_loss")),
        Qt::DashLine);

    // Adding a known run again keeps its colour and updates its label.
    view.addRun(QStringLiteral("deep"), QStringLiteral("deep 6x8 (resumed)"), 2e6);
    QCOMPARE(view.runColor(QStringLiteral("deep")), deep);
    QCOMPARE(view.chart(QStringLiteral("loss"))->lineGraph(QStringLiteral("deep"), QStringLiteral("loss"))->name(),
             QStringLiteral("deep 6x8 (resumed) · train"));
    QCOMPARE(view.runs(), (QStringList{QStringLiteral("deep"), QStringLiteral("wide")}));
}

void TestCurvesView::removedRunsFreeTheirColour()
{
    CurvesView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("a"), 0);
    view.addRun(QStringLiteral("b"), QStringLiteral("b"), 0);
    view.addRun(QStringLiteral("c"), QStringLiteral("c"), 0);
    view.removeRun(QStringLiteral("a"));
    view.addRun(QStringLiteral("d"), QStringLiteral("d"), 0);
    QCOMPARE(view.runs(), (QStringList{QStringLiteral("b"), QStringLiteral("c"), QStringLiteral("d")}));
    QCOMPARE(view.runColor(QStringLiteral("d")), palette::seriesColor(0));  // a's, now free
    QCOMPARE(view.runColor(QStringLiteral("b")), palette::seriesColor(1));
    QVERIFY(!view.runColor(QStringLiteral("a")).isValid());
    for (const QString& key : kChartKeys)
        QVERIFY(!view.chart(key)->hasRun(QStringLiteral("a")));

    // With every colour taken, the next run shares the first one.
    CurvesView full;
    for (int i = 0; i < palette::seriesCount(); ++i)
        full.addRun(QString::number(i), QString::number(i), 0);
    full.addRun(QStringLiteral("extra"), QStringLiteral("extra"), 0);
    QCOMPARE(full.runColor(QStringLiteral("extra")), palette::seriesColor(0));
}

void TestCurvesView::clearRunEmptiesEveryChart()
{
    CurvesView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("a"), 0);
    view.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), ramp(4));
    view.appendPoints(QStringLiteral("a"), QStringLiteral("gradient_norm"), ramp(4));
    view.clearRun(QStringLiteral("a"));
    QVERIFY(view.chart(QStringLiteral("loss"))->points(QStringLiteral("a"), QStringLiteral("loss")).isEmpty());
    QVERIFY(view.chart(QStringLiteral("gradient_norm"))
                ->points(QStringLiteral("a"), QStringLiteral("gradient_norm"))
                .isEmpty());
    QCOMPARE(view.runs(), QStringList{QStringLiteral("a")});
    view.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), ramp(2));
    QCOMPARE(view.chart(QStringLiteral("loss"))->points(QStringLiteral("a"), QStringLiteral("loss")).size(), 2);
}

void TestCurvesView::controlsReachEveryChart()
{
    CurvesView view;
    auto* slider = view.findChild<QSlider*>(QStringLiteral("smoothingSlider"));
    auto* value = view.findChild<QLabel*>(QStringLiteral("smoothingValue"));
    auto* log = view.findChild<QCheckBox*>(QStringLiteral("logScaleCheck"));
    auto* xAxis = view.findChild<QComboBox*>(QStringLiteral("xAxisCombo"));
    QVERIFY(slider && value && log && xAxis);

    // TensorBoard's default weight to start with.
    QCOMPARE(view.smoothing(), 0.6);
    QCOMPARE(value->text(), QStringLiteral("0.600"));

    slider->setValue(250);
    QCOMPARE(value->text(), QStringLiteral("0.250"));
    for (const QString& key : kChartKeys)
        QCOMPARE(view.chart(key)->smoothing(), 0.25);
    slider->setValue(slider->maximum());
    QCOMPARE(view.chart(QStringLiteral("loss"))->smoothing(), 0.999);
    view.setSmoothing(0);
    QCOMPARE(slider->value(), 0);
    QCOMPARE(view.chart(QStringLiteral("tokens_per_second"))->smoothing(), 0.0);

    log->setChecked(true);
    for (const QString& key : kChartKeys)
        QVERIFY(view.chart(key)->logScale());
    QVERIFY(view.logScale());
    view.setLogScale(false);
    QVERIFY(!log->isChecked());
    QVERIFY(!view.chart(QStringLiteral("accuracy"))->logScale());

    QCOMPARE(xAxis->count(), 3);
    xAxis->setCurrentIndex(xAxis->findText(QStringLiteral("Parameters")));
    for (const QString& key : kChartKeys)
        QCOMPARE(view.chart(key)->xAxisMode(), CurvePlot::XAxisMode::Parameters);
    xAxis->setCurrentIndex(xAxis->findText(QStringLiteral("Time")));
    QCOMPARE(view.chart(QStringLiteral("balance_loss"))->xAxisMode(), CurvePlot::XAxisMode::Time);
    view.setXAxisMode(CurvePlot::XAxisMode::Step);
    QCOMPARE(xAxis->currentText(), QStringLiteral("Step"));
    QCOMPARE(view.chart(QStringLiteral("loss"))->xAxisMode(), CurvePlot::XAxisMode::Step);
}

void TestCurvesView::resetButtonFitsEveryChart()
{
    CurvesView view;
    view.resize(1200, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.addRun(QStringLiteral("a"), QStringLiteral("a"), 0);
    view.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), ramp(101));            // steps 0..100
    view.appendPoints(QStringLiteral("a"), QStringLiteral("learning_rate"), ramp(51));    // steps 0..50
    for (const QString& key : {QStringLiteral("loss"), QStringLiteral("learning_rate")}) {
        view.chart(key)->refreshNow();
        view.chart(key)->xAxis->setRange(10, 20);
    }
    QTest::mouseClick(view.findChild<QPushButton*>(QStringLiteral("resetViewButton")), Qt::LeftButton);
    QCOMPARE(view.chart(QStringLiteral("loss"))->xAxis->range().upper, 100.0);
    QCOMPARE(view.chart(QStringLiteral("learning_rate"))->xAxis->range().upper, 50.0);
    QCOMPARE(view.chart(QStringLiteral("learning_rate"))->xAxis->range().lower, 0.0);
}

void TestCurvesView::everyControlHasAnAccessibleName()
{
    CurvesView view;
    const QList<QWidget*> controls{
        view.findChild<QSlider*>(QStringLiteral("smoothingSlider")),
        view.findChild<QLabel*>(QStringLiteral("smoothingValue")),
        view.findChild<QCheckBox*>(QStringLiteral("logScaleCheck")),
        view.findChild<QComboBox*>(QStringLiteral("xAxisCombo")),
        view.findChild<QPushButton*>(QStringLiteral("resetViewButton")),
        view.findChild<QToolButton*>(QStringLiteral("exportButton")),
    };
    for (QWidget* control : controls) {
        QVERIFY(control != nullptr);
        QVERIFY2(!control->accessibleName().isEmpty(), qPrintable(control->objectName()));
    }
    for (const QString& key : kChartKeys)
        QVERIFY(!view.chart(key)->accessibleName().isEmpty());
    // The export button's menu offers every chart shown (no BLEU chart without a translation run).
    QCOMPARE(visibleActions(view), 6);
}

void TestCurvesView::clickingAChartMakesItCurrent()
{
    CurvesView view;
    view.resize(1200, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    CurvePlot* accuracy = view.chart(QStringLiteral("accuracy"));
    QTest::mouseClick(accuracy, Qt::LeftButton, Qt::NoModifier, accuracy->rect().center());
    QCOMPARE(view.currentChart(), accuracy);
    const QString tip = view.findChild<QToolButton*>(QStringLiteral("exportButton"))->toolTip();
    QVERIFY(tip.contains(QStringLiteral("Accuracy")));
}

void TestCurvesView::smoothingAtMaxLeavesTheLearningRateAsLogged()
{
    CurvesView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("a"), 0);
    // A warm-up to 3e-4 then a cosine-like decay, as the trainer logs it.
    const QVector<double> lr{0, 1e-4, 2e-4, 3e-4, 2.8e-4, 2.2e-4, 1.4e-4, 6e-5, 1e-5};
    QVector<CurvePoint> points;
    for (qsizetype i = 0; i < lr.size(); ++i)
        points.append({double(10 * i), double(i), lr[i]});
    view.appendPoints(QStringLiteral("a"), QStringLiteral("learning_rate"), points);
    view.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), ramp(9));
    view.appendPoints(QStringLiteral("a"), QStringLiteral("gradient_norm"), ramp(9));
    view.setSmoothing(0.999);
    QCOMPARE(view.smoothing(), 0.999);

    CurvePlot* chart = view.chart(QStringLiteral("learning_rate"));
    chart->refreshNow();
    const QVector<QPointF> drawn = chart->displayedPoints(QStringLiteral("a"), QStringLiteral("learning_rate"));
    QCOMPARE(drawn.size(), lr.size());
    for (qsizetype i = 0; i < lr.size(); ++i)
        QCOMPARE(drawn[i], QPointF(double(10 * i), lr[i]));
    QCOMPARE(chart->displayedRawPointCount(QStringLiteral("a"), QStringLiteral("learning_rate")), 0);

    // The noisy series are smoothed, and their raw values stay drawn, faintly, under the smoothed line.
    for (const QString& metric : {QStringLiteral("loss"), QStringLiteral("gradient_norm")}) {
        CurvePlot* noisy = view.chart(metric);
        noisy->refreshNow();
        QVERIFY2(noisy->displayedPoints(QStringLiteral("a"), metric).last().y() < 9, qPrintable(metric));  // ramp ends at 9
        QCOMPARE(noisy->displayedRawPointCount(QStringLiteral("a"), metric), 9);
        QCPGraph* raw = noisy->rawGraph(QStringLiteral("a"), metric);
        QVERIFY(raw->visible());
        QVERIFY(raw->pen().color().alpha() < noisy->lineGraph(QStringLiteral("a"), metric)->pen().color().alpha());
        QVERIFY(noisy->layer(QStringLiteral("faint"))->index() < noisy->layer(QStringLiteral("main"))->index());
        QCOMPARE(raw->layer(), noisy->layer(QStringLiteral("faint")));
    }
}

void TestCurvesView::validationPointsAreMarkersAtTheirValues()
{
    CurvesView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("a"), 0);
    view.setSmoothing(0.9);
    const QVector<CurvePoint> lossCheck{{0, 0, 2.71}, {100, 30, 1.93}, {200, 60, 1.62}};
    const QVector<CurvePoint> accuracyCheck{{0, 0, 0.1}, {100, 30, 0.55}, {200, 60, 0.625}};
    view.appendPoints(QStringLiteral("a"), QStringLiteral("validation_loss"), lossCheck);
    view.appendPoints(QStringLiteral("a"), QStringLiteral("validation_accuracy"), accuracyCheck);
    const QList<QPair<QString, QVector<CurvePoint>>> cases{{QStringLiteral("validation_loss"), lossCheck},
                                                         {QStringLiteral("validation_accuracy"), accuracyCheck}};
    for (const auto& [metric, logged] : cases) {
        CurvePlot* chart = view.chart(view.chartKeyForMetric(metric));
        chart->refreshNow();
        QCOMPARE(chart->seriesStyle(metric), CurvePlot::SeriesStyle::Markers);
        const QVector<QPointF> drawn = chart->displayedPoints(QStringLiteral("a"), metric);
        QCOMPARE(drawn.size(), logged.size());
        for (qsizetype i = 0; i < logged.size(); ++i)
            QCOMPARE(drawn[i], QPointF(logged[i].step, logged[i].value));
        QVERIFY(chart->lineGraph(QStringLiteral("a"), metric)->scatterStyle().shape() != QCPScatterStyle::ssNone);
    }
}

void TestCurvesView::balanceChartLeavesOutRunsWithoutExperts()
{
    CurvesView view;
    CurvePlot* balance = view.chart(QStringLiteral("balance_loss"));
    view.addRun(QStringLiteral("moe"), QStringLiteral("moe 4 experts"), 0);
    view.addRun(QStringLiteral("dense"), QStringLiteral("dense"), 0);
    view.addRun(QStringLiteral("wide"), QStringLiteral("wide"), 0);
    view.setRunTraits(QStringLiteral("dense"), {false});
    view.setRunTraits(QStringLiteral("wide"), {false});
    QVERIFY(view.runTraits(QStringLiteral("moe")).hasExperts);
    QVERIFY(!view.runTraits(QStringLiteral("dense")).hasExperts);
    // The trainer logs zeros for a dense model: they must not be drawn as a balance loss.
    for (const QString& run : view.runs())
        view.appendPoints(run, QStringLiteral("balance_loss"),
                          run == QStringLiteral("moe") ? ramp(5, 0.01) : QVector<CurvePoint>(5, CurvePoint{}));
    QCOMPARE(balance->runs(), QStringList{QStringLiteral("moe")});
    QVERIFY(balance->points(QStringLiteral("dense"), QStringLiteral("balance_loss")).isEmpty());
    QCOMPARE(balance->points(QStringLiteral("moe"), QStringLiteral("balance_loss")).size(), 5);
    // The note names the runs left out.
    QVERIFY(balance->note().contains(QStringLiteral("dense")));
    QVERIFY(balance->note().contains(QStringLiteral("wide")));
    QVERIFY(!balance->note().contains(QStringLiteral("moe")));
    balance->refreshNow();
    QVERIFY(!balance->noteCentred());
    // Every other chart still shows all three.
    QCOMPARE(view.chart(QStringLiteral("loss"))->runs().size(), 3);

    // Adding a run again (as the window does on reload) keeps it out; removing it drops it from the note.
    view.addRun(QStringLiteral("dense"), QStringLiteral("dense"), 0);
    QVERIFY(!balance->hasRun(QStringLiteral("dense")));
    view.removeRun(QStringLiteral("wide"));
    QVERIFY(!balance->note().contains(QStringLiteral("wide")));
    // Told it has experts after all, the run is back in the chart and off the note.
    view.setRunTraits(QStringLiteral("dense"), {true});
    QVERIFY(balance->hasRun(QStringLiteral("dense")));
    QVERIFY(balance->note().isEmpty());
}

void TestCurvesView::balanceChartOfAModelWithoutExpertsSaysWhyItIsEmpty()
{
    CurvesView view;
    view.resize(1200, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    CurvePlot* balance = view.chart(QStringLiteral("balance_loss"));
    view.addRun(QStringLiteral("dense"), QStringLiteral("dense"), 0);
    view.setRunTraits(QStringLiteral("dense"), {false});
    view.appendPoints(QStringLiteral("dense"), QStringLiteral("balance_loss"), QVector<CurvePoint>(5, CurvePoint{}));
    view.appendPoints(QStringLiteral("dense"), QStringLiteral("loss"), ramp(5));
    balance->refreshNow();
    QVERIFY(balance->runs().isEmpty());
    QCOMPARE(balance->note(), QStringLiteral("No experts in this model: no balance loss"));
    QVERIFY(balance->noteCentred());
    // No zeros drawn, no legend.
    QCOMPARE(balance->graphCount() > 0 ? balance->graph(0)->dataCount() : 0, 0);
    QCOMPARE(balance->legendEntries().size(), 0);

    // A second run without experts: the note speaks of the runs.
    view.addRun(QStringLiteral("wide"), QStringLiteral("wide"), 0);
    view.setRunTraits(QStringLiteral("wide"), {false});
    QCOMPARE(balance->note(), QStringLiteral("No run here has experts: no balance loss"));
}

void TestCurvesView::legendsOfFiveRunsStayOffTheData()
{
    CurvesView view;
    view.resize(1366, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    for (int r = 0; r < 5; ++r) {
        const QString id = QStringLiteral("widenet-compare-%1-20261124-031500").arg(r);
        view.addRun(id, id, 1e6 * (r + 1));
        view.appendPoints(id, QStringLiteral("loss"), ramp(200, 0.01 * (r + 1)));
        view.appendPoints(id, QStringLiteral("validation_loss"), ramp(4, 0.5 * (r + 1)));
        view.appendPoints(id, QStringLiteral("learning_rate"), ramp(200, 1e-6));
    }
    for (const QString& key : {QStringLiteral("loss"), QStringLiteral("learning_rate")}) {
        CurvePlot* chart = view.chart(key);
        chart->refreshNow();
        chart->replot();
        // Loss: five runs and a key for train and validation, not ten entries.
        QCOMPARE(chart->legendEntries().size(), key == QStringLiteral("loss") ? 7 : 5);
        const QRect data = chart->axisRect()->outerRect();
        for (const QCPAbstractLegendItem* item : chart->legendEntries()) {
            const QRect entry = item->outerRect();
            QVERIFY2(!entry.intersects(data), qPrintable(key));
            QVERIFY2(chart->rect().contains(entry), qPrintable(key));
        }
        // The data keeps most of the chart.
        QVERIFY2(data.height() > chart->height() / 2, qPrintable(key));
    }
}

void TestCurvesView::aClickedPointOfAnyChartNamesItsStep()
{
    CurvesView view;
    view.resize(1200, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.addRun(QStringLiteral("a"), QStringLiteral("A"), 0);
    view.appendPoints(QStringLiteral("a"), QStringLiteral("gradient_norm"), ramp(20));  // steps 0..19, value step + 1
    CurvePlot* plot = view.chart(QStringLiteral("gradient_norm"));
    view.setSmoothing(0);
    plot->refreshNow();
    QSignalSpy clicked(&view, &CurvesView::stepClicked);
    const QPoint at(int(std::lround(plot->xAxis->coordToPixel(12))), int(std::lround(plot->yAxis->coordToPixel(13))));
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(clicked.size(), 1);
    QCOMPARE(clicked.front().front().toLongLong(), 12);
}

void TestCurvesView::theCursorStepReachesEveryChart()
{
    CurvesView view;
    QCOMPARE(view.cursorStep(), -1);
    view.setCursorStep(250);
    QCOMPARE(view.cursorStep(), 250);
    for (const QString& key : kChartKeys) {
        QCOMPARE(view.chart(key)->cursorStep(), 250);
        QVERIFY(view.chart(key)->cursorShown());
    }
    view.setCursorStep(-1);
    for (const QString& key : kChartKeys)
        QVERIFY(!view.chart(key)->cursorShown());
}

void TestCurvesView::thePointerDrawsACrosshairOnEveryChartAndTabulatesTheValuesThere()
{
    CurvesView view;
    view.resize(1200, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSmoothing(0);  // the values as logged
    view.addRun(QStringLiteral("a"), QStringLiteral("A"), 0);
    view.addRun(QStringLiteral("b"), QStringLiteral("B"), 0);
    const auto at = [](double step, double value) { return CurvePoint{step, step, value}; };
    view.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), {at(0, 3), at(10, 2), at(20, 1)});
    view.appendPoints(QStringLiteral("a"), QStringLiteral("validation_loss"), {at(10, 2.5)});
    view.appendPoints(QStringLiteral("a"), QStringLiteral("learning_rate"), {at(0, 0.001), at(20, 0.002)});
    view.appendPoints(QStringLiteral("b"), QStringLiteral("loss"), {at(0, 4), at(10, 3.5)});
    QVERIFY(!view.valuesShown());
    view.setValuesShown(true);
    QVERIFY(view.findChild<QWidget*>(QStringLiteral("valuesPanel"))->isVisible());

    // The pointer over the loss chart near step 15 (snapped to the step).
    CurvePlot* loss = view.chart(QStringLiteral("loss"));
    loss->refreshNow();
    const QPoint pointer(int(std::lround(loss->xAxis->coordToPixel(15.2))), loss->axisRect()->center().y());
    QTest::mouseMove(loss, pointer);
    for (const QString& key : kChartKeys) {
        QVERIFY2(view.chart(key)->crosshairShown() || !view.chart(key)->isVisible(), qPrintable(key));
        QCOMPARE(view.chart(key)->crosshair(), 15.0);
    }
    QCOMPARE(view.valuesTitle(), QStringLiteral("At step 15"));
    QCOMPARE(view.valuesRowCount(), 2);
    // Each value the last one logged at or before step 15.
    QCOMPARE(view.valuesCell(0, QStringLiteral("Run")), QStringLiteral("A"));
    QCOMPARE(view.valuesCell(0, QStringLiteral("Loss · train")), QStringLiteral("2"));
    QCOMPARE(view.valuesCell(0, QStringLiteral("Loss · validation")), QStringLiteral("2.5"));
    QCOMPARE(view.valuesCell(0, QStringLiteral("Learning rate")), QStringLiteral("0.001"));
    QCOMPARE(view.valuesCell(1, QStringLiteral("Loss · train")), QStringLiteral("3.5"));
    QCOMPARE(view.valuesCell(1, QStringLiteral("Loss · validation")), QString());  // B logged none
    // No column for what no run has there.
    QCOMPARE(view.findChild<QTableWidget*>(QStringLiteral("valuesTable"))->columnCount(), 4);

    // Before any point: no value, no column but the run's.
    view.showValuesAt(-5);
    QCOMPARE(view.valuesTitle(), QStringLiteral("At step -5"));
    QCOMPARE(view.findChild<QTableWidget*>(QStringLiteral("valuesTable"))->columnCount(), 1);
    // The pointer leaves: the lines go, the table stays to be read.
    view.showValuesAt(20);
    view.showValuesAt(std::numeric_limits<double>::quiet_NaN());
    for (const QString& key : kChartKeys)
        QVERIFY(!view.chart(key)->crosshairShown());
    QCOMPARE(view.valuesTitle(), QStringLiteral("At step 20"));
    QCOMPARE(view.valuesCell(0, QStringLiteral("Loss · train")), QStringLiteral("1"));
}

void TestCurvesView::theFirstRunsBlueIsReadableOnADarkTheme()
{
    CurvesView view;
    QPalette light = view.palette();
    light.setColor(QPalette::Base, Qt::white);
    view.setPalette(light);
    view.addRun(QStringLiteral("a"), QStringLiteral("A"), 0);
    view.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), ramp(5));
    // Light: Okabe and Ito's blue as it is (5.2:1 on white).
    QCOMPARE(view.runColor(QStringLiteral("a")), QColor(0x00, 0x72, 0xb2));
    QVERIFY(palette::contrastRatio(view.runColor(QStringLiteral("a")), Qt::white) > 4.5);
    // A dark base (#2d2d2d): that blue contrasts 2.7:1, below WCAG's 3:1 for graphics.
    const QColor darkBase(0x2d, 0x2d, 0x2d);
    QVERIFY(palette::contrastRatio(QColor(0x00, 0x72, 0xb2), darkBase) < 3.0);
    QPalette dark = view.palette();
    dark.setColor(QPalette::Base, darkBase);
    view.setPalette(dark);
    const QColor onDark = view.runColor(QStringLiteral("a"));
    QVERIFY2(palette::contrastRatio(onDark, darkBase) >= 3.0, qPrintable(onDark.name()));
    QVERIFY(onDark.hueF() > 0.5 && onDark.hueF() < 0.65);  // still a blue
    // The charts drew it again in the new colour.
    QCOMPARE(view.chart(QStringLiteral("loss"))->seriesColor(QStringLiteral("a"), QStringLiteral("loss")), onDark);
    // Colours that read well on the dark base stay as they are (orange, 6.1:1).
    QCOMPARE(palette::seriesColor(1, dark), palette::seriesColor(1));
}

void TestCurvesView::anyMetricGetsAChartOfItsOwnWithTheRunsAndSettings()
{
    CurvesView view;
    view.resize(1200, 800);
    view.addRun(QStringLiteral("a"), QStringLiteral("run a"), 1e6);
    view.addRun(QStringLiteral("b"), QStringLiteral("run b"), 2e6);
    view.setLogScale(true);
    view.setSmoothing(0.25);
    const QString entropy = QStringLiteral("routing/block_2/router_entropy");
    view.appendPoints(QStringLiteral("a"), entropy, ramp(3));  // no chart yet: dropped
    QVERIFY(view.chartKeyForMetric(entropy).isEmpty());
    QSignalSpy added(&view, &CurvesView::metricChartAdded);
    QSignalSpy changed(&view, &CurvesView::metricChartsChanged);
    QVERIFY(view.addMetricChart(entropy));
    QVERIFY(!view.addMetricChart(entropy));  // once
    QVERIFY(!view.addMetricChart(QStringLiteral("loss")));  // a fixed chart's
    QCOMPARE(added.size(), 1);
    QCOMPARE(changed.size(), 1);
    QCOMPARE(changed.front().front().toStringList(), QStringList{entropy});
    CurvePlot* chart = view.chart(entropy);
    QVERIFY(chart);
    QCOMPARE(chart->title(), entropy);
    // It draws every run in its colour, with the view's settings, and takes their points from now on.
    QCOMPARE(chart->runs(), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
    QCOMPARE(chart->smoothing(), 0.25);
    QVERIFY(chart->logScale());
    view.appendPoints(QStringLiteral("b"), entropy, ramp(4));
    QCOMPARE(view.chartKeyForMetric(entropy), entropy);
    QCOMPARE(chart->points(QStringLiteral("b"), entropy).size(), 4);
    QCOMPARE(view.metricCharts(), QStringList{entropy});
    view.addRun(QStringLiteral("c"), QStringLiteral("run c"), 1e6);  // a run added later joins it
    QVERIFY(chart->runs().contains(QStringLiteral("c")));
    // A measured split's metric is drawn as markers at its values.
    const QString perplexity = QStringLiteral("validation/perplexity");
    QVERIFY(view.addMetricChart(perplexity));
    QVERIFY(view.chart(perplexity)->seriesStyle(perplexity) == CurvePlot::SeriesStyle::Markers);
    QVERIFY(chart->seriesStyle(entropy) == CurvePlot::SeriesStyle::Smoothed);
    QCOMPARE(visibleActions(view), 6 + 2);  // offered for export too
}

void TestCurvesView::aMetricChartIsRemovedAndTheOthersKeepTheirPoints()
{
    CurvesView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("run a"), 1e6);
    const QString first = QStringLiteral("memory/cpu/bytes"), second = QStringLiteral("time/step_seconds");
    view.setMetricCharts({first, second});
    QCOMPARE(view.metricCharts(), (QStringList{first, second}));
    view.appendPoints(QStringLiteral("a"), first, ramp(2));
    view.appendPoints(QStringLiteral("a"), second, ramp(5));
    view.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), ramp(3));
    QSignalSpy changed(&view, &CurvesView::metricChartsChanged);
    view.removeMetricChart(first);
    QCOMPARE(changed.size(), 1);
    QVERIFY(!view.chart(first));
    QCOMPARE(view.metricCharts(), QStringList{second});
    // The metric after it still lands in its own chart, the fixed ones in theirs.
    view.appendPoints(QStringLiteral("a"), second, ramp(1));
    QCOMPARE(view.chart(second)->points(QStringLiteral("a"), second).size(), 6);
    QCOMPARE(view.chart(QStringLiteral("loss"))->points(QStringLiteral("a"), QStringLiteral("loss")).size(), 3);
    view.removeMetricChart(QStringLiteral("loss"));  // the fixed charts stay
    QVERIFY(view.chart(QStringLiteral("loss")));
    view.setMetricCharts({});
    QCOMPARE(view.metricCharts(), QStringList());
    QCOMPARE(view.chartKeys(), kChartKeys);
}

void TestCurvesView::theChooserKeepsTheChartedOrderAndFilters()
{
    const QStringList available{QStringLiteral("routing/block_1/z_loss"), QStringLiteral("memory/cpu/bytes"),
                                QStringLiteral("routing/block_2/z_loss")};
    MetricChooser chooser(available, {QStringLiteral("routing/block_2/z_loss"), QStringLiteral("gone/metric")});
    chooser.setFilter(QStringLiteral("ROUTING z"));
    QCOMPARE(chooser.visibleCount(), 2);
    chooser.setTicked(QStringLiteral("memory/cpu/bytes"), true);
    chooser.setTicked(QStringLiteral("routing/block_1/z_loss"), true);
    // Those charted first, in their order (one no run writes now is kept), then the new in the list's order.
    QCOMPARE(chooser.chosen(), (QStringList{QStringLiteral("routing/block_2/z_loss"), QStringLiteral("gone/metric"),
                                            QStringLiteral("memory/cpu/bytes"), QStringLiteral("routing/block_1/z_loss")}));
    chooser.setTicked(QStringLiteral("routing/block_2/z_loss"), false);
    QCOMPARE(chooser.chosen().first(), QStringLiteral("gone/metric"));
}

QTEST_MAIN(TestCurvesView)
#include "tst_curvesview.moc"
