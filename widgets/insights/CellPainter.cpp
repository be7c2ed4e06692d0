#include "CellPainter.h"

#include <QImage>
#include <QPaintEngine>
#include <QPainter>
#include <QRectF>

#include <algorithm>
#include <cmath>

namespace widelab {

namespace {

constexpr int kMaxEnlargedSide = 4096;  // pixels of the enlarged image, either side

// SVG, PDF and recorded pictures keep what is drawn as drawing operations.
bool keepsOperations(const QPainter& painter)
{
    const QPaintEngine* engine = painter.paintEngine();
    if (engine == nullptr)
        return false;
    const QPaintEngine::Type type = engine->type();
    return type == QPaintEngine::SVG || type == QPaintEngine::Pdf || type == QPaintEngine::Picture;
}

void paintRectangles(QPainter& painter, const QRectF& target, const QImage& cells)
{
    const int rows = cells.height(), cols = cells.width();
    const double w = target.width() / cols, h = target.height() / rows;
    // Each rectangle reaches a little into the next cell, which is drawn after it
    // and covers the overlap: no hairline seams where a viewer antialiases edges.
    const double overlapX = std::min(0.5, w / 4), overlapY = std::min(0.5, h / 4);
    for (int r = 0; r < rows; ++r) {
        const auto* line = reinterpret_cast<const QRgb*>(cells.constScanLine(r));
        const double y = target.top() + r * h;
        const double height = h + (r + 1 < rows ? overlapY : 0.0);
        int c = 0;
        while (c < cols) {
            int end = c + 1;
            while (end < cols && line[end] == line[c])
                ++end;
            const double width = (end - c) * w + (end < cols ? overlapX : 0.0);
            painter.fillRect(QRectF(target.left() + c * w, y, width, height), QColor::fromRgb(line[c]));
            c = end;
        }
    }
}

}  // namespace

void paintCells(QPainter& painter, const QRectF& target, const QImage& cells)
{
    if (cells.isNull() || target.isEmpty())
        return;
    const QImage rgb = cells.format() == QImage::Format_RGB32 ? cells : cells.convertToFormat(QImage::Format_RGB32);
    painter.save();
    painter.setRenderHint(QPainter::SmoothPixmapTransform, false);
    if (!keepsOperations(painter)) {
        painter.drawImage(target, rgb);
    } else if (static_cast<qsizetype>(rgb.width()) * rgb.height() <= kMaxVectorCells) {
        painter.setRenderHint(QPainter::Antialiasing, false);
        paintRectangles(painter, target, rgb);
    } else {
        // Enlarged by a whole factor, so every cell stays a block of one colour
        // when the viewer scales it to the page.
        const double wanted = std::max(target.width() / rgb.width(), target.height() / rgb.height());
        const int largest = std::max(1, kMaxEnlargedSide / std::max(rgb.width(), rgb.height()));
        const int factor = std::clamp(static_cast<int>(std::ceil(wanted)), 1, largest);
        painter.setRenderHint(QPainter::LosslessImageRendering, true);
        painter.drawImage(target, rgb.scaled(rgb.width() * factor, rgb.height() * factor, Qt::IgnoreAspectRatio,
                                             Qt::FastTransformation));
    }
    painter.restore();
}

}  // namespace widelab
