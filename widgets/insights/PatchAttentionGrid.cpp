#include "PatchAttentionGrid.h"

#include "CellPainter.h"
#include "ColorScale.h"
#include "HeadLabel.h"

#include <QPainter>

#include <algorithm>

namespace widelab {

PatchAttentionGrid::PatchAttentionGrid(QWidget* parent) : PatchTileGrid(parent) {}

void PatchAttentionGrid::setCapture(const ProbeResult* capture, int layer)
{
    m_layers = false;
    QVector<QVector<float>> weights;
    QStringList titles, shortTitles;
    if (capture != nullptr && probeHasImage(*capture) && layer >= 0 && layer < probeLayers(*capture)) {
        const int heads = static_cast<int>(capture->attention[static_cast<std::size_t>(layer)].size());
        for (int head = 0; head < heads; ++head) {
            weights.push_back(patchAttention(*capture, layer, head));
            const QString caption = headCaptionText(m_captions, head, heads, m_paths);
            const QString name = headLabel(head, heads, m_paths), shortName = headShortLabel(head, heads, m_paths);
            titles << (caption.isEmpty() ? name : name + QStringLiteral(" · ") + caption);
            shortTitles << (caption.isEmpty() ? shortName : shortName + QStringLiteral(" · ") + caption);
        }
    }
    setWeights(capture, std::move(weights), titles, shortTitles);
}

void PatchAttentionGrid::setLayerMeans(const ProbeResult* capture)
{
    m_layers = true;
    QVector<QVector<float>> weights;
    QStringList titles, shortTitles;
    for (int layer = 0; capture != nullptr && probeHasImage(*capture) && layer < probeLayers(*capture); ++layer) {
        const QVector<QVector<float>> maps = layerMaps(*capture, layer);
        const int heads = static_cast<int>(maps.size());
        // Every head's map whole, or no mean: meanOverHeads would average what there is.
        const qsizetype cells = static_cast<qsizetype>(probeTokenCount(*capture)) * probeTokenCount(*capture);
        const bool whole = heads > 0 && std::all_of(maps.begin(), maps.end(), [&](const auto& m) { return m.size() == cells; });
        weights.push_back(whole ? patchWeights(*capture, meanOverHeads(*capture, layer)) : QVector<float>());
        titles << tr("layer %1 · mean over %2 heads").arg(layer + 1).arg(heads);
        shortTitles << tr("layer %1").arg(layer + 1);
    }
    setWeights(capture, std::move(weights), titles, shortTitles);
}

void PatchAttentionGrid::setWeights(const ProbeResult* capture, QVector<QVector<float>> weights,
                                    const QStringList& titles, const QStringList& shortTitles)
{
    m_weights = std::move(weights);
    m_overlays.clear();
    m_max = 1;
    const bool whole = !m_weights.isEmpty()
                       && std::all_of(m_weights.begin(), m_weights.end(), [](const auto& w) { return !w.isEmpty(); });
    if (!whole) {
        m_weights.clear();
        setTiles(QImage(), 0, 0, {});
        return;
    }
    m_source = patchSource(*capture);
    double top = 0, low = 0, high = 0;
    for (const QVector<float>& w : m_weights)
        if (colorscale::finiteRange(w.constData(), w.size(), &low, &high))
            top = std::max(top, high);
    m_max = static_cast<float>(top > 0 ? top : 1.0);
    const int rows = static_cast<int>(capture->image.gridRows), cols = static_cast<int>(capture->image.gridCols);
    for (const QVector<float>& w : m_weights) {
        double own = m_max;
        if (m_perHead && colorscale::finiteRange(w.constData(), w.size(), &low, &high) && high > 0)
            own = high;
        m_overlays.push_back(colorscale::sequentialImage(w.constData(), rows, cols, 0, own));
    }
    setTiles(probeQImage(capture->image), rows, cols, titles, shortTitles);
}

float PatchAttentionGrid::weight(int head, int row, int col) const
{
    if (head < 0 || head >= m_weights.size() || row < 0 || col < 0 || row >= gridRows() || col >= gridCols())
        return 0;
    return m_weights[head].value(static_cast<qsizetype>(row) * gridCols() + col);
}

QColor PatchAttentionGrid::weightColor(int head, int row, int col) const
{
    if (head < 0 || head >= m_overlays.size() || row < 0 || col < 0 || row >= gridRows() || col >= gridCols())
        return {};
    return QColor(m_overlays[head].pixel(col, row));
}

void PatchAttentionGrid::paintTile(QPainter& painter, int tile, const QRectF& target)
{
    painter.setOpacity(kOpacity);
    paintCells(painter, target, m_overlays.value(tile));
}

QString PatchAttentionGrid::readout(const Hit& hit) const
{
    return (m_layers ? tr("%1: patch row %2, column %3: %4 (%5)\nclick for the layer's heads")
                     : tr("%1: patch row %2, column %3: %4 (%5)\nclick for the head's whole map"))
        .arg(title(hit.tile))
        .arg(hit.row + 1)
        .arg(hit.col + 1)
        .arg(QString::number(weight(hit.tile, hit.row, hit.col), 'f', 3))
        .arg(patchSourceText(m_source));
}

}  // namespace widelab
