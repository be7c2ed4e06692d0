// CurvePlot: export. PNG, PDF and SVG figures of the chart (laid out for the
// page by an offscreen copy), CSV of its raw points.
#include "CurvePlot.h"

#include "CurvePlotParts.h"
#include "common/ViewExport.h"

#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>

#include <cmath>
#include <optional>

namespace widelab {
namespace {

using namespace curveplot;

using viewexport::csvField;
using viewexport::csvNumber;

}  // namespace

std::unique_ptr<CurvePlot> CurvePlot::figure(const FigureLayout& layout) const
{
    const QSize units = layout.points();
    auto copy = std::make_unique<CurvePlot>();
    copy->setAttribute(Qt::WA_DontShowOnScreen);
    // On paper, whatever the theme on screen.
    QPalette paper = palette();
    paper.setColor(QPalette::Base, Qt::white);
    paper.setColor(QPalette::Window, Qt::white);
    paper.setColor(QPalette::Text, Qt::black);
    copy->setPalette(paper);
    copy->applyPalette();
    copy->m_figureFontPoints = layout.fontPoints;
    copy->m_pixelsPerUnit = layout.dpi / 72.0;
    copy->applyFigureStyle();
    copy->setMinimumSize(0, 0);
    copy->resize(units);
    copy->setViewport(QRect(QPoint(0, 0), units));  // never shown: no resize event sets it

    copy->setTitle(title());
    copy->setNote(m_note);
    for (qsizetype i = 0; i < m_declaredSeries.size(); ++i)
        copy->declareSeries(m_declaredSeries[i], m_displayNames[i], m_seriesStyles[i]);
    for (const auto& run : m_runs)
        copy->addRun(run->id, run->label, run->color, run->parameters);
    for (const auto& s : m_series) {
        copy->appendPoints(s->run->id, s->name, s->points);  // implicitly shared, not copied
        copy->setSeriesVisible(s->run->id, s->name, s->visible);
    }
    copy->setSmoothing(m_smoothing);
    copy->setLogScale(m_logScale);
    copy->setXAxisMode(m_xMode);
    copy->setStepMarker(m_markerStep);
    copy->updateLayout();  // the axis rect's width, which the fit's margins need
    if (!m_autoFit) {  // the user's zoom, exactly
        copy->m_autoFit = false;
        copy->m_settingRange = true;
        copy->xAxis->setRange(xAxis->range());
        copy->yAxis->setRange(yAxis->range());
        copy->m_settingRange = false;
    }
    copy->refreshNow();
    copy->m_refreshTimer.stop();
    return copy;
}

bool CurvePlot::exportImage(const QString& path, QString* error)
{
    return exportImage(path, FigureLayout(), error);
}

bool CurvePlot::exportImage(const QString& path, const FigureLayout& layout, QString* error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("pdf") && suffix != QLatin1String("svg")) {
        if (error)
            *error = tr("Unknown image format \"%1\": use .png, .pdf or .svg.").arg(suffix);
        return false;
    }
    // Drawn from a copy laid out for the page: the chart on screen keeps its
    // size, fonts, legend and decimation, and nothing of it is redrawn.
    const std::unique_ptr<CurvePlot> copy = figure(layout);
    const QSize units = layout.points();
    bool ok = false;
    QFile::remove(path);  // so a stale file cannot pass for success below
    if (suffix == QLatin1String("png")) {
        const QSize pixels = layout.pixels();
        QImage image(pixels, QImage::Format_ARGB32_Premultiplied);
        image.fill(Qt::white);
        const int dotsPerMeter = static_cast<int>(std::lround(layout.dpi / 0.0254));
        image.setDotsPerMeterX(dotsPerMeter);
        image.setDotsPerMeterY(dotsPerMeter);
        QCPPainter painter(&image);
        // Points to pixels; x and y differ by at most half a point over the
        // figure (its layout is in whole points), so the PNG is exactly the size asked.
        painter.scale(pixels.width() / double(units.width()), pixels.height() / double(units.height()));
        copy->toPainter(&painter, units.width(), units.height());
        painter.end();
        ok = image.save(path, "PNG");
    } else if (suffix == QLatin1String("pdf")) {
        QPdfWriter writer(path);
        writer.setTitle(title());
        writer.setCreator(QStringLiteral("WideLab"));
        writer.setResolution(layout.dpi);
        writer.setPageSize(QPageSize(QSizeF(units), QPageSize::Point));
        writer.setPageMargins(QMarginsF(0, 0, 0, 0));
        QCPPainter painter;
        if (painter.begin(&writer)) {
            painter.setMode(QCPPainter::pmVectorized);
            painter.scale(writer.width() / double(units.width()), writer.height() / double(units.height()));
            copy->toPainter(&painter, units.width(), units.height());
            painter.end();
            ok = QFileInfo(path).size() > 0;
        }
    } else {
        ok = copy->writeSvg(path, units);
    }
    if (!ok && error)
        *error = tr("Could not write %1.").arg(QDir::toNativeSeparators(path));
    return ok;
}

bool CurvePlot::writeSvg(const QString& path, const QSize& points)
{
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(points);
    generator.setResolution(72);  // a unit a point: the SVG's width and height are the figure's
    generator.setViewBox(QRect(QPoint(0, 0), points));
    generator.setTitle(title());
    generator.setDescription(tr("WideLab training curves"));
    QCPPainter painter;
    if (!painter.begin(&generator))
        return false;
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    toPainter(&painter, points.width(), points.height());
    painter.end();
    return QFileInfo(path).size() > 0;  // QSvgGenerator reports write errors only as warnings
}

bool CurvePlot::exportCsv(const QString& path, QString* error) const
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        if (error)
            *error = tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    QByteArray chunk = "run_id,run,series,step,seconds,value\n";
    for (const auto& run : m_runs) {
        const QByteArray runFields = csvField(run->id) + ',' + csvField(run->label) + ',';
        for (const QString& name : std::as_const(m_declaredSeries)) {
            const Series* s = findSeries(run->id, name);
            if (!s || !s->visible)
                continue;
            const QByteArray prefix = runFields + csvField(name) + ',';
            for (const CurvePoint& p : s->points) {
                chunk += prefix + csvNumber(p.step) + ',' + csvNumber(p.seconds) + ',' + csvNumber(p.value) + '\n';
                if (chunk.size() > (1 << 16)) {
                    file.write(chunk);
                    chunk.clear();
                }
            }
        }
    }
    file.write(chunk);
    if (!file.commit()) {
        if (error)
            *error = tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    return true;
}

void CurvePlot::exportWithDialog()
{
    askAndExport({tr("PNG image (*.png)"), tr("PDF document (*.pdf)"), tr("SVG image (*.svg)"),
                  tr("CSV table of the raw points (*.csv)")});
}

void CurvePlot::askAndExport(const QStringList& filters)
{
    const QString path = viewexport::askExportPath(this, title().isEmpty() ? tr("chart") : title(), filters,
                                                   m_exportDirectory);
    if (path.isEmpty())
        return;
    QString error;
    bool written = false;
    if (viewexport::isCsvPath(path)) {
        written = exportCsv(path, &error);
    } else {
        // The figure's size after its name: the suffix is chosen by then, and a
        // cancel here exports nothing.
        const std::optional<FigureLayout> layout = askFigureLayout(this, FigureLayout::remembered());
        if (!layout)
            return;
        layout->remember();
        written = exportImage(path, *layout, &error);
    }
    viewexport::reportExport(this, path, written, error);
}

}  // namespace widelab
