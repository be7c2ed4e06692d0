// CurvePlot: refresh. Derived arrays, fitted ranges, decimation, the Parameters mode markers.
#include "CurvePlot.h"

#include "CurveMath.h"
#include "CurvePlotParts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace widelab {
namespace {

using namespace curveplot;

constexpr double kMarkerSize = 6;          // a Markers series' circles
constexpr double kYHeadroom = 0.05;        // of the y span, above and below
constexpr double kMarkerHeadroom = 0.15;   // Parameters mode: room for the run labels
constexpr std::array<QCPScatterStyle::ScatterShape, 4> kMarkerShapes = {
    QCPScatterStyle::ssDisc, QCPScatterStyle::ssCircle, QCPScatterStyle::ssSquare, QCPScatterStyle::ssTriangle};

}  // namespace

// ---- refresh: derived arrays, ranges, decimation -------------------------------------------

void CurvePlot::scheduleRefresh()
{
    if (!m_refreshTimer.isActive())
        m_refreshTimer.start();  // not restarted: a steady stream of appends still refreshes every 40 ms
}

void CurvePlot::onRefreshTimer()
{
    if (isVisible())
        refreshNow();  // a hidden chart catches up in showEvent
}

void CurvePlot::onRangeChanged()
{
    if (m_settingRange)
        return;  // this class fitted the view and decimates right after
    m_autoFit = false;  // the user panned or zoomed: stop following the data
    if (m_xMode == XAxisMode::Time)
        updateTimeTickerFormat();
    // The graphs hold a decimation of three view widths at the view's
    // resolution: a pan that stays inside them (or a y move) draws them as
    // they are, and a zoom or a pan past them decimates again just before the
    // replot QCustomPlot queued for the move, so a frame draws once. (On the
    // 40 ms timer, with 20 runs of 100k steps, a frame could hold a decimation
    // and two replots: ~140 ms, bench/curves/pan_bench.cpp.)
    const QCPRange view = xAxis->range();
    const bool covered = m_xMode != XAxisMode::Parameters && view.lower >= m_decimated.lower
                         && view.upper <= m_decimated.upper
                         && std::abs(view.size() - m_decimatedSpan) <= 1e-9 * m_decimatedSpan;
    if (!covered)
        m_redecimate = true;
    replot(rpQueuedReplot);  // one with QCustomPlot's own after a drag or a wheel turn; a range set in code draws too
}

void CurvePlot::onBeforeReplot()
{
    if (!m_redecimate)
        return;
    updateLayout();  // so the axis rect has the width this replot draws at
    updateDisplay();
}

void CurvePlot::refreshNow()
{
    m_refreshTimer.stop();
    for (const auto& s : m_series)
        if (s->dirty)
            rebuildDerived(*s);
    if (m_legendDirty)
        rebuildLegend();
    layoutLegend();
    updateNote();
    if (m_autoFit || m_refitY)
        fitRanges(m_autoFit, true);
    m_refitY = false;
    if (m_xMode == XAxisMode::Time)
        updateTimeTickerFormat();
    updateLayout();  // so the axis rect has the width this replot draws at
    updateDisplay();
    replot();
}

void CurvePlot::rebuildDerived(Series& s) const
{
    s.dirty = false;
    // Parameters mode needs the last value by step.
    s.trace = buildCurveTrace(s.points, m_xMode == XAxisMode::Time ? CurveKey::Seconds : CurveKey::Step,
                              s.style == SeriesStyle::Smoothed ? m_smoothing : 0.0);
}

bool CurvePlot::isShown(const Series& s) const { return s.visible && !s.trace.keys.isEmpty(); }

bool CurvePlot::isSmoothed(const Series& s) const { return m_smoothing > 0 && s.style == SeriesStyle::Smoothed; }

bool CurvePlot::markerValue(const Series& s, double* value) const
{
    if (!isShown(s) || !(s.run->parameters > 0) || !std::isfinite(s.run->parameters))
        return false;
    for (qsizetype i = s.trace.smooth.size() - 1; i >= 0; --i) {
        const double v = s.trace.smooth[i];
        if (std::isfinite(v) && (!m_logScale || v > 0)) {
            *value = v;
            return true;
        }
    }
    return false;
}

void CurvePlot::fitRanges(bool fitX, bool fitY)
{
    double xLo = std::numeric_limits<double>::infinity(), xHi = -xLo;
    double yLo = xLo, yHi = -xLo;
    // QCustomPlot refuses ranges past +-QCPRange::maxRange (and would keep a stale
    // one): a value that far out is left off the fit, drawn out of view.
    const double fitLimit = QCPRange::maxRange / 4;
    auto fits = [fitLimit](double v) { return std::isfinite(v) && std::abs(v) <= fitLimit; };
    auto takeY = [&](double v) {
        if (fits(v) && (!m_logScale || v > 0)) {
            yLo = std::min(yLo, v);
            yHi = std::max(yHi, v);
        }
    };
    bool markers = false;  // a Markers series is shown
    for (const auto& s : m_series) {
        markers = markers || (isShown(*s) && s->style == SeriesStyle::Markers);
        if (m_xMode == XAxisMode::Parameters) {
            double v = 0;
            if (!markerValue(*s, &v))
                continue;
            xLo = std::min(xLo, s->run->parameters);
            xHi = std::max(xHi, s->run->parameters);
            takeY(v);
            continue;
        }
        if (!isShown(*s))
            continue;
        for (const double key : std::as_const(s->trace.keys))  // sorted: the first and last that fit
            if (fits(key)) {
                xLo = std::min(xLo, key);
                break;
            }
        for (qsizetype i = s->trace.keys.size() - 1; i >= 0; --i)
            if (fits(s->trace.keys[i])) {
                xHi = std::max(xHi, s->trace.keys[i]);
                break;
            }
        for (const double v : std::as_const(s->trace.raw))
            takeY(v);
        if (isSmoothed(*s))
            for (const double v : std::as_const(s->trace.smooth))
                takeY(v);
    }

    m_settingRange = true;
    if (fitX && xLo <= xHi) {
        if (m_xMode == XAxisMode::Parameters) {
            const double pad = xHi > xLo ? kMarkerHeadroom * (xHi - xLo) : 0.1 * std::abs(xHi) + 1;
            xAxis->setRange(xLo - pad, xHi + pad);
        } else if (xHi > xLo) {
            // Room for a marker's disc at either end, so the last validation point is not cut in half.
            const double pad = markers ? (xHi - xLo) * kMarkerSize / std::max(50, axisRect()->width()) : 0.0;
            xAxis->setRange(xLo - pad, xHi + pad);
        } else {
            xAxis->setRange(xLo - 1, xHi + 1);
        }
    }
    if (fitY && yLo <= yHi) {
        const double headroom = m_xMode == XAxisMode::Parameters ? kMarkerHeadroom : kYHeadroom;
        // A series that differs only by rounding (a constant learning rate, smoothed) is
        // flat: ranged around its value, not zoomed onto the last bits of a double.
        const double magnitude = std::max(std::abs(yLo), std::abs(yHi));
        const bool flat = yHi - yLo <= 1e-9 * magnitude;
        if (m_logScale) {
            const double factor = !flat ? std::pow(yHi / yLo, headroom) : 2.0;
            yAxis->setRange(yLo / factor, yHi * factor);
        } else {
            const double span = yHi - yLo;
            const double pad = !flat ? headroom * span : (magnitude != 0 ? 0.1 * magnitude : 1.0);
            yAxis->setRange(yLo - pad, yHi + pad);
        }
    }
    m_settingRange = false;
}

void CurvePlot::updateDisplay()
{
    const bool parameters = m_xMode == XAxisMode::Parameters;
    const QCPRange view = xAxis->range();
    // Decimate one view width either side too, so a pan shows data at once,
    // at the same resolution: three widths, three times the columns.
    const double span = view.size();
    // A column a device pixel: on a figure, its dpi's pixels, not its layout's points.
    const int columns = 3 * std::max(1, static_cast<int>(std::lround(axisRect()->width() * m_pixelsPerUnit)));
    m_redecimate = false;
    m_decimated = QCPRange(view.lower - span, view.upper + span);
    m_decimatedSpan = span;
    QVector<Series*> shown;
    QVector<curvemath::Decimation> jobs;

    for (const auto& s : m_series) {
        const int index = seriesIndex(s->name);
        s->line->setVisible(s->visible);
        if (parameters) {
            s->faint->setVisible(false);
            s->faint->data()->clear();
            s->line->setLineStyle(QCPGraph::lsNone);
            // The first series (train) filled, the others hollow, like solid and dashed lines.
            const auto shape = kMarkerShapes[static_cast<std::size_t>(index) % kMarkerShapes.size()];
            s->line->setScatterStyle(
                QCPScatterStyle(shape, QPen(s->run->color, 2), index == 0 ? s->run->color : Qt::white, 9));
            double v = 0;
            if (markerValue(*s, &v))
                s->line->setData(QVector<double>{s->run->parameters}, QVector<double>{v}, true);
            else
                s->line->data()->clear();
            continue;
        }

        s->line->setLineStyle(QCPGraph::lsLine);
        // Measurements get a marker at each value; a lone point has no line to draw: give it a dot.
        if (s->style == SeriesStyle::Markers)
            s->line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(s->run->color, 1.5),
                                                     m_colors.background, kMarkerSize));
        else
            s->line->setScatterStyle(s->trace.keys.size() == 1 ? QCPScatterStyle(QCPScatterStyle::ssDisc, 5)
                                                               : QCPScatterStyle(QCPScatterStyle::ssNone));
        if (!isShown(*s)) {
            s->line->data()->clear();
            s->faint->data()->clear();
            s->faint->setVisible(false);
            continue;
        }
        // The line, and under a smoothed one its raw values faintly.
        shown.push_back(s.get());
        jobs.push_back({&s->trace.keys, isSmoothed(*s) ? &s->trace.smooth : &s->trace.raw, {}, {}});
        if (isSmoothed(*s))
            jobs.push_back({&s->trace.keys, &s->trace.raw, {}, {}});
    }
    curvemath::decimateEach(jobs, view.lower - span, view.upper + span, columns, m_logScale);
    qsizetype job = 0;
    for (Series* s : shown) {
        curvemath::Decimation& line = jobs[job++];
        s->line->setData(line.outKeys, line.outValues, true);
        // Qt strokes lines wider than one pixel through a slow path: a dense
        // line (min/max zigzags) costs tens of milliseconds per replot at 1.6 px
        // and two at 1 px. Sparse lines (about 3 px or more per segment) get the width.
        QPen pen = s->line->pen();
        pen.setWidthF(line.outKeys.size() <= axisRect()->width() && s->style != SeriesStyle::Markers ? kLineWidth : 1.0);
        s->line->setPen(pen);
        const bool faint = isSmoothed(*s);
        s->faint->setVisible(faint);
        if (faint) {
            curvemath::Decimation& raw = jobs[job++];
            s->faint->setData(raw.outKeys, raw.outValues, true);
        } else {
            s->faint->data()->clear();
        }
    }
    updateParameterLabels();
}

void CurvePlot::updateParameterLabels()
{
    const bool parameters = m_xMode == XAxisMode::Parameters;
    for (const auto& run : m_runs) {
        const Series* marked = nullptr;
        if (parameters) {
            for (const QString& name : std::as_const(m_declaredSeries)) {
                const Series* s = findSeries(run->id, name);
                if (s && s->visible && s->line->data()->size() == 1) {
                    marked = s;
                    break;
                }
            }
        }
        if (!marked) {
            if (run->markerLabel)
                run->markerLabel->setVisible(false);
            continue;
        }
        if (!run->markerLabel) {
            run->markerLabel = new QCPItemText(this);
            run->markerLabel->setFont(chartFont(8, true));
            run->markerLabel->setClipToAxisRect(true);
        }
        QCPItemText* label = run->markerLabel;
        const double x = marked->line->data()->begin()->key;
        const double y = marked->line->data()->begin()->value;
        label->setVisible(true);
        label->setText(run->label);
        label->setColor(run->color.darker(130));
        label->position->setCoords(x, y);
        // Beside the marker, on the side with more room.
        const bool rightHalf = xAxis->coordToPixel(x) > axisRect()->center().x();
        label->setPositionAlignment((rightHalf ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignBottom);
        label->setPadding(rightHalf ? QMargins(0, 0, 8, 4) : QMargins(8, 0, 0, 4));
    }
}

}  // namespace widelab
