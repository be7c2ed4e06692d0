#include "PatchTileGrid.h"

#include "CellPainter.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace widelab {

namespace {

constexpr double kGap = 10;

QFont titleFont(const QFont& base)
{
    QFont font = base;
    font.setPointSizeF(std::max(7.0, base.pointSizeF() * 0.85));
    return font;
}

}  // namespace

PatchTileGrid::PatchTileGrid(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void PatchTileGrid::setTiles(const QImage& image, int gridRows, int gridCols, const QStringList& titles,
                             const QStringList& shortTitles)
{
    const bool drawable = !image.isNull() && gridRows > 0 && gridCols > 0 && !titles.isEmpty();
    m_image = drawable ? image.convertToFormat(QImage::Format_RGB32) : QImage();
    m_rows = drawable ? gridRows : 0;
    m_cols = drawable ? gridCols : 0;
    m_titles = drawable ? titles : QStringList();
    m_shortTitles = drawable && shortTitles.size() == titles.size() ? shortTitles : m_titles;
    m_hover = Hit();
    updateHeight();
    update();
}

void PatchTileGrid::setColumns(int columns)
{
    m_fixedColumns = std::max(0, columns);
    updateHeight();
    update();
}

void PatchTileGrid::setCellSize(int pixels)
{
    m_cell = std::clamp(pixels, 24, 1200);
    updateHeight();
    update();
}

QString PatchTileGrid::shownTitle(int tile) const
{
    const QString full = m_titles.value(tile);
    return QFontMetricsF(titleFont(font())).horizontalAdvance(full) <= m_cell + kGap ? full : m_shortTitles.value(tile);
}

double PatchTileGrid::headerHeight() const { return QFontMetricsF(titleFont(font())).height() + 4; }

double PatchTileGrid::tileHeight(int cell) const
{
    if (m_image.isNull() || m_image.width() == 0)
        return cell;
    return std::round(double(cell) * m_image.height() / m_image.width());
}

int PatchTileGrid::columnsFor(int width, int cell) const
{
    if (m_fixedColumns > 0)
        return std::clamp(m_fixedColumns, 1, std::max(1, tiles()));
    const int fit = static_cast<int>((width + kGap) / (cell + kGap));
    return std::clamp(fit, 1, std::max(1, tiles()));
}

int PatchTileGrid::columns() const { return columnsFor(width(), m_cell); }

int PatchTileGrid::heightFor(int width, int cell) const
{
    if (tiles() == 0)
        return 60;
    const int columns = columnsFor(width, cell);
    const int rows = (tiles() + columns - 1) / columns;
    return static_cast<int>(std::ceil(rows * (headerHeight() + tileHeight(cell) + kGap) + 4));
}

int PatchTileGrid::heightFor(int width) const { return heightFor(width, m_cell); }

int PatchTileGrid::fittingCellSize(const QSize& area, int minimum) const
{
    if (tiles() == 0)
        return m_cell;
    for (int cell = area.width(); cell > minimum; cell -= 2)
        if (heightFor(area.width(), cell) <= area.height()
            && columnsFor(area.width(), cell) * (cell + kGap) - kGap <= area.width())
            return cell;
    return minimum;
}

void PatchTileGrid::updateHeight()
{
    setMinimumHeight(heightFor(std::max(width(), m_cell)));
    updateGeometry();
}

QSize PatchTileGrid::sizeHint() const
{
    const int shown = m_fixedColumns > 0 ? columnsFor(0, m_cell) : std::min(tiles(), 4);
    const int w = static_cast<int>(std::ceil(std::max(1, shown) * (m_cell + kGap)));
    return {std::max(w, 200), heightFor(std::max(w, 200))};
}

QRectF PatchTileGrid::tileRect(int tile) const
{
    if (tile < 0 || tile >= tiles())
        return {};
    const int cols = columns();
    const double x = (tile % cols) * (m_cell + kGap);
    const double y = (tile / cols) * (headerHeight() + tileHeight(m_cell) + kGap) + headerHeight();
    return {x, y, double(m_cell), tileHeight(m_cell)};
}

QRectF PatchTileGrid::patchRect(int tile, int row, int col) const
{
    const QRectF r = tileRect(tile);
    if (r.isNull() || row < 0 || col < 0 || row >= m_rows || col >= m_cols)
        return {};
    const double w = r.width() / m_cols, h = r.height() / m_rows;
    return {r.left() + col * w, r.top() + row * h, w, h};
}

PatchTileGrid::Hit PatchTileGrid::hitAt(const QPointF& position) const
{
    for (int tile = 0; tile < tiles(); ++tile) {
        const QRectF r = tileRect(tile);
        if (!r.contains(position))
            continue;
        Hit hit;
        hit.tile = tile;
        hit.row = std::clamp(static_cast<int>((position.y() - r.top()) / r.height() * m_rows), 0, m_rows - 1);
        hit.col = std::clamp(static_cast<int>((position.x() - r.left()) / r.width() * m_cols), 0, m_cols - 1);
        return hit;
    }
    return {};
}

void PatchTileGrid::paintEvent(QPaintEvent* event)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().color(QPalette::Base));
    const QFont font = titleFont(this->font());
    const QFontMetricsF metrics(font);
    painter.setFont(font);
    for (int tile = 0; tile < tiles(); ++tile) {
        const QRectF r = tileRect(tile);
        if (!r.adjusted(0, -headerHeight(), 0, 0).intersects(event->rect()))
            continue;
        painter.setPen(palette().color(QPalette::Text));
        painter.drawText(QRectF(r.left(), r.top() - headerHeight(), r.width() + kGap, headerHeight() - 2),
                         Qt::AlignLeft | Qt::AlignBottom,
                         metrics.elidedText(shownTitle(tile), Qt::ElideRight, r.width() + kGap));
        paintCells(painter, r, m_image);
        painter.save();
        paintTile(painter, tile, r);
        painter.restore();
        if (m_hover.tile == tile) {
            painter.setPen(QPen(palette().color(QPalette::Highlight), 2));
            painter.setBrush(Qt::NoBrush);
            painter.drawRect(patchRect(tile, m_hover.row, m_hover.col));
        }
    }
}

void PatchTileGrid::mouseMoveEvent(QMouseEvent* event)
{
    const Hit hit = hitAt(event->position());
    if (hit.tile != m_hover.tile || hit.row != m_hover.row || hit.col != m_hover.col) {
        m_hover = hit;
        update();
    }
    const QString text = hit.valid() ? readout(hit) : QString();
    if (!text.isEmpty())
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
    else
        QToolTip::hideText();
}

void PatchTileGrid::mousePressEvent(QMouseEvent* event)
{
    const Hit hit = hitAt(event->position());
    if (event->button() == Qt::LeftButton && hit.valid())
        Q_EMIT tileClicked(hit.tile);
    QWidget::mousePressEvent(event);
}

void PatchTileGrid::leaveEvent(QEvent* event)
{
    m_hover = Hit();
    update();
    QWidget::leaveEvent(event);
}

void PatchTileGrid::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    const int needed = heightFor(width());
    if (minimumHeight() != needed)
        setMinimumHeight(needed);
}

}  // namespace widelab
