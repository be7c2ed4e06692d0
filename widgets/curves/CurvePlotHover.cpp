// CurvePlot: the hover read-out (the nearest point, its values, the label beside it).
#include "CurvePlot.h"

#include "CurveMath.h"
#include "CurvePlotParts.h"

#include <QFontMetrics>
#include <QLocale>

#include <algorithm>
#include <cmath>
#include <limits>

namespace widelab {
namespace {

using namespace curveplot;

constexpr double kHoverRadiusPx = 12;            // points this close in x are hover candidates
constexpr qsizetype kHoverMaxCandidates = 4096;  // per series; denser windows are sampled

QString formatValue(double value) { return QString::number(value, 'g', 5); }

}  // namespace

// ---- hover read-out ----------------------------------------------------------------------

CurvePlot::Readout CurvePlot::readoutAt(const QPointF& pixel) const
{
    Readout best;
    if (!axisRect()->rect().contains(pixel.toPoint()))
        return best;
    double bestDistance = std::numeric_limits<double>::infinity();
    const Series* bestSeries = nullptr;
    qsizetype bestIndex = -1;
    auto consider = [&](const Series& s, qsizetype i, double key, double value) {
        if (!std::isfinite(value) || (m_logScale && value <= 0))
            return;
        const double dx = xAxis->coordToPixel(key) - pixel.x();
        const double dy = yAxis->coordToPixel(value) - pixel.y();
        const double distance = dx * dx + dy * dy;
        if (distance < bestDistance) {
            bestDistance = distance;
            bestSeries = &s;
            bestIndex = i;
        }
    };

    for (const auto& s : m_series) {
        if (!isShown(*s))
            continue;
        if (m_xMode == XAxisMode::Parameters) {
            if (s->line->data()->size() == 1)
                consider(*s, s->trace.keys.size() - 1, s->line->data()->begin()->key, s->line->data()->begin()->value);
            continue;
        }
        const QVector<double>& values = isSmoothed(*s) ? s->trace.smooth : s->trace.raw;
        double lo = xAxis->pixelToCoord(pixel.x() - kHoverRadiusPx);
        double hi = xAxis->pixelToCoord(pixel.x() + kHoverRadiusPx);
        if (lo > hi)
            std::swap(lo, hi);
        const qsizetype first = std::lower_bound(s->trace.keys.cbegin(), s->trace.keys.cend(), lo) - s->trace.keys.cbegin();
        const qsizetype last = std::upper_bound(s->trace.keys.cbegin(), s->trace.keys.cend(), hi) - s->trace.keys.cbegin();
        const qsizetype stride = std::max<qsizetype>(1, (last - first) / kHoverMaxCandidates);
        for (qsizetype i = first; i < last; i += stride)
            consider(*s, i, s->trace.keys[i], values[i]);
        // The nearest points outside the window, for sparse series.
        if (first > 0)
            consider(*s, first - 1, s->trace.keys[first - 1], values[first - 1]);
        if (last < s->trace.keys.size())
            consider(*s, last, s->trace.keys[last], values[last]);
    }
    if (!bestSeries)
        return best;

    // In Parameters mode the marker is the last point by step; find the one whose EMA it shows.
    if (m_xMode == XAxisMode::Parameters) {
        double v = 0;
        markerValue(*bestSeries, &v);
        for (qsizetype i = bestSeries->trace.smooth.size() - 1; i >= 0; --i) {
            if (bestSeries->trace.smooth[i] == v) {
                bestIndex = i;
                break;
            }
        }
    }
    const CurvePoint& point = bestSeries->points[bestSeries->trace.source[bestIndex]];
    best.valid = true;
    best.runId = bestSeries->run->id;
    best.series = bestSeries->name;
    best.name = legendName(*bestSeries);
    best.x = m_xMode == XAxisMode::Parameters ? bestSeries->run->parameters : bestSeries->trace.keys[bestIndex];
    best.step = point.step;
    best.seconds = point.seconds;
    best.raw = bestSeries->trace.raw[bestIndex];
    best.smoothed = bestSeries->trace.smooth[bestIndex];
    best.isSmoothed = isSmoothed(*bestSeries);
    return best;
}

CurvePlot::Readout CurvePlot::hoverReadout() const { return m_hover; }

QString CurvePlot::hoverText() const { return m_hoverLabel->visible() ? m_hoverLabel->text() : QString(); }

QRectF CurvePlot::hoverRect() const
{
    return QRectF(m_hoverLabel->topLeft->pixelPosition(), m_hoverLabel->bottomRight->pixelPosition());
}

QString CurvePlot::readoutText(const Readout& r) const
{
    QStringList lines{r.name};
    if (m_xMode == XAxisMode::Parameters) {
        lines << tr("parameters %1 (%2)")
                     .arg(curvemath::formatCount(r.x), QLocale().toString(static_cast<qlonglong>(std::llround(r.x))));
        lines << (r.isSmoothed ? tr("last smoothed value %1 (step %2)") : tr("last value %1 (step %2)"))
                     .arg(formatValue(r.smoothed))
                     .arg(static_cast<qlonglong>(std::llround(r.step)));
        return lines.join(QLatin1Char('\n'));
    }
    lines << tr("step %1 · %2")
                 .arg(static_cast<qlonglong>(std::llround(r.step)))
                 .arg(curvemath::formatDuration(r.seconds));
    if (r.isSmoothed)
        lines << tr("value %1 · smoothed %2").arg(formatValue(r.raw), formatValue(r.smoothed));
    else
        lines << tr("value %1").arg(formatValue(r.raw));
    return lines.join(QLatin1Char('\n'));
}

void CurvePlot::setHover(const Readout& readout)
{
    const bool wasShown = m_hoverLabel->visible();
    m_hover = readout;
    m_tracer->setVisible(readout.valid);
    m_hoverLabel->setVisible(readout.valid);
    if (!readout.valid) {
        if (wasShown)
            m_hoverLayer->replot();
        return;
    }
    const Series* s = findSeries(readout.runId, readout.series);
    const QColor color = s ? s->run->color : m_colors.text;
    const double y = readout.smoothed;  // the raw value where the series is not smoothed
    m_tracer->position->setCoords(readout.x, y);
    m_tracer->setPen(QPen(color, 1.5));
    m_tracer->setBrush(withAlpha(m_colors.background, 160));

    const QString text = readoutText(readout);
    m_hoverLabel->setText(text);
    // Beside the point, flipped to stay inside the axis rect.
    const QPointF at(xAxis->coordToPixel(readout.x), yAxis->coordToPixel(y));
    const QMargins padding = m_hoverLabel->padding();
    const QSize textSize =
        QFontMetrics(m_hoverLabel->font()).boundingRect(QRect(0, 0, 2000, 2000), Qt::AlignLeft, text).size();
    const QSize size = textSize + QSize(padding.left() + padding.right(), padding.top() + padding.bottom());
    const QRect area = axisRect()->rect();
    constexpr double kOffset = 10;
    const bool left = at.x() + kOffset + size.width() > area.right();
    const bool below = at.y() - kOffset - size.height() < area.top();
    // Then kept inside the chart: on a narrow one the flipped label would start
    // left of it and lose its beginning.
    const double labelX = std::clamp(left ? at.x() - kOffset - size.width() : at.x() + kOffset, 0.0,
                                     std::max(0.0, double(width() - size.width())));
    const double labelY = std::clamp(below ? at.y() + kOffset : at.y() - kOffset - size.height(), 0.0,
                                     std::max(0.0, double(height() - size.height())));
    m_hoverLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_hoverLabel->position->setCoords(labelX, labelY);
    m_hoverLayer->replot();
}

}  // namespace widelab
