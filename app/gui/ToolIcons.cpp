#include "ToolIcons.h"

#include <QApplication>
#include <QIconEngine>
#include <QPainter>
#include <QPainterPath>
#include <QPalette>
#include <QPixmap>

namespace widelab {
namespace {

// Paints its shape on demand: the colour is the application palette's at the
// time of painting (so a theme switch needs no new icons), the geometry is
// vector (so any device pixel ratio is sharp).
class ShapeIconEngine : public QIconEngine {
public:
    explicit ShapeIconEngine(ToolIcon kind) : m_kind(kind) {}

    void paint(QPainter* painter, const QRect& rect, QIcon::Mode mode, QIcon::State) override
    {
        const QPalette palette = QApplication::palette();
        const QColor color = palette.color(mode == QIcon::Disabled ? QPalette::Disabled : QPalette::Active,
                                           QPalette::ButtonText);
        const QRectF r = QRectF(rect).adjusted(rect.width() * 0.18, rect.height() * 0.18, -rect.width() * 0.18,
                                               -rect.height() * 0.18);
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing);
        painter->setPen(Qt::NoPen);
        painter->setBrush(color);
        switch (m_kind) {
        case ToolIcon::Play: {
            QPainterPath triangle;
            triangle.moveTo(r.left() + r.width() * 0.12, r.top());
            triangle.lineTo(r.right(), r.center().y());
            triangle.lineTo(r.left() + r.width() * 0.12, r.bottom());
            triangle.closeSubpath();
            painter->drawPath(triangle);
            break;
        }
        case ToolIcon::Pause: {
            const double bar = r.width() * 0.32;
            painter->drawRect(QRectF(r.left() + r.width() * 0.08, r.top(), bar, r.height()));
            painter->drawRect(QRectF(r.right() - r.width() * 0.08 - bar, r.top(), bar, r.height()));
            break;
        }
        case ToolIcon::Stop:
            painter->drawRect(r.adjusted(r.width() * 0.06, r.height() * 0.06, -r.width() * 0.06, -r.height() * 0.06));
            break;
        case ToolIcon::Save: {
            // A disk: the body, a window cut for the label, a shutter at the top.
            QPainterPath disk;
            disk.addRoundedRect(r, r.width() * 0.08, r.width() * 0.08);
            QPainterPath holes;
            holes.addRect(QRectF(r.left() + r.width() * 0.2, r.top() + r.height() * 0.55, r.width() * 0.6,
                                 r.height() * 0.33));
            holes.addRect(QRectF(r.left() + r.width() * 0.28, r.top() + r.height() * 0.1, r.width() * 0.4,
                                 r.height() * 0.25));
            painter->drawPath(disk.subtracted(holes));
            break;
        }
        }
        painter->restore();
    }

    QPixmap pixmap(const QSize& size, QIcon::Mode mode, QIcon::State state) override
    {
        QPixmap image(size);
        image.fill(Qt::transparent);
        QPainter painter(&image);
        paint(&painter, QRect(QPoint(0, 0), size), mode, state);
        return image;
    }

    QIconEngine* clone() const override { return new ShapeIconEngine(m_kind); }

private:
    ToolIcon m_kind;
};

}  // namespace

QIcon toolIcon(ToolIcon kind) { return QIcon(new ShapeIconEngine(kind)); }

}  // namespace widelab
