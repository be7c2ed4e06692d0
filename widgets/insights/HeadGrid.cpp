#include "HeadGrid.h"

#include "CellPainter.h"
#include "ColorScale.h"
#include "HeadLabel.h"
#include "common/Palette.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace widelab {

namespace {

constexpr double kGap = 10;

QFont smallFont(const QFont& base)
{
    QFont font = base;
    font.setPointSizeF(std::max(7.0, base.pointSizeF() * 0.8));
    return font;
}

}  // namespace

HeadGrid::HeadGrid(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void HeadGrid::setCapture(const ProbeResult* capture, int layer)
{
    m_maps.clear();
    m_weights.clear();
    m_tokens.clear();
    m_max = 1;
    m_hover = Hit();
    // Only maps of tokens x tokens weights are drawn: no tokens, or a map of
    // another size, leaves nothing to draw (heads() 0) rather than a guess.
    const int n = capture != nullptr ? probeTokenCount(*capture) : 0;
    if (capture != nullptr && n > 0 && layer >= 0 && layer < probeLayers(*capture)) {
        double max = 1;
        const QVector<QVector<float>> maps = layerMaps(*capture, layer);
        const QVector<QImage> images = colorscale::attentionImages(maps, n, m_perHead, &max);
        m_max = static_cast<float>(max);
        for (qsizetype head = 0; head < images.size(); ++head) {
            if (images[head].isNull())
                continue;
            m_weights.push_back(maps[head]);
            m_maps.push_back(images[head]);
        }
        if (!m_maps.isEmpty())
            for (const QString& token : probeTokens(*capture))
                m_tokens.push_back(visibleToken(token));
    }
    measureLabels();
    updateHeight();
    update();
}

void HeadGrid::setScalePerHead(bool perHead) { m_perHead = perHead; }

void HeadGrid::setPaths(int paths)
{
    m_paths = std::max(1, paths);
    updateHeight();
    update();
}

void HeadGrid::setColumns(int columns)
{
    m_fixedColumns = std::max(0, columns);
    updateHeight();
    update();
}

void HeadGrid::setCaptions(const QVector<HeadMapCaption>& captions)
{
    m_captions = captions;
    update();
}

QString HeadGrid::headTitle(int head) const
{
    const QString caption = headCaptionText(m_captions, head, heads(), m_paths);
    const QString suffix = caption.isEmpty() ? QString() : QStringLiteral(" · ") + caption;
    const QString full = headLabel(head, heads(), m_paths) + suffix;
    return QFontMetricsF(smallFont(font())).horizontalAdvance(full) <= m_cell
               ? full
               : headShortLabel(head, heads(), m_paths) + suffix;
}

QColor HeadGrid::colorAt(int head, int query, int key) const
{
    if (head < 0 || head >= heads())
        return {};
    const QImage& map = m_maps[head];
    if (query < 0 || key < 0 || query >= map.height() || key >= map.width())
        return {};
    return QColor(map.pixel(key, query));
}

void HeadGrid::setCellSize(int pixels)
{
    m_cell = std::clamp(pixels, 24, 1200);
    updateHeight();
    update();
}

bool HeadGrid::showsLabels(int cell) const { return tokens() > 0 && double(cell) / tokens() >= kMinLabelPixels; }

bool HeadGrid::showsLabels() const { return showsLabels(m_cell); }

// Measured once per capture or font, not in every layout query of a paint.
void HeadGrid::measureLabels()
{
    const QFontMetricsF metrics(smallFont(font()));
    m_labelExtent = 0;
    for (const QString& token : m_tokens)
        m_labelExtent = std::max(m_labelExtent, metrics.horizontalAdvance(token));
}

double HeadGrid::gutter(int cell) const { return showsLabels(cell) ? std::min(m_labelExtent + 8, 90.0) : 4.0; }

double HeadGrid::topLabels(int cell) const { return showsLabels(cell) ? std::min(m_labelExtent + 6, 90.0) : 0.0; }

double HeadGrid::headerHeight() const { return QFontMetricsF(smallFont(font())).height() + 4; }

int HeadGrid::columnsFor(int width, int cell) const
{
    if (m_fixedColumns > 0)
        return std::clamp(m_fixedColumns, 1, std::max(1, heads()));
    int fit = static_cast<int>((width - gutter(cell) + kGap) / (cell + kGap));
    // Whole paths to a row, so a column is the same head of every path.
    const int perPath = headsPerPath(heads(), m_paths);
    if (perPath < heads() && fit >= perPath && fit < heads())
        fit = fit / perPath * perPath;
    return std::clamp(fit, 1, std::max(1, heads()));
}

double HeadGrid::widthFor(int columns, int cell) const { return gutter(cell) + columns * (cell + kGap); }

int HeadGrid::columns() const { return columnsFor(width(), m_cell); }

int HeadGrid::heightFor(int width, int cell) const
{
    if (heads() == 0)
        return 60;
    const int columns = columnsFor(width, cell);
    const int rows = (heads() + columns - 1) / columns;
    return static_cast<int>(topLabels(cell) + rows * (headerHeight() + cell + kGap) + 4);
}

int HeadGrid::heightFor(int width) const { return heightFor(width, m_cell); }

int HeadGrid::fittingCellSize(const QSize& area, int minimum) const
{
    if (heads() == 0)
        return m_cell;
    // Both ways: a single column of maps must not be wider than the area either.
    for (int cell = std::min(area.width(), area.height()); cell > minimum; cell -= 2)
        if (heightFor(area.width(), cell) <= area.height()
            && widthFor(columnsFor(area.width(), cell), cell) <= area.width())
            return cell;
    return minimum;
}

void HeadGrid::updateHeight()
{
    setMinimumHeight(heightFor(std::max(width(), m_cell + 100)));
    updateGeometry();
}

QSize HeadGrid::sizeHint() const
{
    const int shown = m_fixedColumns > 0 ? columnsFor(0, m_cell) : std::min(heads(), 4);
    const int w = static_cast<int>(std::ceil(widthFor(shown, m_cell)));
    return {std::max(w, 200), heightFor(std::max(w, 200))};
}

QRectF HeadGrid::mapRect(int head) const
{
    if (head < 0 || head >= heads())
        return {};
    const int cols = columns();
    const int row = head / cols;
    const int col = head % cols;
    const double x = gutter(m_cell) + col * (m_cell + kGap);
    const double y = topLabels(m_cell) + row * (headerHeight() + m_cell + kGap) + headerHeight();
    return {x, y, double(m_cell), double(m_cell)};
}

HeadGrid::Hit HeadGrid::hitAt(const QPointF& position) const
{
    const int n = tokens();
    for (int head = 0; head < heads() && n > 0; ++head) {
        const QRectF r = mapRect(head);
        if (!r.contains(position))
            continue;
        Hit hit;
        hit.head = head;
        hit.query = std::clamp(static_cast<int>((position.y() - r.top()) / r.height() * n), 0, n - 1);
        hit.key = std::clamp(static_cast<int>((position.x() - r.left()) / r.width() * n), 0, n - 1);
        return hit;
    }
    return {};
}

QString HeadGrid::readout(const Hit& hit) const
{
    if (!hit.valid() || hit.head >= m_weights.size())
        return {};
    const int n = tokens();
    const float weight = m_weights[hit.head].value(hit.query * n + hit.key);
    const QString caption = headCaptionText(m_captions, hit.head, heads(), m_paths);
    return tr("%1: query %2 \"%3\" → key %4 \"%5\": %6")
        .arg(headLabel(hit.head, heads(), m_paths) + (caption.isEmpty() ? QString() : QStringLiteral(" · ") + caption))
        .arg(hit.query)
        .arg(m_tokens.value(hit.query))
        .arg(hit.key)
        .arg(m_tokens.value(hit.key))
        .arg(QString::number(weight, 'f', 3));
}

void HeadGrid::paintEvent(QPaintEvent* event)
{
    QPainter painter(this);
    const QColor text = palette().color(QPalette::Text);
    painter.fillRect(rect(), palette().color(QPalette::Base));
    if (heads() == 0 || tokens() == 0)
        return;
    const QFont small = smallFont(font());
    const QFontMetricsF metrics(small);
    painter.setFont(small);
    const int n = tokens();
    const double step = double(m_cell) / n;
    const bool labels = showsLabels();
    const int cols = columns();
    for (int head = 0; head < heads(); ++head) {
        const QRectF r = mapRect(head);
        const QRectF framed = r.adjusted(0, -headerHeight(), 0, 0);
        if (!framed.intersects(event->rect()))
            continue;
        painter.setPen(text);
        painter.drawText(QRectF(r.left(), r.top() - headerHeight(), r.width(), headerHeight() - 2),
                         Qt::AlignLeft | Qt::AlignBottom,
                         metrics.elidedText(headTitle(head), Qt::ElideRight, r.width() + kGap));
        paintCells(painter, r, m_maps[head]);
        if (m_hover.head == head) {
            painter.setPen(QPen(palette().color(QPalette::Highlight), 2));
            painter.setBrush(Qt::NoBrush);
            painter.drawRect(r.adjusted(-1, -1, 1, 1));
            painter.drawRect(QRectF(r.left() + m_hover.key * step, r.top() + m_hover.query * step, step, step));
        }
        if (!labels)
            continue;
        painter.setPen(text);
        if (head % cols == 0)  // query labels left of each grid row
            for (int q = 0; q < n; ++q)
                painter.drawText(QRectF(0, r.top() + q * step, gutter(m_cell) - 6, step), Qt::AlignRight | Qt::AlignVCenter,
                                 metrics.elidedText(m_tokens[q], Qt::ElideRight, gutter(m_cell) - 6));
        if (head < cols)  // key labels, upright, once above the grid
            for (int k = 0; k < n; ++k) {
                painter.save();
                painter.translate(r.left() + (k + 0.5) * step, r.top() - headerHeight() - 2);
                painter.rotate(-90);
                painter.drawText(QRectF(0, -step / 2, topLabels(m_cell) - 4, step), Qt::AlignLeft | Qt::AlignVCenter,
                                 metrics.elidedText(m_tokens[k], Qt::ElideRight, topLabels(m_cell) - 4));
                painter.restore();
            }
    }
}

void HeadGrid::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) {
        measureLabels();
        updateHeight();
    }
}

void HeadGrid::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    const int needed = heightFor(width());
    if (minimumHeight() != needed)
        setMinimumHeight(needed);
}

void HeadGrid::mouseMoveEvent(QMouseEvent* event)
{
    const Hit hit = hitAt(event->position());
    if (hit.head != m_hover.head || hit.query != m_hover.query || hit.key != m_hover.key) {
        m_hover = hit;
        update();
    }
    if (hit.valid())
        QToolTip::showText(event->globalPosition().toPoint(), readout(hit) + tr("\nclick to enlarge"), this);
    else
        QToolTip::hideText();
}

void HeadGrid::mousePressEvent(QMouseEvent* event)
{
    const Hit hit = hitAt(event->position());
    if (event->button() == Qt::LeftButton && hit.valid())
        Q_EMIT headClicked(hit.head);
    QWidget::mousePressEvent(event);
}

void HeadGrid::leaveEvent(QEvent* event)
{
    m_hover = Hit();
    update();
    QWidget::leaveEvent(event);
}

}  // namespace widelab
