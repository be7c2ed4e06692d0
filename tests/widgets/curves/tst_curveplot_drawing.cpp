// Tests what CurvePlot hands QCustomPlot: smoothing, decimation, coalesced replots, log scale and its
// ticks, the legend's place, exact series, markers, the empty-chart note, line widths, the
// parameters and time modes, styles and colours, a dark palette, and a fit that leaves values past
// the axis limits out.
#include "CurvePlotTestSupport.h"

using widelab::CurvePlot;
using widelab::CurvePoint;
using namespace widelab::curveplottest;

class TestCurvePlotDrawing : public QObject {
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
    void parametersModeDrawsOneMarkerPerRun();
    void timeModeSortsByTimeAndUsesAClockTicker();
    void seriesDifferByLineStyleAndRunsByColour();
    void aDarkPaletteGivesADarkChart();
    // Damaged data (a metrics.jsonl written by hand): no nonsense range.
    void curvesLeaveValuesPastTheAxisLimitsOutOfTheFit();
};

void TestCurvePlotDrawing::smoothedLineIsTheDebiasedEmaAndRawStaysFaint()
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

void TestCurvePlotDrawing::hundredThousandPointsAreKeptButDecimatedForDisplay()
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

void TestCurvePlotDrawing::zoomingInShowsEveryPointOfTheRange()
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

void TestCurvePlotDrawing::appendsAreCoalescedIntoOneReplot()
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

void TestCurvePlotDrawing::logScaleSwitchesTheAxisAndSkipsNonPositiveValues()
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

void TestCurvePlotDrawing::logTicksFollowOneTwoThreeFive()
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

void TestCurvePlotDrawing::legendStaysOutOfThePlotArea()
{
    CurvePlot plot;
    showPlot(plot);
    fillComparison(plot);  // five runs, train and validation each: ten entries with long names
    // A third series, for one run only: five runs and three style keys.
    plot.appendPoints(QStringLiteral("0"), QStringLiteral("extra"), pointsOf({1, 2}));
    plot.refreshNow();
    plot.replot();
    QCOMPARE(plot.legendEntries().size(), 8);
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

void TestCurvePlotDrawing::exactSeriesIgnoresSmoothing()
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

void TestCurvePlotDrawing::markersShowTheExactValidationValues()
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

void TestCurvePlotDrawing::aNoteExplainsAnEmptyChart()
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

void TestCurvePlotDrawing::denseLinesAreDrawnThin()
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

void TestCurvePlotDrawing::parametersModeDrawsOneMarkerPerRun()
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

void TestCurvePlotDrawing::timeModeSortsByTimeAndUsesAClockTicker()
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

void TestCurvePlotDrawing::seriesDifferByLineStyleAndRunsByColour()
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

    // Two runs and two series: an entry a run, in order, then a style key a
    // series, in declaration order.
    QCOMPARE(plot.legendTexts(), (QStringList{QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("train"),
                                              QStringLiteral("validation")}));
    // One run: an entry a series with data, named run · series.
    plot.removeRun(QStringLiteral("b"));
    plot.refreshNow();
    QCOMPARE(plot.legendTexts(), (QStringList{QStringLiteral("A · train"), QStringLiteral("A · validation")}));
    // A long name is cut in the middle, so the legend stays a line or two.
    plot.addRun(QStringLiteral("a"), QStringLiteral("widenet-paper-recipe-fashion-mnist-seed-1"), kBlue);
    plot.refreshNow();
    QCOMPARE(plot.legendTexts().first(), QStringLiteral("widenet-paper-\u2026-mnist-seed-1 · train"));
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.addRun(QStringLiteral("b"), QStringLiteral("B"), kOrange);
    plot.appendPoints(QStringLiteral("b"), QStringLiteral("validation_loss"), pointsOf({2.5, 2}));

    // Re-adding a run updates its label and colour in place.
    plot.addRun(QStringLiteral("b"), QStringLiteral("B2"), Qt::darkGreen);
    plot.refreshNow();
    QCOMPARE(plot.lineGraph(QStringLiteral("b"), QStringLiteral("validation_loss"))->name(),
             QStringLiteral("B2 · validation"));
    QCOMPARE(plot.seriesColor(QStringLiteral("b"), QStringLiteral("validation_loss")), QColor(Qt::darkGreen));
    QCOMPARE(plot.runs(), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
}

void TestCurvePlotDrawing::aDarkPaletteGivesADarkChart()
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

void TestCurvePlotDrawing::curvesLeaveValuesPastTheAxisLimitsOutOfTheFit()
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

QTEST_MAIN(TestCurvePlotDrawing)
#include "tst_curveplot_drawing.moc"
