// CurvePlot: export. PNG, PDF and SVG images of the chart, CSV of its raw points.
#include "CurvePlot.h"

#include "CurvePlotParts.h"
#include "common/ViewExport.h"

#include <QDir>
#include <QFileInfo>
#include <QSaveFile>
#include <QSvgGenerator>

namespace widelab {
namespace {

using namespace curveplot;

using viewexport::csvField;
using viewexport::csvNumber;

}  // namespace

bool CurvePlot::exportImage(const QString& path, QString* error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("pdf") && suffix != QLatin1String("svg")) {
        if (error)
            *error = tr("Unknown image format \"%1\": use .png, .pdf or .svg.").arg(suffix);
        return false;
    }
    setHover(Readout());
    refreshNow();
    // A chart that was never laid out exports at a readable default size.
    const int width = isVisible() && this->width() >= 200 ? this->width() : 800;
    const int height = isVisible() && this->height() >= 150 ? this->height() : 500;
    bool ok = false;
    if (suffix == QLatin1String("png"))
        ok = savePng(path, width, height, 2.0);
    else if (suffix == QLatin1String("pdf"))
        ok = savePdf(path, width, height, QCP::epAllowCosmetic, QStringLiteral("WideLab"), title());
    else
        ok = writeSvg(path, width, height);
    if (!ok && error)
        *error = tr("Could not write %1.").arg(QDir::toNativeSeparators(path));
    return ok;
}

bool CurvePlot::writeSvg(const QString& path, int width, int height)
{
    QFile::remove(path);  // so a stale file cannot pass for success below
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(QSize(width, height));
    generator.setViewBox(QRect(0, 0, width, height));
    generator.setTitle(title());
    generator.setDescription(tr("WideLab training curves"));
    QCPPainter painter;
    if (!painter.begin(&generator))
        return false;
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    toPainter(&painter, width, height);
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
    viewexport::exportWithDialog(this, title().isEmpty() ? tr("chart") : title(), filters, m_exportDirectory,
                                 [this](const QString& path, QString* error) {
                                     return viewexport::isCsvPath(path) ? exportCsv(path, error)
                                                                        : exportImage(path, error);
                                 });
}

}  // namespace widelab
