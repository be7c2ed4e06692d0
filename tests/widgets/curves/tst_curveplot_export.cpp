// Tests CurvePlot's exported figures: laid out for the page (a size and dpi of
// their own, type in points, the legend under the plot with every entry), not
// copied from the screen, which the export leaves as it was.
#include "CurvePlotTestSupport.h"

#include <QTemporaryDir>

using widelab::CurvePlot;
using widelab::FigureLayout;
using namespace widelab::curveplottest;

class TestCurvePlotExport : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void aPngHasTheFiguresInchesTimesItsDpi();
    void pdfAndSvgHaveTheFiguresPhysicalSize();
    void theFiguresLegendLiesUnderThePlotWithEveryEntry();
    void theFigureKeepsTheUsersZoom();
    void exportingLeavesTheScreenChartAsItWas();
    void theLastLayoutIsRemembered();
};

namespace {

// The drawing tests' comparison, titled.
void fillTitledComparison(CurvePlot& plot)
{
    plot.setTitle(QStringLiteral("Loss"));
    fillComparison(plot);
}

}  // namespace

void TestCurvePlotExport::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);  // QSettings away from the user's
    QCoreApplication::setOrganizationName(QStringLiteral("WideLabTest"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_curveplot_export"));
}

void TestCurvePlotExport::aPngHasTheFiguresInchesTimesItsDpi()
{
    CurvePlot plot;
    showPlot(plot);  // 600 x 400 on screen: the figure's size does not follow it
    fillTitledComparison(plot);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("loss.png"));
    QString error;
    QVERIFY2(plot.exportImage(path, FigureLayout{3.5, 2.6, 300}, &error), qPrintable(error));
    const QImage image(path);
    // 3.5 in x 300 dpi = 1050, 2.6 in x 300 dpi = 780.
    QCOMPARE(image.size(), QSize(1050, 780));
    // The file says 300 dpi (11,811 dots a metre), so a word processor places it 3.5 in wide.
    QCOMPARE(image.dotsPerMeterX(), 11811);
    QCOMPARE(image.pixelColor(0, 0), QColor(Qt::white));  // on paper, whatever the screen's theme
    // Two columns at 150 dpi: 7 x 150 = 1050, 3.5 x 150 = 525.
    QVERIFY(plot.exportImage(path, FigureLayout{7.0, 3.5, 150}, &error));
    QCOMPARE(QImage(path).size(), QSize(1050, 525));
    // Without a layout: a paper column.
    QVERIFY(plot.exportImage(path, &error));
    QCOMPARE(QImage(path).size(), QSize(1050, 780));
}

void TestCurvePlotExport::pdfAndSvgHaveTheFiguresPhysicalSize()
{
    CurvePlot plot;
    fillTitledComparison(plot);
    QTemporaryDir dir;
    QString error;
    // 3.5 in = 252 pt = 88.9 mm; 2.5 in = 180 pt = 63.5 mm.
    const FigureLayout layout{3.5, 2.5, 300};
    const QString svg = dir.filePath(QStringLiteral("loss.svg"));
    QVERIFY2(plot.exportImage(svg, layout, &error), qPrintable(error));
    QFile svgFile(svg);
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    const QByteArray svgText = svgFile.readAll();
    QVERIFY2(svgText.contains("width=\"88.9mm\"") && svgText.contains("height=\"63.5mm\""),
             svgText.left(400).constData());
    QVERIFY(svgText.contains("viewBox=\"0 0 252 180\""));
    const QString pdf = dir.filePath(QStringLiteral("loss.pdf"));
    QVERIFY2(plot.exportImage(pdf, layout, &error), qPrintable(error));
    QFile pdfFile(pdf);
    QVERIFY(pdfFile.open(QIODevice::ReadOnly));
    const QByteArray pdfBytes = pdfFile.readAll();
    QVERIFY2(pdfBytes.contains("/MediaBox [0 0 252.000000 180.000000]"), pdfBytes.mid(pdfBytes.indexOf("MediaBox") - 1, 40).constData());
}

void TestCurvePlotExport::theFiguresLegendLiesUnderThePlotWithEveryEntry()
{
    CurvePlot plot;
    showPlot(plot);
    fillTitledComparison(plot);
    plot.refreshNow();
    const FigureLayout layout{3.5, 2.6, 300, 8};
    const std::unique_ptr<CurvePlot> figure = plot.figure(layout);
    figure->replot();
    // Laid out in points: 3.5 x 72 = 252, 2.6 x 72 = 187.2, rounded.
    QCOMPARE(figure->viewport(), QRect(0, 0, 252, 187));
    // Five runs and two style keys, as on screen, each inside the figure and off the data.
    QCOMPARE(figure->legendTexts(), plot.legendTexts());
    QCOMPARE(figure->legendEntries().size(), 7);
    const QRect data = figure->axisRect()->outerRect();
    const QRect page(0, 0, 252, 187);
    QVERIFY(figure->legend->layout() != nullptr);
    QVERIFY(figure->legend->outerRect().top() >= data.bottom());  // under the plot
    for (const QCPAbstractLegendItem* entry : figure->legendEntries()) {
        QVERIFY(!entry->outerRect().intersects(data));
        QVERIFY2(page.contains(entry->outerRect()), "a legend entry cut off by the figure's edge");
        QVERIFY(entry->outerRect().height() >= 8);  // a whole line of 8 pt text
    }
    // Type in points of the page: 8 pt ticks and legend, a 10 pt title.
    QCOMPARE(figure->legend->font().pixelSize(), 8);
    QCOMPARE(figure->xAxis->tickLabelFont().pixelSize(), 8);
    // The plot keeps most of the figure's height for the data.
    QVERIFY(data.height() > 187 / 2);
}

void TestCurvePlotExport::theFigureKeepsTheUsersZoom()
{
    CurvePlot plot;
    showPlot(plot);
    fillTitledComparison(plot);
    plot.refreshNow();
    plot.xAxis->setRange(10, 20);
    plot.yAxis->setRange(1, 3);
    plot.refreshNow();
    const std::unique_ptr<CurvePlot> figure = plot.figure(FigureLayout());
    QCOMPARE(figure->xAxis->range().lower, 10.0);
    QCOMPARE(figure->xAxis->range().upper, 20.0);
    QCOMPARE(figure->yAxis->range().lower, 1.0);
    QCOMPARE(figure->yAxis->range().upper, 3.0);
    // Every point is drawn, as on screen: the decimated window is the view and one
    // width either side (steps 0..30, all sparser than a pixel column), plus step 31 past it: 32.
    QCOMPARE(figure->displayedPointCount(QStringLiteral("0"), QStringLiteral("loss")), 32);
}

void TestCurvePlotExport::exportingLeavesTheScreenChartAsItWas()
{
    CurvePlot plot;
    showPlot(plot);
    fillTitledComparison(plot);
    plot.refreshNow();
    plot.replot();
    const QSize size = plot.size();
    const QRect legendRect = plot.legend->outerRect();
    const QRect dataRect = plot.axisRect()->outerRect();
    const int columns = plot.legendColumns();
    const QFont legendFont = plot.legend->font();
    const QCPRange xRange = plot.xAxis->range();
    const int displayed = plot.displayedPointCount(QStringLiteral("0"), QStringLiteral("loss"));

    QTemporaryDir dir;
    for (const char* name : {"loss.png", "loss.pdf", "loss.svg"})
        QVERIFY(plot.exportImage(dir.filePath(QLatin1String(name)), FigureLayout{3.5, 2.6, 600}));
    plot.replot();

    QCOMPARE(plot.size(), size);
    QCOMPARE(plot.viewport(), QRect(QPoint(0, 0), size));
    QCOMPARE(plot.legend->outerRect(), legendRect);
    QCOMPARE(plot.axisRect()->outerRect(), dataRect);
    QCOMPARE(plot.legendColumns(), columns);
    QCOMPARE(plot.legend->font(), legendFont);
    QCOMPARE(plot.xAxis->range(), xRange);
    QCOMPARE(plot.displayedPointCount(QStringLiteral("0"), QStringLiteral("loss")), displayed);
    // New data is still followed: the export did not count as the user's zoom.
    plot.appendPoints(QStringLiteral("0"), QStringLiteral("loss"), {{100, 200, 1}});
    plot.refreshNow();
    QVERIFY(plot.xAxis->range().upper >= 100.0);  // (and room for the validation markers' discs)
}

void TestCurvePlotExport::theLastLayoutIsRemembered()
{
    QSettings().clear();
    const FigureLayout defaults = FigureLayout::remembered();
    QCOMPARE(defaults.widthInches, 3.5);  // a paper column
    QCOMPARE(defaults.dpi, 300);
    FigureLayout chosen{7.0, 3.0, 600, 9};
    chosen.remember();
    const FigureLayout back = FigureLayout::remembered();
    QCOMPARE(back.widthInches, 7.0);
    QCOMPARE(back.heightInches, 3.0);
    QCOMPARE(back.dpi, 600);
    QCOMPARE(back.fontPoints, 9);
    // A value no dialog would give (a hand-edited file) falls back to the default.
    QSettings().setValue(QStringLiteral("export/figureDpi"), 5);
    QCOMPARE(FigureLayout::remembered().dpi, 300);
    QSettings().clear();
}

QTEST_MAIN(TestCurvePlotExport)
#include "tst_curveplot_export.moc"
