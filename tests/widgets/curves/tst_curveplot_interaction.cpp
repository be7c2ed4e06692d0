// Tests CurvePlot as the user drives it and what it exports: the view fitted, reset and zoomed, hover
// read-out, hidden series and legend clicks, runs cleared and removed, a click naming a point's step,
// the step cursor, and the CSV and image exports.
#include "CurvePlotTestSupport.h"

using widelab::CurvePlot;
using widelab::CurvePoint;
using namespace widelab::curveplottest;

class TestCurvePlotInteraction : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void resetViewFitsAllData();
    void doubleClickResetsTheView();
    void shiftDragZoomsToTheRubberBand();
    void hoverNamesTheNearestSeriesAndItsValues();
    void hiddenSeriesLeaveTheLegendGreyAndTheCsvOut();
    void clickingALegendEntryTogglesItsSeries();
    void aCollapsedLegendTogglesARunOrOneSeriesOfEveryRun();
    void csvHoldsExactlyTheAppendedPoints();
    void csvReportsAnUnwritablePath();
    void imagesCarryTheRightMagic_data();
    void imagesCarryTheRightMagic();
    void imageExportRejectsUnknownSuffixes();
    void runsCanBeClearedAndRemoved();
    void clickingAPointNamesItsStep();
    void theCursorStepIsALineAtThatStep();
};

void TestCurvePlotInteraction::resetViewFitsAllData()
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

void TestCurvePlotInteraction::doubleClickResetsTheView()
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

void TestCurvePlotInteraction::shiftDragZoomsToTheRubberBand()
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

void TestCurvePlotInteraction::hoverNamesTheNearestSeriesAndItsValues()
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

    // On a narrow chart a long label fits on neither side of the point: it stays
    // whole inside the chart rather than losing its beginning at the left edge.
    plot.addRun(QStringLiteral("c"), QStringLiteral("Wide attention 1x48, seed 3"), kOrange);
    plot.appendPoints(QStringLiteral("c"), QStringLiteral("loss"), constant(5.0, 101));
    plot.refreshNow();
    plot.resize(240, plot.height());  // about the narrowest a chart gets
    plot.replot();
    QTest::mouseMove(&plot, QPoint(int(std::lround(plot.xAxis->coordToPixel(50))), int(plot.yAxis->coordToPixel(4.9))));
    QVERIFY(plot.hoverText().startsWith(QStringLiteral("Wide attention 1x48, seed 3")));
    const QRectF label = plot.hoverRect();
    QVERIFY(label.width() < plot.width());  // it can fit
    QVERIFY2(label.left() >= 0 && label.right() <= plot.width(),
             qPrintable(QStringLiteral("label %1..%2 in a plot of width %3").arg(label.left()).arg(label.right()).arg(plot.width())));
    QVERIFY(label.top() >= 0 && label.bottom() <= plot.height());
    plot.removeRun(QStringLiteral("c"));

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

void TestCurvePlotInteraction::hiddenSeriesLeaveTheLegendGreyAndTheCsvOut()
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

void TestCurvePlotInteraction::clickingALegendEntryTogglesItsSeries()
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

void TestCurvePlotInteraction::aCollapsedLegendTogglesARunOrOneSeriesOfEveryRun()
{
    CurvePlot plot;
    showPlot(plot);
    plot.declareSeries(QStringLiteral("loss"), QStringLiteral("train"));
    plot.declareSeries(QStringLiteral("validation_loss"), QStringLiteral("validation"), CurvePlot::SeriesStyle::Markers);
    plot.addRun(QStringLiteral("a"), QStringLiteral("A"), kBlue);
    plot.addRun(QStringLiteral("b"), QStringLiteral("B"), kOrange);
    for (const QString& run : {QStringLiteral("a"), QStringLiteral("b")}) {
        plot.appendPoints(run, QStringLiteral("loss"), pointsOf({3, 2, 1}));
        plot.appendPoints(run, QStringLiteral("validation_loss"), pointsOf({3.5, 2.5}));
    }
    plot.refreshNow();
    plot.replot();
    QCOMPARE(plot.legendTexts(), (QStringList{QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("train"),
                                              QStringLiteral("validation")}));
    auto click = [&plot](int entry) {
        plot.replot();
        QTest::mouseClick(&plot, Qt::LeftButton, Qt::NoModifier, plot.legendEntries().at(entry)->outerRect().center());
        plot.refreshNow();
    };
    auto shown = [&plot](const char* run, const char* series) {
        return plot.isSeriesVisible(QString::fromLatin1(run), QString::fromLatin1(series));
    };
    // Run B: both its series go, A's stay; again: back.
    click(1);
    QVERIFY(!shown("b", "loss") && !shown("b", "validation_loss"));
    QVERIFY(shown("a", "loss") && shown("a", "validation_loss"));
    click(1);
    QVERIFY(shown("b", "loss") && shown("b", "validation_loss"));
    // The validation key: that series of every run.
    click(3);
    QVERIFY(!shown("a", "validation_loss") && !shown("b", "validation_loss"));
    QVERIFY(shown("a", "loss") && shown("b", "loss"));
    // Run A with its validation hidden: some of it shown, so its entry hides it whole, then shows it whole.
    click(0);
    QVERIFY(!shown("a", "loss") && !shown("a", "validation_loss"));
    click(0);
    QVERIFY(shown("a", "loss") && shown("a", "validation_loss"));
}

void TestCurvePlotInteraction::csvHoldsExactlyTheAppendedPoints()
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

void TestCurvePlotInteraction::csvReportsAnUnwritablePath()
{
    CurvePlot plot;
    QString error;
    QVERIFY(!plot.exportCsv(QStringLiteral("/nonexistent-widelab-dir/x.csv"), &error));
    QVERIFY(!error.isEmpty());
}

void TestCurvePlotInteraction::imagesCarryTheRightMagic_data()
{
    QTest::addColumn<QString>("suffix");
    QTest::addColumn<QByteArray>("magic");
    QTest::newRow("png") << QStringLiteral("png") << QByteArray("\x89PNG\r\n\x1a\n");
    QTest::newRow("pdf") << QStringLiteral("pdf") << QByteArray("%PDF-");
    QTest::newRow("svg") << QStringLiteral("svg") << QByteArray("<?xml");
    QTest::newRow("upper-case suffix") << QStringLiteral("PNG") << QByteArray("\x89PNG");
}

void TestCurvePlotInteraction::imagesCarryTheRightMagic()
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
        QCOMPARE(image.size(), QSize(1050, 780));  // a paper column: 3.5 x 2.6 in at 300 dpi
    }
}

void TestCurvePlotInteraction::imageExportRejectsUnknownSuffixes()
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

void TestCurvePlotInteraction::runsCanBeClearedAndRemoved()
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

void TestCurvePlotInteraction::clickingAPointNamesItsStep()
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

void TestCurvePlotInteraction::theCursorStepIsALineAtThatStep()
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

QTEST_MAIN(TestCurvePlotInteraction)
#include "tst_curveplot_interaction.moc"
