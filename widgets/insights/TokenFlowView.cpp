#include "TokenFlowView.h"

#include "ColorScale.h"
#include "HeadLabel.h"
#include "common/Palette.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace widelab {

namespace {

constexpr double kColumnWidth = 110;
constexpr float kLeastWeight = 0.01f;

}  // namespace

TokenFlowView::TokenFlowView(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(true);
}

void TokenFlowView::setCapture(const ProbeResult* capture, int layer, int paths)
{
    m_paths = std::max(1, paths);
    m_tokens.clear();
    m_maps.clear();
    m_mean.clear();
    if (capture != nullptr && layer >= 0 && layer < probeLayers(*capture)) {
        for (const QString& token : probeTokens(*capture))
            m_tokens.push_back(visibleToken(token));
        m_maps = layerMaps(*capture, layer);
        m_mean = meanOverHeads(*capture, layer);
    }
    if (m_focus >= m_tokens.size())
        m_focus = -1;
    update();
}

void TokenFlowView::setFocusToken(int token, bool left)
{
    m_focus = token >= 0 && token < m_tokens.size() ? token : -1;
    m_focusLeft = left;
    update();
}

double TokenFlowView::rowHeight() const
{
    // Rows spread over the height, up to kMaxRow pixels, so that lines are told apart.
    constexpr double kMaxRow = 28;
    const double available = height() - 40.0 - legendHeight();
    const double least = QFontMetricsF(font()).height() + 2;
    if (m_tokens.isEmpty())
        return least;
    const double share = available / m_tokens.size();
    return share < least ? share : std::min(share, kMaxRow);
}

QRectF TokenFlowView::tokenRect(int token, bool left) const
{
    const double x = left ? 8 : width() - 8 - kColumnWidth;
    return {x, 30 + token * rowHeight(), kColumnWidth, rowHeight()};
}

int TokenFlowView::tokenAt(const QPointF& position, bool* left) const
{
    for (const bool side : {true, false})
        for (int token = 0; token < m_tokens.size(); ++token)
            if (tokenRect(token, side).contains(position)) {
                if (left)
                    *left = side;
                return token;
            }
    return -1;
}

QVector<TokenFlowView::Line> TokenFlowView::lines() const
{
    QVector<Line> all;
    const int n = static_cast<int>(m_tokens.size());
    auto add = [&](int query, int key, int head, float weight) {
        if (weight >= kLeastWeight)
            all.push_back({query, key, head, weight});
    };
    if (m_focus < 0) {
        for (int q = 0; q < n; ++q)
            for (int k = 0; k < n; ++k)
                add(q, k, -1, m_mean.value(q * n + k));
        return all;
    }
    for (int head = 0; head < m_maps.size(); ++head)
        for (int other = 0; other < n; ++other) {
            const int q = m_focusLeft ? m_focus : other;
            const int k = m_focusLeft ? other : m_focus;
            add(q, k, head, m_maps[head].value(q * n + k));
        }
    return all;
}

void TokenFlowView::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().color(QPalette::Base));
    const QColor text = palette().color(QPalette::Text);
    painter.setPen(text);
    painter.drawText(QRectF(8, 4, kColumnWidth, 22), Qt::AlignLeft | Qt::AlignVCenter, tr("query"));
    painter.drawText(QRectF(width() - 8 - kColumnWidth, 4, kColumnWidth, 22), Qt::AlignRight | Qt::AlignVCenter,
                     tr("key"));
    if (m_tokens.isEmpty())
        return;
    painter.setRenderHint(QPainter::Antialiasing);
    for (const Line& line : lines()) {
        QColor color = line.head < 0 ? text : colorscale::categorical(line.head);
        color.setAlphaF(std::clamp(line.weight, 0.0f, 1.0f));
        painter.setPen(QPen(color, line.head < 0 ? 1.5 : 2.0));
        const QRectF from = tokenRect(line.query, true);
        const QRectF to = tokenRect(line.key, false);
        painter.drawLine(QPointF(from.right() + 4, from.center().y()), QPointF(to.left() - 4, to.center().y()));
    }
    painter.setRenderHint(QPainter::Antialiasing, false);
    const QFontMetricsF metrics(font());
    if (m_focus >= 0)
        paintHeadLegend(painter);
    for (const bool left : {true, false})
        for (int token = 0; token < m_tokens.size(); ++token) {
            const QRectF r = tokenRect(token, left);
            if (token == m_focus && left == m_focusLeft)
                painter.fillRect(r, palette().color(QPalette::Highlight));
            painter.setPen(token == m_focus && left == m_focusLeft ? palette().color(QPalette::HighlightedText) : text);
            painter.drawText(r.adjusted(4, 0, -4, 0), (left ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter,
                             metrics.elidedText(m_tokens[token], Qt::ElideRight, r.width() - 8));
        }
}

double TokenFlowView::legendItemWidth() const
{
    const int heads = static_cast<int>(m_maps.size());
    return QFontMetricsF(font()).horizontalAdvance(headName(std::max(0, heads - 1))) + 18;
}

int TokenFlowView::legendColumns() const { return std::max(1, static_cast<int>((width() - 16) / legendItemWidth())); }

// Room kept under the tokens for the head colours, shown or not, so rows do not jump.
double TokenFlowView::legendHeight() const
{
    if (m_maps.isEmpty())
        return 0;
    const int rows = (static_cast<int>(m_maps.size()) + legendColumns() - 1) / legendColumns();
    return rows * (QFontMetricsF(font()).height() + 2) + 8;
}

QString TokenFlowView::headName(int head) const
{
    return headShortLabel(head, static_cast<int>(m_maps.size()), m_paths);
}

// Which colour is which head, in rows under the tokens.
void TokenFlowView::paintHeadLegend(QPainter& painter) const
{
    const QFontMetricsF metrics(font());
    const double item = legendItemWidth();
    const int perRow = legendColumns();
    const double y = height() - legendHeight() + 4;
    painter.setPen(palette().color(QPalette::Text));
    for (int head = 0; head < m_maps.size(); ++head) {
        const double x = 8 + (head % perRow) * item;
        const double top = y + (head / perRow) * (metrics.height() + 2);
        painter.fillRect(QRectF(x, top + 3, 12, metrics.height() - 6), colorscale::categorical(head));
        painter.drawText(QRectF(x + 15, top, item - 15, metrics.height()), Qt::AlignLeft | Qt::AlignVCenter,
                         headName(head));
    }
}

void TokenFlowView::mouseMoveEvent(QMouseEvent* event)
{
    bool left = true;
    const int token = tokenAt(event->position(), &left);
    if (token != m_focus || left != m_focusLeft)
        setFocusToken(token, left);
    if (token >= 0)
        QToolTip::showText(event->globalPosition().toPoint(),
                           left ? tr("where \"%1\" (query %2) looks, one colour per head").arg(m_tokens[token]).arg(token)
                                : tr("what looks at \"%1\" (key %2), one colour per head").arg(m_tokens[token]).arg(token),
                           this);
}

void TokenFlowView::leaveEvent(QEvent* event)
{
    setFocusToken(-1, true);
    QWidget::leaveEvent(event);
}

}  // namespace widelab
