#include "ModelViewFigure.h"

#include "CellPainter.h"
#include "ColorScale.h"
#include "HeadLabel.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace widelab {

namespace {

constexpr double kMargin = 6;

// Between maps: less when the maps are small, more between paths.
double gapFor(int cell) { return cell >= 40 ? 6 : 3; }

QFont smallFont(const QFont& base)
{
    QFont font = base;
    font.setPointSizeF(std::max(7.0, base.pointSizeF() * 0.8));
    return font;
}

}  // namespace

ModelViewFigure::ModelViewFigure(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
}

void ModelViewFigure::setCapture(const ProbeResult* capture, int paths, bool perHead)
{
    m_maps.clear();
    m_weights.clear();
    m_tokens.clear();
    m_heads = 0;
    m_paths = std::max(1, paths);
    m_hover = Hit();
    const int n = capture != nullptr ? probeTokenCount(*capture) : 0;
    for (int layer = 0; n > 0 && layer < probeLayers(*capture); ++layer) {
        QVector<QVector<float>> heads = layerMaps(*capture, layer);
        // A map of the wrong size stays a blank square rather than a guess.
        const QVector<QImage> images = colorscale::attentionImages(heads, n, perHead);
        m_heads = std::max(m_heads, static_cast<int>(heads.size()));
        m_maps.push_back(images);
        m_weights.push_back(std::move(heads));
    }
    if (m_heads > 0)
        for (const QString& token : probeTokens(*capture))
            m_tokens.push_back(visibleToken(token));
    relayout();
}

void ModelViewFigure::setCellSize(int pixels)
{
    m_cell = std::clamp(pixels, 8, 600);
    relayout();
}

void ModelViewFigure::relayout()
{
    setFixedSize(figureSize(m_cell));
    update();
}

double ModelViewFigure::gutter() const
{
    const QFontMetricsF metrics(smallFont(font()));
    return kMargin + metrics.horizontalAdvance(tr("layer %1").arg(std::max(1, layers()))) + 8;
}

// One line of head names; a multi-path model's paths on a line above them.
double ModelViewFigure::headerHeight() const
{
    const int lines = headsPerPath(m_heads, m_paths) < m_heads ? 2 : 1;
    return kMargin + lines * QFontMetricsF(smallFont(font())).height() + 4;
}

double ModelViewFigure::headLeft(int head, int cell) const
{
    const int perPath = headsPerPath(m_heads, m_paths);
    const double pathGap = perPath < m_heads ? gapFor(cell) * 1.5 : 0.0;
    return gutter() + head * (cell + gapFor(cell)) + (head / perPath) * pathGap;
}

QSize ModelViewFigure::figureSize(int cell) const
{
    if (layers() == 0 || m_heads == 0)
        return {200, 60};
    const double width = headLeft(m_heads - 1, cell) + cell + kMargin;
    const double height = headerHeight() + layers() * (cell + gapFor(cell)) - gapFor(cell) + kMargin;
    return {static_cast<int>(std::ceil(width)), static_cast<int>(std::ceil(height))};
}

int ModelViewFigure::fittingCellSize(const QSize& area, int minimum) const
{
    for (int cell = std::max(minimum, std::min(area.width(), area.height())); cell > minimum; --cell) {
        const QSize size = figureSize(cell);
        if (size.width() <= area.width() && size.height() <= area.height())
            return cell;
    }
    return minimum;
}

QRectF ModelViewFigure::mapRect(int layer, int head) const
{
    if (layer < 0 || layer >= layers() || head < 0 || head >= m_heads)
        return {};
    return {headLeft(head, m_cell), headerHeight() + layer * (m_cell + gapFor(m_cell)), double(m_cell),
            double(m_cell)};
}

QColor ModelViewFigure::colorAt(int layer, int head, int query, int key) const
{
    if (layer < 0 || layer >= layers() || head < 0 || head >= m_maps[layer].size())
        return {};
    const QImage& image = m_maps[layer][head];
    if (image.isNull() || query < 0 || key < 0 || query >= image.height() || key >= image.width())
        return {};
    return QColor(image.pixel(key, query));
}

ModelViewFigure::Hit ModelViewFigure::hitAt(const QPointF& position) const
{
    const int n = tokens();
    if (n == 0)
        return {};
    const int layer = static_cast<int>(std::floor((position.y() - headerHeight()) / (m_cell + gapFor(m_cell))));
    int head = 0;
    while (head + 1 < m_heads && headLeft(head + 1, m_cell) <= position.x())
        ++head;
    const QRectF r = mapRect(layer, head);
    if (!r.contains(position) || head >= m_maps[layer].size() || m_maps[layer][head].isNull())
        return {};
    Hit hit;
    hit.layer = layer;
    hit.head = head;
    hit.query = std::clamp(static_cast<int>((position.y() - r.top()) / r.height() * n), 0, n - 1);
    hit.key = std::clamp(static_cast<int>((position.x() - r.left()) / r.width() * n), 0, n - 1);
    return hit;
}

QString ModelViewFigure::readout(const Hit& hit) const
{
    if (!hit.valid() || hit.layer >= layers() || hit.head >= m_weights[hit.layer].size())
        return {};
    const int n = tokens();
    const float weight = m_weights[hit.layer][hit.head].value(hit.query * n + hit.key);
    const QString caption = headCaptionText(m_captions, hit.head, m_heads, m_paths);
    return tr("layer %1, %2: query %3 \"%4\" → key %5 \"%6\": %7")
        .arg(hit.layer + 1)
        .arg(headLabel(hit.head, m_heads, m_paths) + (caption.isEmpty() ? QString() : QStringLiteral(" · ") + caption))
        .arg(hit.query)
        .arg(m_tokens.value(hit.query))
        .arg(hit.key)
        .arg(m_tokens.value(hit.key))
        .arg(QString::number(weight, 'f', 3));
}

QString ModelViewFigure::columnLabel(int head) const
{
    const QFontMetricsF metrics(smallFont(font()));
    const QString full = headLabel(head, m_heads, m_paths);
    return metrics.horizontalAdvance(full) <= m_cell ? full : headShortLabel(head, m_heads, m_paths);
}

void ModelViewFigure::paintEvent(QPaintEvent* event)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().color(QPalette::Base));
    const QColor text = palette().color(QPalette::Text);
    const QFont small = smallFont(font());
    const QFontMetricsF metrics(small);
    painter.setFont(small);
    painter.setPen(text);
    if (layers() == 0) {
        painter.drawText(rect(), Qt::AlignCenter, tr("No attention maps to draw."));
        return;
    }
    paintHeader(painter);
    for (int layer = 0; layer < layers(); ++layer) {
        const QRectF first = mapRect(layer, 0);
        painter.setPen(text);
        painter.drawText(QRectF(kMargin, first.top(), gutter() - kMargin - 6, first.height()),
                         Qt::AlignRight | Qt::AlignVCenter, tr("layer %1").arg(layer + 1));
        for (int head = 0; head < m_maps[layer].size(); ++head) {
            const QRectF r = mapRect(layer, head);
            if (!r.intersects(event->rect()))
                continue;
            if (m_maps[layer][head].isNull()) {
                painter.setPen(QPen(text, 1, Qt::DotLine));
                painter.drawRect(r);
                continue;
            }
            paintCells(painter, r, m_maps[layer][head]);
        }
    }
    if (m_hover.valid()) {
        painter.setPen(QPen(palette().color(QPalette::Highlight), 2));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(mapRect(m_hover.layer, m_hover.head).adjusted(-1, -1, 1, 1));
    }
}

// Above the columns: "head N" where it fits, else the number, every k-th when
// even numbers overlap; a multi-path model gets "path p" over each path's heads
// and the heads numbered within their path.
void ModelViewFigure::paintHeader(QPainter& painter) const
{
    const QFontMetricsF metrics(painter.font());
    const int perPath = headsPerPath(m_heads, m_paths);
    const bool split = perPath < m_heads;
    const double lineHeight = metrics.height();
    const double bottom = headerHeight() - 2;
    if (split)
        for (int path = 0; path < m_heads / perPath; ++path) {
            const double left = headLeft(path * perPath, m_cell);
            const double right = headLeft((path + 1) * perPath - 1, m_cell) + m_cell;
            const QString title = metrics.horizontalAdvance(tr("path %1").arg(path + 1)) <= right - left
                                      ? tr("path %1").arg(path + 1)
                                      : tr("p%1").arg(path + 1);
            painter.drawText(QRectF(left, bottom - 2 * lineHeight, right - left, lineHeight),
                             Qt::AlignLeft | Qt::AlignBottom, metrics.elidedText(title, Qt::ElideRight, right - left));
        }
    const double room = m_cell + gapFor(m_cell);
    const QString widest = split ? QString::number(perPath) : tr("head %1").arg(m_heads);
    const bool words = !split && metrics.horizontalAdvance(widest) <= room;
    const double needed = words ? metrics.horizontalAdvance(widest) : metrics.horizontalAdvance(QString::number(perPath));
    const int stride = std::max(1, static_cast<int>(std::ceil((needed + 2) / room)));
    for (int head = 0; head < m_heads; ++head) {
        const int number = head % perPath;  // within its path (all heads: one path)
        if (number % stride != 0)
            continue;
        const QString text = words ? tr("head %1").arg(head + 1) : QString::number(number + 1);
        painter.drawText(QRectF(headLeft(head, m_cell), bottom - lineHeight, needed + 2, lineHeight),
                         Qt::AlignLeft | Qt::AlignBottom, text);
    }
}

void ModelViewFigure::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange)
        relayout();
}

void ModelViewFigure::mouseMoveEvent(QMouseEvent* event)
{
    const Hit hit = hitAt(event->position());
    if (hit.layer != m_hover.layer || hit.head != m_hover.head) {
        m_hover = hit;
        update();
    }
    if (hit.valid())
        QToolTip::showText(event->globalPosition().toPoint(), readout(hit) + tr("\nclick to enlarge"), this);
    else
        QToolTip::hideText();
}

void ModelViewFigure::mousePressEvent(QMouseEvent* event)
{
    const Hit hit = hitAt(event->position());
    if (event->button() == Qt::LeftButton && hit.valid())
        Q_EMIT headClicked(hit.layer, hit.head);
    QWidget::mousePressEvent(event);
}

void ModelViewFigure::leaveEvent(QEvent* event)
{
    m_hover = Hit();
    update();
    QWidget::leaveEvent(event);
}

}  // namespace widelab
