// defines: curvemath::smoothEma, curvemath::decimateMinMax, curvemath::Decimation,
// curvemath::decimateEach, curvemath::formatCount,
// curvemath::formatAxisValue, curvemath::formatDuration, curvemath::legendColumns: the arithmetic behind
// CurvePlot, free of widgets
#pragma once

#include <QString>
#include <QVector>

namespace widelab::curvemath {

// The largest smoothing weight the widgets accept; 1 would freeze the average.
constexpr double kMaxSmoothing = 0.999;

// Clamps a smoothing weight to [0, kMaxSmoothing]; NaN becomes 0.
double clampSmoothing(double weight);

// TensorBoard's debiased exponential moving average, over the values in order:
//   a_0 = 0,  a_t = w * a_{t-1} + (1 - w) * x_t,  s_t = a_t / (1 - w^t)
// where t counts the finite values seen so far (1 for the first). Dividing by
// 1 - w^t removes the pull towards the zero start, so s_1 = x_1 for any w.
// A non-finite x_t is passed through unchanged and leaves a and t untouched,
// so one NaN does not poison the rest of the curve. w = 0 returns the input.
QVector<double> smoothEma(const QVector<double>& values, double weight);

// Min/max decimation of a series whose keys ascend (ties allowed) for a view of
// [lower, upper] that is `columns` pixels wide. The range is cut into `columns`
// equal buckets; each bucket hands on its smallest and largest finite value
// (in the order they occur; one point when they coincide), so spikes survive
// and a sparse series passes unchanged. A bucket of only gaps hands on one NaN
// so the line breaks there. The nearest point left of lower and right of upper
// are kept, so lines leave the view at the right angle. Result: at most
// 2 * columns + 2 points. Non-finite values are handed on as NaN (QCPGraph
// draws NaN as a gap); dropNonPositive also turns values <= 0 into gaps (for a
// logarithmic axis). columns < 1 counts as 1.
void decimateMinMax(const QVector<double>& keys, const QVector<double>& values, double lower, double upper,
                    int columns, bool dropNonPositive, QVector<double>* outKeys, QVector<double>* outValues);

// One series to decimate: what it reads (left unchanged, and alive until
// decimateEach returns) and what it gets.
struct Decimation {
    const QVector<double>* keys = nullptr;
    const QVector<double>* values = nullptr;
    QVector<double> outKeys, outValues;
};
// decimateMinMax for each, with the same view: many points (a chart of 20 runs
// of 100k steps zooming) are shared between this thread and a second one, so a
// zoom's frame waits for half of them; few are decimated here.
void decimateEach(QVector<Decimation>& series, double lower, double upper, int columns, bool dropNonPositive);

// Steps and parameter counts with a k, M, B or T suffix. resolution <= 0: three
// significant digits (950 -> "950", 1530 -> "1.53k", 12'345'678 -> "12.3M",
// 2e9 -> "2B"). resolution > 0: as many decimals as tell apart multiples of
// resolution (axis ticks 12'550 and 12'560 with resolution 10: "12.55k", "12.56k").
QString formatCount(double value, double resolution = 0);

// A y-axis tick label, with the ticks' step and the largest absolute value on
// the axis choosing the notation: k/M suffixes when that value is 10'000 or more
// (12'000 -> "12k"), compact scientific when it is below 0.01 (0.00025 with step
// 0.00005 -> "2.5e-4"), else decimals enough for the step (1.25 with step 0.25
// -> "1.25"). Zero (within a millionth of a step) is "0".
QString formatAxisValue(double value, double step, double magnitude);

// 42.5 -> "42.5 s", 125 -> "2:05", 3725 -> "1:02:05", 90000 -> "1 d 1:00:00".
QString formatDuration(double seconds);

// How many columns a legend of entries `widths` wide (in order) gets when it
// fills rows left to right and may be at most `available` wide: the most
// columns (up to one per entry) whose widest entries, plus `spacing` between
// columns, fit. At least 1 (a too narrow chart gets one column, clipped).
int legendColumns(const QVector<int>& widths, int available, int spacing);

// A run's name as a legend shows it: at most `maxChars` characters, a long one
// cut in the middle ("multipath-tr…-member-2"), where runs of one study differ
// at the end and one of a day at the start. Hover and the Values table name it whole.
inline constexpr int kLegendNameChars = 28;
QString elideMiddle(const QString& text, int maxChars = kLegendNameChars);

}  // namespace widelab::curvemath
