// Tests CurvePlot: what it hands QCustomPlot (smoothing, decimation, log scale,
// modes), its view fitting, hover read-out, coalesced replots and exports, a
// click naming a point's step and the step cursor.
#include "curves/CurvePlot.h"

#include <QtTest>

#include <cmath>
#include <limits>

using widelab::CurvePlot;
using widelab::CurvePoint;

namespace {

const QColor kBlue(0, 114, 178);
const QColor kOrange(230, 159, 0);

// Points at steps 0, 1, 2, ... with the given values, two seconds per step.
QVector<CurvePoint> pointsOf(const QVector<double>& values)
{
    QVector<CurvePoint> points;
    for (qsizetype i = 0; i < values.size(); ++i)
        points.append({static_cast<double>(i), 2.0 * static_cast<double>(i), values[i]});
    return points;
}

QVector<CurvePoint> constant(double value, int count)
{
    return pointsOf(QVector<double>(count, value));
}

// A shown plot of a known size, so the axis rect has a known pixel width.
void showPlot(CurvePlot& plot)
{
    plot.resize(600, 400);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
}

bool near(double a, double b, double tolerance = 1e-9) { return std::abs(a - b) <= tolerance; }

}  // namespace

class TestCurvePlot : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void smoothedLineIsTheDebiasedEmaAndRawStaysFaint();
    void hundredThousandPointsAreKeptButDecimatedForDisplay();
    void zoomingInShowsEveryPointOfTheRange();
    void appendsAreCoalescedIntoOneReplot();
    void logScaleSwitchesTheAxisAndSkipsNonPositiveValues();
    void logTicksFollowOneTwoThreeFive();
    void legendStaysOutOfThePlotArea();
    void exactSeriesIgnoresSmoothing();
    void markersShowTheExactValidationValues();
    void aNoteExplainsAnEmptyChart();
    void denseLinesAreDrawnThin();
    void resetViewFitsAllData();
    void doubleClickResetsTheView();
    void shiftDragZoomsToTheRubberBand();
    void hoverNamesTheNearestSeriesAndItsValues();
    void parametersModeDrawsOneMarkerPerRun();
    void timeModeSortsByTimeAndUsesAClockTicker();
    void seriesDifferByLineStyleAndRunsByColour();
    void hiddenSeriesLeaveTheLegendGreyAndTheCsvOut();
    void clickingALegendEntryTogglesItsSeries();
    void csvHoldsExactlyTheAppendedPoints();
    void csvReportsAnUnwritablePath();
    void imagesCarryTheRightMagic_data();
    void imagesCarryTheRightMagic();
    void imageExportRejectsUnknownSuffixes();
    void runsCanBeClearedAndRemoved();
    void aDarkPaletteGivesADarkChart();
    void clickingAPointNamesItsStep();
    void theCursorStepIsALineAtThatStep();
    // Damaged data (a metrics.jsonl written by hand): no nonsense range.
    void curvesLeaveValuesPastTheAxisLimitsOutOfTheFit();
};

void TestCurvePlot::smoothedLineIsTheDebiasedEmaAndRawStaysFaint()
{
    CurvePlot plot;
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({1, 2, 3}));
    plot.setSmoothing(0.5);
    plot.refreshNow();

    // Hand-computed (tst_curvemath): 1, 5/3, 17/7 at steps 0, 1, 2.
    const QVector<QPointF> line = plot.displayedPoints(QStringLiteral("a"), QStringLiteral("loss"));
    QCOMPARE(line.size(), 3);
    QCOMPARE(line[0], QPointF(0, 1));
    QCOMPARE(line[1].x(), 1.0);
    QVERIFY(near(line[1].y(), 5.0 / 3.0));
    QCOMPARE(line[2].x(), 2.0);
    QVERIFY(near(line[2].y(), 17.0 / 7.0));

    // The raw values stay on screen, in a lighter version of the run's colour.
    QCPGraph* raw = plot.rawGraph(QStringLiteral("a"), QStringLiteral("loss"));
    QVERIFY(raw->visible());
    QCOMPARE(plot.displayedRawPointCount(QStringLiteral("a"), QStringLiteral("loss")), 3);
    QCOMPARE(raw->data()->at(2)->value, 3.0);
    QCOMPARE(raw->pen().color().rgb(), kBlue.rgb());
    QVERIFY(raw->pen().color().alpha() < 128);
    QCOMPARE(plot.seriesColor(QStringLiteral("a"), QStringLiteral("loss")), kBlue);

    // Without smoothing the line is the raw series and the faint copy goes.
    plot.setSmoothing(0);
    plot.refreshNow();
    QCOMPARE(plot.displayedPoints(QStringLiteral("a"), QStringLiteral("loss")),
             (QVector<QPointF>{{0, 1}, {1, 2}, {2, 3}}));
    QCOMPARE(plot.displayedRawPointCount(QStringLiteral("a"), QStringLiteral("loss")), 0);

    // Clamped to 0.999.
    plot.setSmoothing(3);
    QCOMPARE(plot.smoothing(), 0.999);
}

void TestCurvePlot::hundredThousandPointsAreKeptButDecimatedForDisplay()
{
    CurvePlot plot;
    showPlot(plot);
    QVector<double> values;
    for (int i = 0; i < 100000; ++i)
        values.append(0.1 * (i % 7));
    values[54321] = 100;
    values[77777] = -50;
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf(values));
    plot.refreshNow();

    QCOMPARE(plot.points(QStringLiteral("a"), QStringLiteral("loss")).size(), 100000);
    // The view fits all the data, so the line is decimated to the axis rect's
    // width: at most two points per pixel column plus the column at the right
    // edge; the axis rect is narrower than the widget.
    const int width = plot.axisRect()->width();
    QVERIFY(width > 100 && width <= plot.width());
    const int shown = plot.displayedPointCount(QStringLiteral("a"), QStringLiteral("loss"));
    QVERIFY2(shown <= 2 * (width + 1), qPrintable(QStringLiteral("%1 points for %2 px").arg(shown).arg(width)));
    QVERIFY(shown <= 2 * plot.width() + 2);
    QVERIFY(shown >= width);  // and not fewer than one per column

    // The spike and the dip survive.
    bool spike = false, dip = false;
    for (const QPointF& p : plot.displayedPoints(QStringLiteral("a"), QStringLiteral("loss"))) {
        spike = spike || (p.x() == 54321 && p.y() == 100);
        dip = dip || (p.x() == 77777 && p.y() == -50);
    }
    QVERIFY(spike);
    QVERIFY(dip);
}

void TestCurvePlot::zoomingInShowsEveryPointOfTheRange()
{
    CurvePlot plot;
    showPlot(plot);
    QVector<double> values;
    for (int i = 0; i < 100000; ++i)
        values.append(std::sin(i * 0.01));
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf(values));
    plot.refreshNow();

    // Zoomed to steps 50000..50100, the display covers one view width either
    // side (49900..50200, 301 steps, far fewer than pixel columns) plus the
    // nearest point outside: all 303 points, exactly as stored.
    plot.xAxis->setRange(50000, 50100);
    plot.refreshNow();
    const QVector<QPointF> shown = plot.displayedPoints(QStringLiteral("a"), QStringLiteral("loss"));
    QCOMPARE(shown.size(), 303);
    QCOMPARE(shown.front().x(), 49899.0);
    QCOMPARE(shown.back().x(), 50201.0);
    for (const QPointF& p : shown)
        QCOMPARE(p.y(), std::sin(p.x() * 0.01));
}

void TestCurvePlot::appendsAreCoalescedIntoOneReplot()
{
    CurvePlot plot;
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    showPlot(plot);
    QTest::qWait(100);  // let the first refresh pass
    QSignalSpy replots(&plot, &QCustomPlot::afterReplot);
    for (int i = 0; i < 1000; ++i)
        plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), {{double(i), double(i), 1.0 / (i + 1)}});
    QCOMPARE(replots.count(), 0);  // nothing drawn per point
    QTRY_COMPARE_WITH_TIMEOUT(replots.count(), 1, 2000);
    QTest::qWait(150);
    QCOMPARE(replots.count(), 1);  // and nothing more once drawn: fitting the view does not loop
    QCOMPARE(plot.displayedPointCount(QStringLiteral("a"), QStringLiteral("loss")), 1000);
}

void TestCurvePlot::logScaleSwitchesTheAxisAndSkipsNonPositiveValues()
{
    CurvePlot plot;
    showPlot(plot);
    QSignalSpy toggled(&plot, &CurvePlot::logScaleChanged);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({2, 0, -1, 10, 0.5}));
    plot.setLogScale(true);
    plot.refreshNow();

    QCOMPARE(plot.yAxis->scaleType(), QCPAxis::stLogarithmic);
    QCOMPARE(toggled.count(), 1);
    QVERIFY(plot.logScale());
    // Fitted to the positive values 0.5 .. 10.
    QVERIFY(plot.yAxis->range().lower > 0);
    QVERIFY(plot.yAxis->range().lower <= 0.5);
    QVERIFY(plot.yAxis->range().upper >= 10);
    const QVector<QPointF> shown = plot.displayedPoints(QStringLiteral("a"), QStringLiteral("loss"));
    QCOMPARE(shown.size(), 5);
    QCOMPARE(shown[0].y(), 2.0);
    QVERIFY(std::isnan(shown[1].y()));
    QVERIFY(std::isnan(shown[2].y()));
    QCOMPARE(shown[3].y(), 10.0);
    // Drawing, hovering and exporting with gaps on a log axis do not crash.
    plot.replot();
    const QPoint zeroPixel(int(plot.xAxis->coordToPixel(1)), plot.axisRect()->bottom() - 2);
    const CurvePlot::Readout r = plot.readoutAt(zeroPixel);
    QVERIFY(r.valid);
    QVERIFY(r.raw > 0);  // the hover never lands on a value the axis cannot show
    QVERIFY(!plot.toPixmap().isNull());

    plot.setLogScale(false);
    plot.refreshNow();
    QCOMPARE(plot.yAxis->scaleType(), QCPAxis::stLinear);
    QVERIFY(plot.yAxis->range().lower <= -1);
    QCOMPARE(plot.displayedPoints(QStringLiteral("a"), QStringLiteral("loss"))[1].y(), 0.0);
}

void TestCurvePlot::logTicksFollowOneTwoThreeFive()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({10, 5, 2, 1, 0.5}));
    plot.setLogScale(true);
    plot.refreshNow();
    // Fitted to 0.5 .. 10 times/divided by 20^0.05 = 1.16: 0.43 .. 11.6, 1.43
    // decades, so ticks at 1, 2, 3, 5 times each power of ten inside it.
    QVERIFY(near(plot.yAxis->range().lower, 0.5 / std::pow(20.0, 0.05)));
    QVERIFY(near(plot.yAxis->range().upper, 10 * std::pow(20.0, 0.05)));
    QCOMPARE(plot.yAxis->tickVectorLabels(), (QVector<QString>{QStringLiteral("0.5"), QStringLiteral("1"),
                                                               QStringLiteral("2"), QStringLiteral("3"),
                                                               QStringLiteral("5"), QStringLiteral("10")}));
    QCOMPARE(plot.yAxis->tickVector(), (QVector<double>{0.5, 1, 2, 3, 5, 10}));
}

void TestCurvePlot::legendStaysOutOfThePlotArea()
{
    CurvePlot plot;
    showPlot(plot);
    plot.declareSeries(QStringLiteral("loss"), QStringLiteral("train"));
    plot.declareSeries(QStringLiteral("validation_loss"), QStringLiteral("validation"),
                       CurvePlot::SeriesStyle::Markers);
    // Five runs of a comparison, train and validation each: ten entries with long names.
    const QList<QColor> colors{kBlue, kOrange, Qt::darkGreen, Qt::magenta, Qt::darkCyan};
    for (int r = 0; r < 5; ++r) {
        const QString id = QString::number(r);
        plot.addRun(id, QStringLiteral("widenet-run-%1-20261124").arg(r), colors[r]);
        QVector<double> values;
        for (int i = 0; i < 50; ++i)
            values.append(5.0 / (1 + 0.1 * i) + 0.2 * r);
        plot.appendPoints(id, QStringLiteral("loss"), pointsOf(values));
        plot.appendPoints(id, QStringLiteral("validation_loss"), pointsOf({5.1 + r, 3.0 + r, 2.0 + r}));
    }
    // An odd count, so the wrapped grid has an empty cell.
    plot.appendPoints(QStringLiteral("0"), QStringLiteral("extra"), pointsOf({1, 2}));
    plot.refreshNow();
    plot.replot();
    QCOMPARE(plot.legendEntries().size(), 11);
    QVERIFY(plot.legend->visible());

    // Neither the legend nor any of its entries overlaps the axis rect, where the data is drawn.
    auto checkOutside = [&plot] {
        const QRect data = plot.axisRect()->outerRect();
        QVERIFY2(!plot.legend->outerRect().intersects(data), "legend over the plot area");
        for (const QCPAbstractLegendItem* item : plot.legendEntries()) {
            const QRect entry = item->outerRect();
            QVERIFY(!entry.intersects(data));
            QVERIFY(plot.rect().contains(entry));  // and each is on screen
        }
    };
    checkOutside();
    // Several entries share a row at 600 px, so the legend does not eat the chart's height.
    QVERIFY(plot.legendColumns() > 1);
    const int wideColumns = plot.legendColumns();
    QVERIFY(plot.axisRect()->rect().height() > plot.height() / 2);

    // Narrower: fewer columns, still outside.
    plot.resize(360, 400);
    plot.refreshNow();
    plot.replot();
    QVERIFY(plot.legendColumns() < wideColumns);
    checkOutside();

    // No data, no legend band: the axis rect takes the room back.
    CurvePlot empty;
    showPlot(empty);
    empty.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    empty.refreshNow();
    const int bottomWithout = empty.axisRect()->outerRect().bottom();
    empty.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({1, 2}));
    empty.refreshNow();
    QVERIFY(empty.axisRect()->outerRect().bottom() < bottomWithout);
    empty.clearRun(QStringLiteral("a"));
    empty.refreshNow();
    QCOMPARE(empty.axisRect()->outerRect().bottom(), bottomWithout);
}

void TestCurvePlot::exactSeriesIgnoresSmoothing()
{
    CurvePlot plot;
    showPlot(plot);
    plot.declareSeries(QStringLiteral("learning_rate"), QString(), CurvePlot::SeriesStyle::Exact);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    // Warm-up then decay: an EMA would round the corner and lag behind it.
    const QVector<double> schedule{0.0, 1e-4, 2e-4, 3e-4, 3e-4, 2e-4, 1e-4, 5e-5};
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("learning_rate"), pointsOf(schedule));
    plot.setSmoothing(0.999);
    plot.refreshNow();
    QCOMPARE(plot.seriesStyle(QStringLiteral("learning_rate")), CurvePlot::SeriesStyle::Exact);
    const QVector<QPointF> line = plot.displayedPoints(QStringLiteral("a"), QStringLiteral("learning_rate"));
    QCOMPARE(line.size(), schedule.size());
    for (qsizetype i = 0; i < schedule.size(); ++i)
        QCOMPARE(line[i], QPointF(double(i), schedule[i]));
    // No faint copy: the line is the raw series.
    QCOMPARE(plot.displayedRawPointCount(QStringLiteral("a"), QStringLiteral("learning_rate")), 0);
    // The read-out says value, not smoothed.
    const CurvePlot::Readout r = plot.readoutAt(
        QPointF(plot.xAxis->coordToPixel(3), plot.yAxis->coordToPixel(3e-4)));
    QVERIFY(r.valid);
    QVERIFY(!r.isSmoothed);
    QCOMPARE(r.smoothed, 3e-4);
    QCOMPARE(r.raw, 3e-4);

    // Declared Smoothed again, the same points are smoothed: the style is what decides.
    plot.declareSeries(QStringLiteral("learning_rate"), QString(), CurvePlot::SeriesStyle::Smoothed);
    plot.refreshNow();
    QVERIFY(plot.displayedPoints(QStringLiteral("a"), QStringLiteral("learning_rate")).last().y() != schedule.last());
    QCOMPARE(plot.displayedRawPointCount(QStringLiteral("a"), QStringLiteral("learning_rate")), schedule.size());
}

void TestCurvePlot::markersShowTheExactValidationValues()
{
    CurvePlot plot;
    showPlot(plot);
    plot.declareSeries(QStringLiteral("loss"), QStringLiteral("train"));
    plot.declareSeries(QStringLiteral("validation_loss"), QStringLiteral("validation"),
                       CurvePlot::SeriesStyle::Markers);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({4, 3.5, 3, 2.8, 2.5, 2.4, 2.2}));
    const QVector<CurvePoint> validation{{0, 0, 4.2}, {3, 6, 2.9}, {6, 12, 2.35}};
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("validation_loss"), validation);
    plot.setSmoothing(0.9);
    plot.refreshNow();

    // Each validation point is a marker at its logged value.
    QCOMPARE(plot.displayedPoints(QStringLiteral("a"), QStringLiteral("validation_loss")),
             (QVector<QPointF>{{0, 4.2}, {3, 2.9}, {6, 2.35}}));
    const QCPGraph* marked = plot.lineGraph(QStringLiteral("a"), QStringLiteral("validation_loss"));
    QVERIFY(marked->scatterStyle().shape() != QCPScatterStyle::ssNone);
    QVERIFY(marked->scatterStyle().size() >= 5);
    QCOMPARE(plot.displayedRawPointCount(QStringLiteral("a"), QStringLiteral("validation_loss")), 0);
    // The first and last markers are whole: inside the axis rect by their radius.
    const QRect area = plot.axisRect()->rect();
    QVERIFY(plot.xAxis->coordToPixel(0) - marked->scatterStyle().size() / 2 >= area.left());
    QVERIFY(plot.xAxis->coordToPixel(6) + marked->scatterStyle().size() / 2 <= area.right());
    // The train series beside it is smoothed, with its raw values faint behind.
    QVERIFY(plot.displayedPoints(QStringLiteral("a"), QStringLiteral("loss")).last().y() != 2.2);
    QCOMPARE(plot.displayedRawPointCount(QStringLiteral("a"), QStringLiteral("loss")), 7);

    // Hovering a marker reads its exact value; Parameters mode marks the last logged one.
    const QPoint at(qRound(plot.xAxis->coordToPixel(3)) + 1, qRound(plot.yAxis->coordToPixel(2.9)) + 1);
    QTest::mouseMove(&plot, at);
    const CurvePlot::Readout r = plot.hoverReadout();
    QCOMPARE(r.series, QStringLiteral("validation_loss"));
    QCOMPARE(r.smoothed, 2.9);
    QVERIFY(!r.isSmoothed);
    QVERIFY(plot.hoverText().contains(QStringLiteral("value 2.9")));
    QVERIFY(!plot.hoverText().contains(QStringLiteral("smoothed")));
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue, 1e6);
    plot.setXAxisMode(CurvePlot::XAxisMode::Parameters);
    plot.refreshNow();
    bool found = false;
    for (const CurvePlot::ParameterMarker& m : plot.parameterMarkers()) {
        if (m.series == QStringLiteral("validation_loss")) {
            QCOMPARE(m.value, 2.35);
            found = true;
        }
    }
    QVERIFY(found);
}

void TestCurvePlot::aNoteExplainsAnEmptyChart()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    const QString note = QStringLiteral("No experts in this model: no balance loss");
    plot.setNote(note);
    plot.refreshNow();
    QCOMPARE(plot.note(), note);
    // Nothing to draw: the note stands in the middle of the plot.
    QVERIFY(plot.noteCentred());
    QVERIFY(!plot.xAxis->visible());
    QVERIFY(!plot.yAxis->visible());
    bool shown = false;
    for (int i = 0; i < plot.itemCount(); ++i) {
        auto* text = qobject_cast<QCPItemText*>(plot.item(i));
        if (text && text->visible() && text->text() == note)
            shown = true;
    }
    QVERIFY(shown);

    // With data, it moves under the title, out of the data's way.
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({1, 2}));
    plot.refreshNow();
    QVERIFY(!plot.noteCentred());
    QVERIFY(plot.xAxis->visible());
    QVERIFY(plot.yAxis->visible());
    bool inLayout = false;
    for (int i = 0; i < plot.plotLayout()->elementCount(); ++i) {
        auto* text = qobject_cast<QCPTextElement*>(plot.plotLayout()->elementAt(i));
        if (text && text->text() == note)
            inLayout = true;
    }
    QVERIFY(inLayout);

    const int topWithNote = plot.axisRect()->outerRect().top();
    plot.setNote(QString());
    plot.refreshNow();
    QVERIFY(plot.axisRect()->outerRect().top() < topWithNote);
}

void TestCurvePlot::denseLinesAreDrawnThin()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({3, 2, 1}));
    plot.refreshNow();
    QCOMPARE(plot.lineGraph(QStringLiteral("a"), QStringLiteral("loss"))->pen().widthF(), 1.6);
    QVector<double> values;
    for (int i = 0; i < 5000; ++i)
        values.append(i % 2);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf(values));
    plot.refreshNow();
    QCOMPARE(plot.lineGraph(QStringLiteral("a"), QStringLiteral("loss"))->pen().widthF(), 1.0);
}

void TestCurvePlot::resetViewFitsAllData()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    QVector<CurvePoint> points;
    for (int i = 0; i <= 100; ++i)
        points.append({10.0 * i, double(i), i % 2 ? 5.0 : -2.0});
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), points);
    plot.refreshNow();
    // x exactly 0..1000; y -2..5 with 5 % of the span (0.35) either side.
    QCOMPARE(plot.xAxis->range().lower, 0.0);
    QCOMPARE(plot.xAxis->range().upper, 1000.0);
    QVERIFY(near(plot.yAxis->range().lower, -2.35));
    QVERIFY(near(plot.yAxis->range().upper, 5.35));

    // The user zooms: new data no longer moves the view.
    plot.xAxis->setRange(100, 200);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), {{2000, 200, 50}});
    plot.refreshNow();
    QCOMPARE(plot.xAxis->range().lower, 100.0);
    QCOMPARE(plot.xAxis->range().upper, 200.0);

    // Reset: all data, y -2..50 with 2.6 either side.
    plot.resetView();
    QCOMPARE(plot.xAxis->range().lower, 0.0);
    QCOMPARE(plot.xAxis->range().upper, 2000.0);
    QVERIFY(near(plot.yAxis->range().lower, -4.6));
    QVERIFY(near(plot.yAxis->range().upper, 52.6));
    // ... and follows new data again.
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), {{3000, 300, 1}});
    plot.refreshNow();
    QCOMPARE(plot.xAxis->range().upper, 3000.0);
}

void TestCurvePlot::doubleClickResetsTheView()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({4, 3, 2, 1}));
    plot.refreshNow();
    plot.xAxis->setRange(1, 2);
    QTest::mouseDClick(&plot, Qt::LeftButton, Qt::NoModifier, plot.axisRect()->center());
    QCOMPARE(plot.xAxis->range().lower, 0.0);
    QCOMPARE(plot.xAxis->range().upper, 3.0);
}

void TestCurvePlot::shiftDragZoomsToTheRubberBand()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf(QVector<double>(101, 1.0)));
    plot.refreshNow();
    const QRect area = plot.axisRect()->rect();
    const QPoint from = area.topLeft() + QPoint(area.width() / 4, area.height() / 4);
    const QPoint to = area.topLeft() + QPoint(area.width() / 2, area.height() * 3 / 4);
    const double xFrom = plot.xAxis->pixelToCoord(from.x());
    const double xTo = plot.xAxis->pixelToCoord(to.x());
    const double pixelInX = plot.xAxis->range().size() / area.width();

    QTest::mousePress(&plot, Qt::LeftButton, Qt::ShiftModifier, from);
    QTest::mouseMove(&plot, to);
    QTest::mouseRelease(&plot, Qt::LeftButton, Qt::ShiftModifier, to);
    QVERIFY2(std::abs(plot.xAxis->range().lower - xFrom) <= pixelInX,
             qPrintable(QString::number(plot.xAxis->range().lower)));
    QVERIFY(std::abs(plot.xAxis->range().upper - xTo) <= pixelInX);

    // Without Shift a drag pans: the range keeps its size.
    const double size = plot.xAxis->range().size();
    QTest::mousePress(&plot, Qt::LeftButton, Qt::NoModifier, to);
    QTest::mouseMove(&plot, from);
    QTest::mouseRelease(&plot, Qt::LeftButton, Qt::NoModifier, from);
    QVERIFY(near(plot.xAxis->range().size(), size, size * 1e-9));
}

void TestCurvePlot::hoverNamesTheNearestSeriesAndItsValues()
{
    CurvePlot plot;
    showPlot(plot);
    plot.declareSeries(QStringLiteral("loss"), QStringLiteral("train"));
    plot.addRun(QStringLiteral("a"), QStringLiteral("Deep 6x8"), kBlue);
    plot.addRun(QStringLiteral("b"), QStringLiteral("Wide 1x48"), kOrange);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), constant(1.0, 101));
    plot.appendPoints(QStringLiteral("b"), QStringLiteral("loss"), constant(3.0, 101));
    plot.refreshNow();

    // Just below b's line at step 50.
    const QPoint nearB(int(std::lround(plot.xAxis->coordToPixel(50))), int(plot.yAxis->coordToPixel(2.8)));
    QTest::mouseMove(&plot, nearB);
    CurvePlot::Readout r = plot.hoverReadout();
    QVERIFY(r.valid);
    QCOMPARE(r.runId, QStringLiteral("b"));
    QCOMPARE(r.series, QStringLiteral("loss"));
    QCOMPARE(r.name, QStringLiteral("Wide 1x48 · train"));
    QCOMPARE(r.step, 50.0);
    QCOMPARE(r.seconds, 100.0);
    QCOMPARE(r.raw, 3.0);
    QVERIFY(plot.hoverText().startsWith(QStringLiteral("Wide 1x48 · train\nstep 50 · 1:40\nvalue 3")));

    // Just above a's line: a.
    r = plot.readoutAt(QPointF(plot.xAxis->coordToPixel(20), plot.yAxis->coordToPixel(1.3)));
    QCOMPARE(r.runId, QStringLiteral("a"));
    QCOMPARE(r.step, 20.0);

    // Leaving hides the read-out.
    QEvent leave(QEvent::Leave);
    QApplication::sendEvent(&plot, &leave);
    QVERIFY(plot.hoverText().isEmpty());
    QVERIFY(!plot.hoverReadout().valid);

    // Outside the axis rect: nothing.
    QVERIFY(!plot.readoutAt(QPointF(2, 2)).valid);
}

void TestCurvePlot::parametersModeDrawsOneMarkerPerRun()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("deep"), QStringLiteral("deep 6x8"), kBlue, 1.2e6);
    plot.addRun(QStringLiteral("wide"), QStringLiteral("wide 1x48"), kOrange, 3.4e6);
    plot.addRun(QStringLiteral("unknown"), QStringLiteral("no count"), Qt::red, 0);
    plot.appendPoints(QStringLiteral("deep"), QStringLiteral("loss"), pointsOf({5, 4, 3}));
    plot.appendPoints(QStringLiteral("wide"), QStringLiteral("loss"), pointsOf({6, 2}));
    plot.appendPoints(QStringLiteral("unknown"), QStringLiteral("loss"), pointsOf({1}));
    plot.setSmoothing(0.5);
    plot.setXAxisMode(CurvePlot::XAxisMode::Parameters);
    plot.refreshNow();

    // Last smoothed values at w = 0.5: 5, 4, 3 -> 3.125 / 0.875 = 25/7; 6, 2 -> 2.5 / 0.75 = 10/3.
    const QVector<CurvePlot::ParameterMarker> markers = plot.parameterMarkers();
    QCOMPARE(markers.size(), 2);
    QCOMPARE(markers[0].runId, QStringLiteral("deep"));
    QCOMPARE(markers[0].parameters, 1.2e6);
    QVERIFY(near(markers[0].value, 25.0 / 7.0));
    QCOMPARE(markers[1].runId, QStringLiteral("wide"));
    QCOMPARE(markers[1].parameters, 3.4e6);
    QVERIFY(near(markers[1].value, 10.0 / 3.0));
    QCOMPARE(plot.lineGraph(QStringLiteral("deep"), QStringLiteral("loss"))->lineStyle(), QCPGraph::lsNone);
    QCOMPARE(plot.displayedPointCount(QStringLiteral("unknown"), QStringLiteral("loss")), 0);
    QVERIFY(plot.xAxis->range().contains(1.2e6));
    QVERIFY(plot.xAxis->range().contains(3.4e6));
    QCOMPARE(plot.xAxis->label(), QStringLiteral("parameters"));

    // Each marked run is labelled with its name.
    QStringList labels;
    for (int i = 0; i < plot.itemCount(); ++i) {
        auto* text = qobject_cast<QCPItemText*>(plot.item(i));
        if (text && text->visible() && text->text() != plot.hoverText())
            labels << text->text();
    }
    labels.sort();
    QCOMPARE(labels, (QStringList{QStringLiteral("deep 6x8"), QStringLiteral("wide 1x48")}));

    // Hovering the wide marker names it.
    const CurvePlot::Readout r =
        plot.readoutAt(QPointF(plot.xAxis->coordToPixel(3.4e6) + 3, plot.yAxis->coordToPixel(10.0 / 3.0) - 2));
    QCOMPARE(r.runId, QStringLiteral("wide"));
    QCOMPARE(r.x, 3.4e6);
    QCOMPARE(r.raw, 2.0);
    QCOMPARE(r.step, 1.0);

    plot.setXAxisMode(CurvePlot::XAxisMode::Step);
    plot.refreshNow();
    QVERIFY(plot.parameterMarkers().isEmpty());
    QCOMPARE(plot.lineGraph(QStringLiteral("deep"), QStringLiteral("loss"))->lineStyle(), QCPGraph::lsLine);
    QCOMPARE(plot.displayedPointCount(QStringLiteral("deep"), QStringLiteral("loss")), 3);
}

void TestCurvePlot::timeModeSortsByTimeAndUsesAClockTicker()
{
    CurvePlot plot;
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    // A resumed run whose clock restarted at step 3.
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"),
                      {{0, 0, 1}, {1, 10, 2}, {2, 20, 3}, {3, 5, 4}});
    plot.setXAxisMode(CurvePlot::XAxisMode::Time);
    plot.refreshNow();
    QCOMPARE(plot.displayedPoints(QStringLiteral("a"), QStringLiteral("loss")),
             (QVector<QPointF>{{0, 1}, {5, 4}, {10, 2}, {20, 3}}));
    QVERIFY(!qSharedPointerDynamicCast<QCPAxisTickerTime>(plot.xAxis->ticker()).isNull());
    QCOMPARE(plot.xAxis->label(), QStringLiteral("time"));
}

void TestCurvePlot::seriesDifferByLineStyleAndRunsByColour()
{
    CurvePlot plot;
    plot.declareSeries(QStringLiteral("loss"), QStringLiteral("train"));
    plot.declareSeries(QStringLiteral("validation_loss"), QStringLiteral("validation"));
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.addRun(QStringLiteral("b"), QStringLiteral("B"), kOrange);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({3, 2}));
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("validation_loss"), pointsOf({3.5}));
    plot.appendPoints(QStringLiteral("b"), QStringLiteral("validation_loss"), pointsOf({2.5, 2}));
    plot.refreshNow();

    QCOMPARE(plot.seriesPenStyle(QStringLiteral("a"), QStringLiteral("loss")), Qt::SolidLine);
    QCOMPARE(plot.seriesPenStyle(QStringLiteral("a"), QStringLiteral("validation_loss")), Qt::DashLine);
    QCOMPARE(plot.seriesPenStyle(QStringLiteral("b"), QStringLiteral("validation_loss")), Qt::DashLine);
    QCOMPARE(plot.seriesColor(QStringLiteral("a"), QStringLiteral("validation_loss")), kBlue);
    QCOMPARE(plot.seriesColor(QStringLiteral("b"), QStringLiteral("validation_loss")), kOrange);
    // A lone point gets a dot, since it has no line.
    QCOMPARE(plot.lineGraph(QStringLiteral("a"), QStringLiteral("validation_loss"))->scatterStyle().shape(),
             QCPScatterStyle::ssDisc);

    // One legend entry per series with data, runs in order, series in declaration order.
    QCOMPARE(plot.legendEntries().size(), 3);
    QStringList names;
    for (QCPAbstractLegendItem* item : plot.legendEntries())
        names << qobject_cast<QCPPlottableLegendItem*>(item)->plottable()->name();
    QCOMPARE(names, (QStringList{QStringLiteral("A · train"), QStringLiteral("A · validation"),
                                 QStringLiteral("B · validation")}));

    // Re-adding a run updates its label and colour in place.
    plot.addRun(QStringLiteral("b"), QStringLiteral("B2"), Qt::darkGreen);
    plot.refreshNow();
    QCOMPARE(plot.lineGraph(QStringLiteral("b"), QStringLiteral("validation_loss"))->name(),
             QStringLiteral("B2 · validation"));
    QCOMPARE(plot.seriesColor(QStringLiteral("b"), QStringLiteral("validation_loss")), QColor(Qt::darkGreen));
    QCOMPARE(plot.runs(), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
}

void TestCurvePlot::hiddenSeriesLeaveTheLegendGreyAndTheCsvOut()
{
    CurvePlot plot;
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({1, 2}));
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("extra"), pointsOf({7}));
    plot.setSeriesVisible(QStringLiteral("a"), QStringLiteral("extra"), false);
    plot.refreshNow();
    QVERIFY(!plot.isSeriesVisible(QStringLiteral("a"), QStringLiteral("extra")));
    QVERIFY(!plot.lineGraph(QStringLiteral("a"), QStringLiteral("extra"))->visible());
    QCOMPARE(plot.legendEntries().size(), 2);  // still listed, so it can be switched back on
    const QColor hiddenText =
        plot.legend->itemWithPlottable(plot.lineGraph(QStringLiteral("a"), QStringLiteral("extra")))->textColor();
    const QColor shownText =
        plot.legend->itemWithPlottable(plot.lineGraph(QStringLiteral("a"), QStringLiteral("loss")))->textColor();
    QVERIFY(hiddenText != shownText);
    // The view fits the visible series only: y 1..2.
    QVERIFY(plot.yAxis->range().upper < 7);

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("hidden.csv"));
    QVERIFY(plot.exportCsv(path));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), QByteArray("run_id,run,series,step,seconds,value\n"
                                        "a,A,loss,0,0,1\n"
                                        "a,A,loss,1,2,2\n"));
}

void TestCurvePlot::clickingALegendEntryTogglesItsSeries()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.addRun(QStringLiteral("b"), QStringLiteral("B"), kOrange);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({3, 2, 1}));
    plot.appendPoints(QStringLiteral("b"), QStringLiteral("loss"), pointsOf({4, 3, 2}));
    plot.refreshNow();
    plot.replot();
    const QPoint entryB = plot.legendEntries().at(1)->outerRect().center();
    QTest::mouseClick(&plot, Qt::LeftButton, Qt::NoModifier, entryB);
    QVERIFY(!plot.isSeriesVisible(QStringLiteral("b"), QStringLiteral("loss")));
    QVERIFY(plot.isSeriesVisible(QStringLiteral("a"), QStringLiteral("loss")));
    plot.refreshNow();
    QVERIFY(!plot.lineGraph(QStringLiteral("b"), QStringLiteral("loss"))->visible());
    plot.replot();
    QTest::mouseClick(&plot, Qt::LeftButton, Qt::NoModifier, plot.legendEntries().at(1)->outerRect().center());
    QVERIFY(plot.isSeriesVisible(QStringLiteral("b"), QStringLiteral("loss")));
}

void TestCurvePlot::csvHoldsExactlyTheAppendedPoints()
{
    CurvePlot plot;
    plot.declareSeries(QStringLiteral("loss"));
    plot.declareSeries(QStringLiteral("validation_loss"));
    plot.addRun(QStringLiteral("a"), QStringLiteral("Run, \"A\""), kBlue);
    plot.addRun(QStringLiteral("b"), QStringLiteral("B"), kOrange);
    plot.appendPoints(QStringLiteral("b"), QStringLiteral("loss"), {{5, 2, 1e-7}});
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("validation_loss"), {{10, 1.5, 0.3}});
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), {{0, 0.5, 2.5}, {10, 1.25, 0.1}});
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), {{3, 0.75, 0.2}});  // out of order: kept as appended

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("curves.csv"));
    QString error;
    QVERIFY2(plot.exportCsv(path, &error), qPrintable(error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    // Runs in the order added, series in declaration order, points as appended;
    // the label with a comma and quotes is quoted with its quotes doubled.
    QCOMPARE(file.readAll(), QByteArray("run_id,run,series,step,seconds,value\n"
                                        "a,\"Run, \"\"A\"\"\",loss,0,0.5,2.5\n"
                                        "a,\"Run, \"\"A\"\"\",loss,10,1.25,0.1\n"
                                        "a,\"Run, \"\"A\"\"\",loss,3,0.75,0.2\n"
                                        "a,\"Run, \"\"A\"\"\",validation_loss,10,1.5,0.3\n"
                                        "b,B,loss,5,2,1e-07\n"));
}

void TestCurvePlot::csvReportsAnUnwritablePath()
{
    CurvePlot plot;
    QString error;
    QVERIFY(!plot.exportCsv(QStringLiteral("/nonexistent-widelab-dir/x.csv"), &error));
    QVERIFY(!error.isEmpty());
}

void TestCurvePlot::imagesCarryTheRightMagic_data()
{
    QTest::addColumn<QString>("suffix");
    QTest::addColumn<QByteArray>("magic");
    QTest::newRow("png") << QStringLiteral("png") << QByteArray("\x89PNG\r\n\x1a\n");
    QTest::newRow("pdf") << QStringLiteral("pdf") << QByteArray("%PDF-");
    QTest::newRow("svg") << QStringLiteral("svg") << QByteArray("<?xml");
    QTest::newRow("upper-case suffix") << QStringLiteral("PNG") << QByteArray("\x89PNG");
}

void TestCurvePlot::imagesCarryTheRightMagic()
{
    QFETCH(QString, suffix);
    QFETCH(QByteArray, magic);
    CurvePlot plot;
    plot.setTitle(QStringLiteral("Loss"));
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({3, 2, 1.5, 1.2}));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chart.") + suffix);
    QString error;
    QVERIFY2(plot.exportImage(path, &error), qPrintable(error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray bytes = file.readAll();
    QVERIFY2(bytes.startsWith(magic), bytes.left(16).toHex().constData());
    if (suffix == QLatin1String("svg")) {
        QVERIFY(bytes.contains("<svg"));
        QVERIFY(bytes.contains("Loss"));  // the title is drawn as text
    }
    if (suffix.compare(QLatin1String("png"), Qt::CaseInsensitive) == 0) {
        const QImage image(path);
        QCOMPARE(image.size(), QSize(1600, 1000));  // never shown: 800 x 500 at twice the pixels
    }
}

void TestCurvePlot::imageExportRejectsUnknownSuffixes()
{
    CurvePlot plot;
    QTemporaryDir dir;
    QString error;
    QVERIFY(!plot.exportImage(dir.filePath(QStringLiteral("chart.bmp")), &error));
    QVERIFY(error.contains(QStringLiteral("bmp")));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("chart.bmp"))));
    error.clear();
    QVERIFY(!plot.exportImage(QStringLiteral("/nonexistent-widelab-dir/chart.svg"), &error));
    QVERIFY(!error.isEmpty());
    error.clear();
    QVERIFY(!plot.exportImage(QStringLiteral("/nonexistent-widelab-dir/chart.png"), &error));
    QVERIFY(!error.isEmpty());
}

void TestCurvePlot::runsCanBeClearedAndRemoved()
{
    CurvePlot plot;
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.addRun(QStringLiteral("b"), QStringLiteral("B"), kOrange);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), pointsOf({1, 2}));
    plot.appendPoints(QStringLiteral("b"), QStringLiteral("loss"), pointsOf({3, 4}));
    plot.appendPoints(QStringLiteral("nobody"), QStringLiteral("loss"), pointsOf({5}));  // ignored
    plot.refreshNow();
    QCOMPARE(plot.graphCount(), 4);  // line and faint copy per series
    QVERIFY(plot.points(QStringLiteral("nobody"), QStringLiteral("loss")).isEmpty());

    plot.clearRun(QStringLiteral("a"));
    plot.refreshNow();
    QVERIFY(plot.points(QStringLiteral("a"), QStringLiteral("loss")).isEmpty());
    QCOMPARE(plot.displayedPointCount(QStringLiteral("a"), QStringLiteral("loss")), 0);
    QCOMPARE(plot.legendEntries().size(), 1);
    QVERIFY(plot.hasRun(QStringLiteral("a")));

    plot.removeRun(QStringLiteral("b"));
    plot.refreshNow();
    QCOMPARE(plot.runs(), QStringList{QStringLiteral("a")});
    QCOMPARE(plot.graphCount(), 2);
    QCOMPARE(plot.legendEntries().size(), 0);
    QVERIFY(plot.lineGraph(QStringLiteral("b"), QStringLiteral("loss")) == nullptr);
}

void TestCurvePlot::aDarkPaletteGivesADarkChart()
{
    CurvePlot plot;
    plot.resize(320, 220);
    const QImage light = plot.toPixmap(320, 220).toImage();
    QVERIFY(light.pixelColor(2, 2).lightness() > 200);  // the default palette is light here

    QPalette dark = plot.palette();
    dark.setColor(QPalette::Base, QColor(30, 30, 30));
    dark.setColor(QPalette::Text, QColor(230, 230, 230));
    plot.setPalette(dark);
    const QImage image = plot.toPixmap(320, 220).toImage();
    QVERIFY2(image.pixelColor(2, 2).lightness() < 60, qPrintable(image.pixelColor(2, 2).name()));
    // Text stays readable on it: light labels, a grid between the two.
    QVERIFY(plot.xAxis->tickLabelColor().lightness() > 150);
    const int grid = plot.xAxis->grid()->pen().color().lightness();
    QVERIFY(grid > 30 && grid < 150);
}

void TestCurvePlot::clickingAPointNamesItsStep()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.addRun(QStringLiteral("b"), QStringLiteral("B"), kOrange);
    // a: steps 0, 10, ..., 100 at 1.0; b: steps 0..100 at 3.0.
    QVector<CurvePoint> sparse;
    for (int i = 0; i <= 10; ++i)
        sparse.append({10.0 * i, 20.0 * i, 1.0});
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), sparse);
    plot.appendPoints(QStringLiteral("b"), QStringLiteral("loss"), constant(3.0, 101));
    plot.refreshNow();
    QSignalSpy clicked(&plot, &CurvePlot::stepClicked);

    // On a's point at step 40.
    const QPoint atA(int(std::lround(plot.xAxis->coordToPixel(40))), int(std::lround(plot.yAxis->coordToPixel(1.0))));
    QTest::mouseClick(&plot, Qt::LeftButton, Qt::NoModifier, atA);
    QCOMPARE(clicked.size(), 1);
    QCOMPARE(clicked.back().front().toLongLong(), 40);
    // Near b's line at step 73: b's point at 73, not a's points (further in y).
    const QPoint nearB(int(std::lround(plot.xAxis->coordToPixel(73))), int(std::lround(plot.yAxis->coordToPixel(2.9))));
    QTest::mouseClick(&plot, Qt::LeftButton, Qt::NoModifier, nearB);
    QCOMPARE(clicked.size(), 2);
    QCOMPARE(clicked.back().front().toLongLong(), 73);
    // Between a's points 40 and 50, at 44 on a's line: the nearest, 40.
    const QPoint between(int(std::lround(plot.xAxis->coordToPixel(44))), atA.y());
    QTest::mouseClick(&plot, Qt::LeftButton, Qt::NoModifier, between);
    QCOMPARE(clicked.back().front().toLongLong(), 40);

    // A drag pans and names no step; nor does a right click or a click outside the axis rect.
    const double lower = plot.xAxis->range().lower;
    QTest::mousePress(&plot, Qt::LeftButton, Qt::NoModifier, atA);
    QTest::mouseMove(&plot, atA + QPoint(60, 0));
    QTest::mouseRelease(&plot, Qt::LeftButton, Qt::NoModifier, atA + QPoint(60, 0));
    QVERIFY(plot.xAxis->range().lower != lower);
    QTest::mouseClick(&plot, Qt::RightButton, Qt::NoModifier, atA);
    QTest::mouseClick(&plot, Qt::LeftButton, Qt::NoModifier, QPoint(2, 2));
    QCOMPARE(clicked.size(), 3);

    // Hover still reads out after a click.
    QTest::mouseMove(&plot, nearB + QPoint(0, 1));
    QVERIFY(plot.hoverReadout().valid);
}

void TestCurvePlot::theCursorStepIsALineAtThatStep()
{
    CurvePlot plot;
    showPlot(plot);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"), constant(1.0, 101));
    plot.refreshNow();
    const QColor highlight = plot.palette().color(QPalette::Highlight);
    // Whether the pixel column at `step` holds the cursor's colour somewhere in the axis rect (it is dashed).
    auto lineAt = [&](double step) {
        const QImage image = plot.grab().toImage();
        const int x = int(std::lround(plot.xAxis->coordToPixel(step)));
        const QRect area = plot.axisRect()->rect();
        int hits = 0;
        for (int y = area.top() + 2; y < area.bottom() - 2; ++y)
            for (int dx = -1; dx <= 1; ++dx)
                if (const QColor c(image.pixel(x + dx, y)); std::abs(c.red() - highlight.red())
                                                                 + std::abs(c.green() - highlight.green())
                                                                 + std::abs(c.blue() - highlight.blue())
                                                             < 60)  // antialiased: near the colour
                    ++hits;
        return hits > area.height() / 4;  // dashes cover about half the column
    };
    QCOMPARE(plot.cursorStep(), -1);
    QVERIFY(!plot.cursorShown());
    QVERIFY(!lineAt(30));

    plot.setCursorStep(30);
    plot.refreshNow();
    QCOMPARE(plot.cursorStep(), 30);
    QVERIFY(plot.cursorShown());
    QVERIFY(lineAt(30));
    QVERIFY(!lineAt(70));

    // More data rescales the axis: the line stays at step 30, now at another pixel.
    const double before = plot.xAxis->coordToPixel(30);
    plot.appendPoints(QStringLiteral("a"), QStringLiteral("loss"),
                      QVector<CurvePoint>{{200.0, 400.0, 1.0}, {300.0, 600.0, 1.0}});
    plot.refreshNow();
    QVERIFY(std::abs(plot.xAxis->coordToPixel(30) - before) > 20);
    QVERIFY(lineAt(30));

    // Time mode hides it (a step has no one time across runs); Step mode brings it back.
    plot.setXAxisMode(CurvePlot::XAxisMode::Time);
    QVERIFY(!plot.cursorShown());
    QCOMPARE(plot.cursorStep(), 30);
    plot.setXAxisMode(CurvePlot::XAxisMode::Step);
    QVERIFY(plot.cursorShown());

    plot.setCursorStep(-1);
    plot.refreshNow();
    QCOMPARE(plot.cursorStep(), -1);
    QVERIFY(!plot.cursorShown());
    QVERIFY(!lineAt(30));
}

void TestCurvePlot::curvesLeaveValuesPastTheAxisLimitsOutOfTheFit()
{
    CurvePlot plot;
    plot.resize(600, 400);
    plot.addRun(QStringLiteral("r"), QStringLiteral("Run"), Qt::blue);
    plot.appendPoints(QStringLiteral("r"), QStringLiteral("loss"),
                      {{1, 1, 2.0}, {2, 2, 1e300}, {3, 3, 1.0}, {4, 4, std::numeric_limits<double>::quiet_NaN()},
                       {1e300, 5, 1.5}, {10, 6, 0.5}});
    plot.refreshNow();
    // x spans the steps a chart can show (1 to 10), y the values (0.5 to 2, with headroom).
    QCOMPARE(plot.xAxis->range().lower, 1.0);
    QCOMPARE(plot.xAxis->range().upper, 10.0);
    QVERIFY2(plot.yAxis->range().lower > 0.4 && plot.yAxis->range().upper < 2.1,
             qPrintable(QStringLiteral("%1 %2").arg(plot.yAxis->range().lower).arg(plot.yAxis->range().upper)));
    QVERIFY(!plot.grab().toImage().isNull());

    // A constant that smoothing leaves differing in its last bits: ranged around it, +-10 %.
    plot.clearRun(QStringLiteral("r"));
    plot.setSmoothing(0.6);
    QVector<CurvePoint> constant;
    for (int step = 1; step <= 50; ++step)
        constant.append({double(step), double(step), 0.003});
    plot.appendPoints(QStringLiteral("r"), QStringLiteral("loss"), constant);
    plot.refreshNow();
    QVERIFY2(std::abs(plot.yAxis->range().lower - 0.0027) < 1e-9 && std::abs(plot.yAxis->range().upper - 0.0033) < 1e-9,
             qPrintable(QStringLiteral("%1 %2").arg(plot.yAxis->range().lower, 0, 'g', 17).arg(plot.yAxis->range().upper, 0, 'g', 17)));
}

QTEST_MAIN(TestCurvePlot)
#include "tst_curveplot.moc"
