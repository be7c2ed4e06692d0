#include "PatchExpertGrid.h"

#include "ColorScale.h"
#include "PatchMaps.h"

#include <QPainter>

namespace widelab {

PatchExpertGrid::PatchExpertGrid(QWidget* parent) : PatchTileGrid(parent) {}

void PatchExpertGrid::setCapture(const ProbeResult* capture)
{
    m_experts.clear();
    m_choices.clear();
    QStringList titles;
    if (capture != nullptr && probeHasImage(*capture)) {
        const int first = probeTokenCount(*capture) - probePatchCount(*capture);  // 1 with a CLS token
        for (int block = 0; block < static_cast<int>(capture->experts.size()); ++block) {
            QVector<int> experts = patchExperts(*capture, block);
            if (experts.isEmpty()) {  // every block or none
                m_experts.clear();
                m_choices.clear();
                titles.clear();
                break;
            }
            m_experts.push_back(std::move(experts));
            QVector<QVector<int>> choices;  // patchExperts checked that the routing covers every token
            const auto& tokens = capture->experts[static_cast<std::size_t>(block)];
            for (auto token = tokens.begin() + first; token != tokens.end(); ++token)
                choices.push_back(QVector<int>(token->begin(), token->end()));
            m_choices.push_back(std::move(choices));
            titles << tr("block %1").arg(block + 1);
        }
    }
    if (capture != nullptr && !m_experts.isEmpty())
        setTiles(probeQImage(capture->image), static_cast<int>(capture->image.gridRows),
                 static_cast<int>(capture->image.gridCols), titles);
    else
        setTiles(QImage(), 0, 0, {});
}

int PatchExpertGrid::expertAt(int block, int row, int col) const
{
    if (block < 0 || block >= m_experts.size() || row < 0 || col < 0 || row >= gridRows() || col >= gridCols())
        return -1;
    return m_experts[block].value(static_cast<qsizetype>(row) * gridCols() + col, -1);
}

void PatchExpertGrid::paintTile(QPainter& painter, int tile, const QRectF& target)
{
    Q_UNUSED(target)
    QVector<QRectF> dropped;
    painter.setOpacity(kOpacity);
    for (int row = 0; row < gridRows(); ++row)
        for (int col = 0; col < gridCols(); ++col) {
            const int expert = expertAt(tile, row, col);
            const QRectF cell = patchRect(tile, row, col);
            painter.fillRect(cell, expert < 0 ? kDroppedFill : colorscale::categorical(expert));
            if (expert < 0)
                dropped << cell;
        }
    painter.setOpacity(1);
    painter.setRenderHint(QPainter::Antialiasing, true);
    painter.setPen(QPen(palette().color(QPalette::Text), 1.5));
    for (const QRectF& cell : dropped) {
        const QRectF inner = cell.adjusted(cell.width() * 0.2, cell.height() * 0.2, -cell.width() * 0.2,
                                           -cell.height() * 0.2);
        painter.drawLine(inner.topLeft(), inner.bottomRight());
        painter.drawLine(inner.topRight(), inner.bottomLeft());
    }
}

QString PatchExpertGrid::readout(const Hit& hit) const
{
    QStringList picked;
    const QVector<int> chosen = m_choices.value(hit.tile).value(hit.row * gridCols() + hit.col);
    for (int k = 0; k < chosen.size(); ++k)
        picked << (chosen[k] < 0 ? tr("choice %1 dropped").arg(k + 1)
                                 : tr("choice %1: expert %2").arg(k + 1).arg(chosen[k] + 1));
    return tr("block %1, patch row %2, column %3: %4")
        .arg(hit.tile + 1)
        .arg(hit.row + 1)
        .arg(hit.col + 1)
        .arg(picked.isEmpty() ? tr("no route") : picked.join(QStringLiteral(", ")));
}

}  // namespace widelab
