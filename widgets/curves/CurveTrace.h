// defines: widelab::CurveTrace, widelab::buildCurveTrace: one series' stored
// points as a chart draws them in one x mode (sorted keys, raw values, the EMA
// and where each came from), free of widgets
#pragma once

#include "CurvePoint.h"

#include <QVector>

namespace widelab {

struct CurveTrace {
    // Parallel arrays sorted by key. Points with a non-finite key are left out.
    QVector<double> keys;
    QVector<double> raw;
    QVector<double> smooth;       // the debiased EMA, computed in step order; equals raw at weight 0
    QVector<qsizetype> source;    // index of the stored point each entry came from
};

// What the keys are: the step, or the seconds since the run started.
enum class CurveKey { Step, Seconds };

// Sorts `points` by step (stable: any order in, ties keep theirs), smooths the
// values in that order with `smoothing` (curvemath::smoothEma), then keys them
// by `key`. By seconds the trace is re-sorted by time, since a resumed run may
// restart its clock; the EMA still follows the steps.
CurveTrace buildCurveTrace(const QVector<CurvePoint>& points, CurveKey key, double smoothing);

}  // namespace widelab
