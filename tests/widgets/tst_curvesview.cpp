// Tests CurvesView: metric routing, one colour per run in every chart, and the
// shared controls reaching every chart.
#include "CurvesView.h"
#include "Palette.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QToolButton>
#include <QtTest>

using widelab::CurvePlot;
using widelab::CurvePoint;
using widelab::CurvesView;
namespace palette = widelab::palette;

namespace {

QVector<CurvePoint> ramp(int count, double scale = 1.0)
{
    QVector<CurvePoint> points;
    for (int i = 0; i < count; ++i)
        points.append({double(i), 0.5 * i, scale * (i + 1)});
    return points;
}

const QStringList kChartKeys{QStringLiteral("loss"),          QStringLiteral("accuracy"),
                             QStringLiteral("balance_loss"),  QStringLiteral("learning_rate"),
                             QStringLiteral("gradient_norm"), QStringLiteral("tokens_per_second")};

}  // namespace

class TestCurvesView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hasTheSixCharts();
    void metricsGoToTheirCharts();
    void unknownMetricsAndRunsAreIgnored();
    void aRunKeepsItsColourAcrossCharts();
    void removedRunsFreeTheirColour();
    void clearRunEmptiesEveryChart();
    void controlsReachEveryChart();
    void resetButtonFitsEveryChart();
    void everyControlHasAnAccessibleName();
    void clickingAChartMakesItCurrent();
};

void TestCurvesView::hasTheSixCharts()
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
    // The export button's menu offers every chart.
    QCOMPARE(view.findChild<QToolButton*>(QStringLiteral("exportButton"))->menu()->actions().size(), 6);
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

QTEST_MAIN(TestCurvesView)
#include "tst_curvesview.moc"
