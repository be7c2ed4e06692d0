#include "CurveMath.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

namespace widelab::curvemath {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Decimals (0..6) needed to write x exactly enough, e.g. 2.5 -> 1, 0.01 -> 2.
int decimalsFor(double x)
{
    x = std::abs(x);
    for (int d = 0; d < 6; ++d) {
        const double scaled = x * std::pow(10.0, d);
        if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled))
            return d;
    }
    return 6;
}

QString trimZeros(QString s)
{
    if (s.contains(QLatin1Char('.'))) {
        while (s.endsWith(QLatin1Char('0')))
            s.chop(1);
        if (s.endsWith(QLatin1Char('.')))
            s.chop(1);
    }
    return s;
}

}  // namespace

double clampSmoothing(double weight)
{
    if (!(weight > 0.0))  // also NaN
        return 0.0;
    return std::min(weight, kMaxSmoothing);
}

QVector<double> smoothEma(const QVector<double>& values, double weight)
{
    const double w = clampSmoothing(weight);
    if (w == 0.0)
        return values;
    QVector<double> out(values.size());
    double accumulator = 0.0;  // a_t
    double wPowT = 1.0;        // w^t, so 1 - w^t is the debias divisor
    for (qsizetype i = 0; i < values.size(); ++i) {
        const double x = values[i];
        if (!std::isfinite(x)) {
            out[i] = x;
            continue;
        }
        accumulator = w * accumulator + (1.0 - w) * x;
        wPowT *= w;
        out[i] = accumulator / (1.0 - wPowT);
    }
    return out;
}

void decimateMinMax(const QVector<double>& keys, const QVector<double>& values, double lower, double upper,
                    int columns, bool dropNonPositive, QVector<double>* outKeys, QVector<double>* outValues)
{
    outKeys->clear();
    outValues->clear();
    const qsizetype n = std::min(keys.size(), values.size());
    if (n == 0 || !(upper >= lower))
        return;
    columns = std::max(columns, 1);

    auto shown = [dropNonPositive](double v) {
        if (!std::isfinite(v) || (dropNonPositive && v <= 0.0))
            return kNaN;
        return v;
    };
    auto push = [&](qsizetype i) {
        outKeys->push_back(keys[i]);
        outValues->push_back(shown(values[i]));
    };

    // [first, last) are the points inside [lower, upper].
    const auto keysBegin = keys.cbegin();
    const qsizetype first = std::lower_bound(keysBegin, keysBegin + n, lower) - keysBegin;
    const qsizetype last = std::upper_bound(keysBegin, keysBegin + n, upper) - keysBegin;
    outKeys->reserve(std::min<qsizetype>(last - first, 2 * static_cast<qsizetype>(columns)) + 2);
    outValues->reserve(outKeys->capacity());
    if (first > 0)
        push(first - 1);

    const double span = upper - lower;
    auto bucketOf = [&](double key) {
        if (!(span > 0.0))
            return 0;
        const double b = std::floor((key - lower) / span * columns);
        return static_cast<int>(std::clamp(b, 0.0, static_cast<double>(columns - 1)));
    };
    // The end of the bucket that starts at `from`: bucketOf never decreases
    // with the key, so the end is found by galloping then bisecting, a few
    // bucketOf calls a bucket instead of one a point (a zoomed-out 100k-point
    // series has dozens of points a bucket, and this runs for every series on
    // every pan and zoom).
    auto bucketEnd = [&](qsizetype from, int bucket) {
        qsizetype lo = from + 1, step = 1;
        while (lo < last && bucketOf(keys[lo]) == bucket) {
            from = lo;
            lo = std::min(last, lo + step);
            step *= 2;
        }
        // keys[from] is in the bucket, keys[lo] (or last) is past it.
        return std::partition_point(keysBegin + from + 1, keysBegin + lo,
                                    [&](double key) { return bucketOf(key) == bucket; })
               - keysBegin;
    };
    qsizetype i = first;
    while (i < last) {
        const int bucket = bucketOf(keys[i]);
        qsizetype minIndex = -1, maxIndex = -1;
        const qsizetype bucketStart = i;
        const qsizetype end = bucketEnd(i, bucket);
        double minValue = 0, maxValue = 0;
        for (; i < end; ++i) {
            const double v = values[i];
            // shown(v) is NaN exactly for these.
            if (!std::isfinite(v) || (dropNonPositive && v <= 0.0))
                continue;
            if (minIndex < 0 || v < minValue) {
                minIndex = i;
                minValue = v;
            }
            if (maxIndex < 0 || v > maxValue) {
                maxIndex = i;
                maxValue = v;
            }
        }
        if (minIndex < 0) {  // only gaps in this bucket
            outKeys->push_back(keys[bucketStart]);
            outValues->push_back(kNaN);
        } else if (minIndex == maxIndex) {
            push(minIndex);
        } else {
            push(std::min(minIndex, maxIndex));
            push(std::max(minIndex, maxIndex));
        }
    }

    if (last < n)
        push(last);
}

void decimateEach(QVector<Decimation>& series, double lower, double upper, int columns, bool dropNonPositive)
{
    Decimation* const each = series.data();  // detached here, once, not from two threads
    auto decimate = [&](qsizetype from, qsizetype to) {
        for (qsizetype i = from; i < to; ++i) {
            Decimation& d = each[i];
            decimateMinMax(*d.keys, *d.values, lower, upper, columns, dropNonPositive, &d.outKeys, &d.outValues);
        }
    };
    // Points read, to decide whether a second thread is worth starting (~50 us).
    constexpr qsizetype kShared = 200'000;
    qsizetype points = 0;
    for (const Decimation& d : std::as_const(series))
        points += d.keys->size();
    if (points < kShared || series.size() < 2 || std::thread::hardware_concurrency() < 2) {
        decimate(0, series.size());
        return;
    }
    // The split that gives each thread about half the points.
    qsizetype half = 0, counted = 0;
    while (half < series.size() && 2 * counted < points)
        counted += each[half++].keys->size();
    std::thread second(decimate, half, series.size());
    decimate(0, half);
    second.join();
}

QString formatCount(double value, double resolution)
{
    if (!std::isfinite(value))
        return QString::number(value);
    const double magnitude = std::abs(value);
    if (resolution <= 0.0 && magnitude > 0.0) {  // round to three significant digits first
        const double factor = std::pow(10.0, std::floor(std::log10(magnitude)) - 2.0);
        value = std::round(value / factor) * factor;
    }
    static constexpr struct {
        double unit;
        char suffix;
    } kUnits[] = {{1e12, 'T'}, {1e9, 'B'}, {1e6, 'M'}, {1e3, 'k'}};
    double unit = 1.0;
    QString suffix;
    for (const auto& u : kUnits) {
        if (std::abs(value) >= u.unit) {
            unit = u.unit;
            suffix = QLatin1Char(u.suffix);
            break;
        }
    }
    const double scaled = value / unit;
    int decimals = 0;
    if (resolution > 0.0) {
        decimals = decimalsFor(resolution / unit);
    } else if (scaled != 0.0) {
        decimals = std::max(0, 2 - static_cast<int>(std::floor(std::log10(std::abs(scaled)))));
    }
    QString text = trimZeros(QString::number(scaled, 'f', decimals));
    if (text == QLatin1String("-0"))
        text = QStringLiteral("0");
    return text + suffix;
}

QString formatAxisValue(double value, double step, double magnitude)
{
    if (!std::isfinite(value))
        return QString::number(value);
    if (step > 0 ? std::abs(value) < step * 1e-6 : value == 0.0)
        return QStringLiteral("0");
    if (magnitude >= 1e4)
        return formatCount(value, step);
    if (magnitude < 1e-2) {
        int exponent = static_cast<int>(std::floor(std::log10(std::abs(value))));
        int decimals = step > 0 ? decimalsFor(step / std::pow(10.0, exponent)) : 2;
        const double rounding = std::pow(10.0, decimals);
        if (std::abs(std::round(value / std::pow(10.0, exponent) * rounding) / rounding) >= 10.0) {
            ++exponent;  // log10 came out a hair low: 1e-4 is 1e-4, not 10e-5
            decimals = step > 0 ? decimalsFor(step / std::pow(10.0, exponent)) : 2;
        }
        const QString mantissa = trimZeros(QString::number(value / std::pow(10.0, exponent), 'f', decimals));
        return mantissa + QStringLiteral("e") + QString::number(exponent);
    }
    return trimZeros(QString::number(value, 'f', step > 0 ? decimalsFor(step) : 3));
}

QString formatDuration(double seconds)
{
    if (!std::isfinite(seconds))
        return QString::number(seconds);
    const QString sign = seconds < 0 ? QStringLiteral("-") : QString();
    seconds = std::abs(seconds);
    if (seconds < 60.0)
        return sign + trimZeros(QString::number(seconds, 'f', seconds < 10.0 ? 2 : 1)) + QStringLiteral(" s");
    auto total = static_cast<long long>(std::llround(seconds));
    const long long days = total / 86400;
    total %= 86400;
    const long long hours = total / 3600;
    const long long minutes = (total % 3600) / 60;
    const long long secs = total % 60;
    auto two = [](long long v) { return QStringLiteral("%1").arg(v, 2, 10, QLatin1Char('0')); };
    QString text;
    if (days > 0)
        text = QStringLiteral("%1 d %2:%3:%4").arg(days).arg(hours).arg(two(minutes), two(secs));
    else if (hours > 0)
        text = QStringLiteral("%1:%2:%3").arg(hours).arg(two(minutes), two(secs));
    else
        text = QStringLiteral("%1:%2").arg(minutes).arg(two(secs));
    return sign + text;
}

int legendColumns(const QVector<int>& widths, int available, int spacing)
{
    const auto count = static_cast<int>(widths.size());
    for (int columns = count; columns > 1; --columns) {
        int total = spacing * (columns - 1);
        for (int c = 0; c < columns; ++c) {
            int widest = 0;
            for (int i = c; i < count; i += columns)
                widest = std::max(widest, widths[i]);
            total += widest;
        }
        if (total <= available)
            return columns;
    }
    return 1;
}

QString elideMiddle(const QString& text, int maxChars)
{
    if (text.size() <= maxChars || maxChars < 3)
        return text;
    const qsizetype tail = (maxChars - 1) / 2;     // the end tells runs of one study apart: it keeps the more
    const qsizetype head = maxChars - 1 - tail;
    return text.left(head) + QChar(0x2026) + text.right(tail);
}

}  // namespace widelab::curvemath
