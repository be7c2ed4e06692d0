#include "CurveTrace.h"

#include "CurveMath.h"

#include <algorithm>
#include <cmath>

namespace widelab {

CurveTrace buildCurveTrace(const QVector<CurvePoint>& points, CurveKey key, double smoothing)
{
    // Smoothing runs in step order, whatever order the points came in.
    QVector<qsizetype> order;
    order.reserve(points.size());
    bool stepSorted = true;
    for (qsizetype i = 0; i < points.size(); ++i) {
        if (!std::isfinite(points[i].step))
            continue;
        if (!order.isEmpty() && points[i].step < points[order.back()].step)
            stepSorted = false;
        order.append(i);
    }
    if (!stepSorted)
        std::stable_sort(order.begin(), order.end(),
                         [&points](qsizetype a, qsizetype b) { return points[a].step < points[b].step; });

    QVector<double> raw(order.size());
    for (qsizetype i = 0; i < order.size(); ++i)
        raw[i] = points[order[i]].value;
    QVector<double> smooth = curvemath::smoothEma(raw, smoothing);

    CurveTrace trace;
    if (key == CurveKey::Step) {
        trace.keys.resize(order.size());
        for (qsizetype i = 0; i < order.size(); ++i)
            trace.keys[i] = points[order[i]].step;
        trace.raw = std::move(raw);
        trace.smooth = std::move(smooth);
        trace.source = std::move(order);
        return trace;
    }

    // Seconds: keep points with a finite time, sorted by it.
    QVector<qsizetype> byTime;
    byTime.reserve(order.size());
    bool timeSorted = true;
    for (qsizetype i = 0; i < order.size(); ++i) {
        const double t = points[order[i]].seconds;
        if (!std::isfinite(t))
            continue;
        if (!byTime.isEmpty() && t < points[order[byTime.back()]].seconds)
            timeSorted = false;
        byTime.append(i);
    }
    if (!timeSorted)
        std::stable_sort(byTime.begin(), byTime.end(), [&](qsizetype a, qsizetype b) {
            return points[order[a]].seconds < points[order[b]].seconds;
        });
    trace.keys.resize(byTime.size());
    trace.raw.resize(byTime.size());
    trace.smooth.resize(byTime.size());
    trace.source.resize(byTime.size());
    for (qsizetype i = 0; i < byTime.size(); ++i) {
        const qsizetype k = byTime[i];
        trace.source[i] = order[k];
        trace.keys[i] = points[order[k]].seconds;
        trace.raw[i] = raw[k];
        trace.smooth[i] = smooth[k];
    }
    return trace;
}

}  // namespace widelab
