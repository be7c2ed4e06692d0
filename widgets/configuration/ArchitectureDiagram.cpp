#include "ArchitectureDiagram.h"

#include "common/Palette.h"

#include <QHelpEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace widelab {
namespace {

// `amount` of `colour` over `background`.
QColor mix(const QColor& colour, const QColor& background, double amount)
{
    return palette::blend(background, colour, amount);
}

QColor moduleColour(const DiagramItem& item)
{
    return item.shared ? palette::sharedColor() : palette::individualColor();
}

// Text inside `rect`, elided to fit; rotated when the rect is tall and narrow.
void drawText(QPainter& p, const QRectF& rect, const QString& text, Qt::Alignment align)
{
    if (text.isEmpty() || rect.width() < 6 || rect.height() < 6)
        return;
    const QFontMetricsF metrics(p.font());
    if (rect.height() > 3 * rect.width() && metrics.horizontalAdvance(text) > rect.width() - 2) {
        p.save();
        p.translate(rect.center());
        p.rotate(-90);
        const QRectF turned(-rect.height() / 2, -rect.width() / 2, rect.height(), rect.width());
        p.drawText(turned, Qt::AlignCenter, metrics.elidedText(text, Qt::ElideRight, turned.width() - 4));
        p.restore();
        return;
    }
    p.drawText(rect, align, metrics.elidedText(text, Qt::ElideRight, rect.width() - 4));
}

// Evenly spaced bars, one per head (or as many as fit).
void drawTicks(QPainter& p, const QRectF& rect, int count, const QColor& colour)
{
    if (count <= 0 || rect.width() < 2)
        return;
    const double step = rect.width() / count;
    const double bar = step >= 3 ? std::max(1.0, step * 0.6) : step;
    p.setPen(Qt::NoPen);
    p.setBrush(colour);
    for (int i = 0; i < count; ++i)
        p.drawRect(QRectF(rect.left() + i * step + (step - bar) / 2, rect.top(), bar, rect.height()));
}

}  // namespace

ArchitectureDiagram::ArchitectureDiagram(QWidget* parent) : QWidget(parent)
{
    setAccessibleName(tr("Architecture diagram"));
    // Its height follows its width (the legend wraps), and a QScrollArea reads
    // that from the policy, not from hasHeightForWidth().
    QSizePolicy policy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
    setMouseTracking(false);
    relayout();
}

void ArchitectureDiagram::setSketch(const ArchitectureSketch& sketch)
{
    m_sketch = sketch;
    setAccessibleDescription(describeArchitecture(sketch));
    relayout();
    updateGeometry();
    update();
}

QSize ArchitectureDiagram::sizeHint() const
{
    return {420, static_cast<int>(std::ceil(preferredDiagramHeight(m_sketch, 420)))};
}

// At the widest usual width: in a QScrollArea, a narrower one's taller legend
// comes from heightForWidth.
QSize ArchitectureDiagram::minimumSizeHint() const { return {240, heightForWidth(420)}; }

int ArchitectureDiagram::heightForWidth(int width) const
{
    return static_cast<int>(std::ceil(minimumDiagramHeight(m_sketch, width)));
}

void ArchitectureDiagram::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    relayout();
}

void ArchitectureDiagram::relayout() { m_items = layoutArchitecture(m_sketch, size()); }

void ArchitectureDiagram::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette pal = palette();
    const QColor background = pal.color(QPalette::Base);
    const QColor text = pal.color(QPalette::Text);
    const QColor faint = mix(text, background, 0.35);
    p.fillRect(rect(), background);

    QFont small = font();
    small.setPointSizeF(std::max(6.5, small.pointSizeF() * 0.85));
    p.setFont(small);

    for (const DiagramItem& item : m_items) {
        const QColor colour = moduleColour(item);
        const QRectF r = item.rect;
        p.setPen(Qt::NoPen);
        p.setBrush(Qt::NoBrush);
        if (item.role == "block") {
            p.setPen(QPen(mix(text, background, 0.18), 1));
            p.setBrush(mix(text, background, 0.035));
            p.drawRoundedRect(r, 4, 4);
            p.setPen(QPen(mix(text, background, 0.25), 1, Qt::DotLine));  // the residual stream
            p.drawLine(QPointF(r.left() + 40, r.center().y()), QPointF(r.right() - 2, r.center().y()));
        } else if (item.role == "label") {
            p.setPen(text);
            drawText(p, r, item.text, Qt::AlignLeft | Qt::AlignVCenter);
        } else if (item.role == "embedding" || item.role == "head") {
            p.setPen(QPen(faint, 1));
            p.setBrush(mix(text, background, 0.08));
            p.drawRoundedRect(r, 4, 4);
            p.setPen(text);
            if (r.height() > 30)  // two lines: the layout found one too narrow
                p.drawText(r.adjusted(4, 0, -4, 0), Qt::AlignCenter | Qt::TextWordWrap, item.text);
            else
                drawText(p, r, item.text, Qt::AlignCenter);
        } else if (item.role == "attention" || item.role == "ffn" || item.role == "layernorm") {
            p.setPen(QPen(colour, item.shared ? 2 : 1.2));
            p.setBrush(mix(colour, background, item.shared ? 0.22 : 0.16));
            p.drawRoundedRect(r.adjusted(0.5, 0.5, -0.5, -0.5), 3, 3);
            p.setPen(text);
            const double band = diagramTextBand(r);
            if (item.role == "layernorm") {
                drawText(p, r, item.text, Qt::AlignCenter);
            } else if (band > 20) {
                p.drawText(QRectF(r.left() + 4, r.top() + 1, r.width() - 8, band), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap,
                           item.text);
            } else if (band > 0) {
                drawText(p, QRectF(r.left() + 4, r.top() + 1, r.width() - 8, band + 1), item.text,
                         Qt::AlignLeft | Qt::AlignVCenter);
            } else {
                // Where the whole text would be cut, the name alone ("MoE"); the tooltip has the rest.
                const QRectF side(r.left() + 4, r.top(), diagramSideTextWidth(r) - 4, r.height());
                const bool fits = QFontMetricsF(p.font()).horizontalAdvance(item.text) <= side.width() - 4;
                drawText(p, side, fits ? item.text : item.text.section(QStringLiteral(" · "), 0, 0), Qt::AlignLeft | Qt::AlignVCenter);
            }
        } else if (item.role == "heads") {
            drawTicks(p, r, item.count, mix(colour, background, 0.55));
        } else if (item.role == "expert") {
            p.setPen(QPen(colour, 1));
            p.setBrush(mix(colour, background, 0.45));
            p.drawRoundedRect(r, 2, 2);
            p.setPen(text);
            drawText(p, r, item.text, Qt::AlignCenter);
        } else if (item.role == "path") {
            p.setPen(Qt::NoPen);
            p.setBrush(mix(colour, background, 0.38));
            p.drawRect(r);
            if (item.count > 0 && r.height() >= 3)
                drawTicks(p, r.adjusted(1, r.height() * 0.25, -1, -r.height() * 0.25), item.count,
                          mix(colour, background, 0.7));
        } else if (item.role == "pathnorm") {
            p.setBrush(colour.darker(130));
            p.drawRect(r);
        } else if (item.role == "combine") {
            p.setPen(QPen(colour.darker(120), 1.2));
            p.setBrush(background);
            p.drawEllipse(r);
            p.setPen(text);
            drawText(p, r.adjusted(-4, 0, 4, 0), item.text, Qt::AlignCenter);
        } else if (item.role == "link") {
            p.setPen(QPen(palette::sharedColor(), 1.5));
            p.drawLine(r.topLeft(), r.topRight());
            p.setBrush(palette::sharedColor());
            p.drawEllipse(r.topRight(), 2.2, 2.2);
        } else if (item.role == "ellipsis") {
            QFont italic = small;
            italic.setItalic(true);
            p.setFont(italic);
            const QFontMetricsF metrics(italic);
            // The pill stays inside the fold's rect, which the shared modules leave free.
            const double pillWidth = std::min(metrics.horizontalAdvance(item.text) + 16, r.width());
            const QRectF pill(r.center().x() - pillWidth / 2, r.top() + 2, pillWidth, r.height() - 4);
            p.setPen(QPen(mix(text, background, 0.25), 1));
            p.setBrush(background);
            p.drawRoundedRect(pill, pill.height() / 2, pill.height() / 2);
            p.setPen(faint);
            drawText(p, pill, item.text, Qt::AlignCenter);
            p.setFont(small);
        } else if (item.role == "legend") {
            const QRectF swatch(r.left(), r.center().y() - 6, 12, 12);
            if (item.swatch == "shared" || item.swatch == "individual") {
                p.setPen(QPen(colour, 1.2));
                p.setBrush(mix(colour, background, 0.3));
                p.drawRect(swatch);
            } else if (item.swatch == "pathnorm") {
                p.setBrush(palette::individualColor().darker(130));
                p.drawRect(QRectF(swatch.left() + 3, swatch.top(), 6, 12));
            } else if (item.swatch == "path") {
                p.setBrush(mix(palette::individualColor(), background, 0.38));
                for (int lane = 0; lane < 3; ++lane)
                    p.drawRect(QRectF(swatch.left(), swatch.top() + 1 + lane * 4, 12, 3));
            } else if (item.swatch == "combine") {
                p.setPen(QPen(text, 1));
                p.drawEllipse(swatch);
            }
            p.setPen(text);
            drawText(p, QRectF(r.left() + 16, r.top(), r.width() - 16, r.height()), item.text,
                     Qt::AlignLeft | Qt::AlignVCenter);
        }
    }
}

QString ArchitectureDiagram::toolTipFor(const DiagramItem& item) const
{
    const int layers = m_sketch.layers;
    const QString owner = item.shared ? tr("one module used by all %1 blocks").arg(layers)
                                      : tr("block %1's own").arg(item.block + 1);
    if (item.role == "attention")
        return tr("Attention (%1 heads): %2").arg(m_sketch.heads).arg(owner);
    if (item.role == "heads")
        return tr("%1 attention heads").arg(item.count);
    if (item.role == "ffn")
        return item.count > 1 ? tr("Mixture of %1 experts, each token uses its top %2: %3")
                                    .arg(item.count).arg(m_sketch.topK).arg(owner)
                              : tr("Feed-forward network: %1").arg(owner);
    if (item.role == "expert")
        return tr("Expert %1 of %2").arg(item.text.isEmpty() ? QStringLiteral("?") : item.text).arg(m_sketch.experts);
    if (item.role == "layernorm")
        return tr("LayerNorm: %1").arg(owner);
    if (item.role == "path")
        return tr("One of %1 parallel paths").arg(m_sketch.paths);
    if (item.role == "pathnorm")
        return tr("PathNorm: a LayerNorm at the end of the path");
    if (item.role == "combine")
        return m_sketch.learnablePathWeights ? tr("Weighted sum of the paths with learnable weights α, β")
                                             : tr("Weighted sum of the paths with fixed weights α, β");
    if (item.role == "ellipsis")
        return tr("Blocks %1 to %2 are folded: %3 blocks not drawn one by one")
            .arg(item.block + 1)
            .arg(item.block + item.count)
            .arg(item.count);
    if (item.role == "embedding" || item.role == "head")
        return item.text;
    if (item.role == "label")
        return describeArchitecture(m_sketch);
    return {};
}

bool ArchitectureDiagram::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(event);
        // The last item drawn at a point is the one on top.
        for (auto it = m_items.crbegin(); it != m_items.crend(); ++it) {
            if (it->rect.height() > 0 && it->rect.contains(help->pos())) {
                const QString tip = toolTipFor(*it);
                if (!tip.isEmpty()) {
                    QToolTip::showText(help->globalPos(), tip, this);
                    return true;
                }
            }
        }
        QToolTip::hideText();
        event->ignore();
        return true;
    }
    return QWidget::event(event);
}

}  // namespace widelab
