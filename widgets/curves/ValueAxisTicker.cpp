#include "ValueAxisTicker.h"

#include "CurveMath.h"

#include <algorithm>
#include <cmath>

namespace widelab {

void ValueAxisTicker::setLogarithmic(bool on) { m_logarithmic = on; }

bool ValueAxisTicker::logarithmic() const { return m_logarithmic; }

double ValueAxisTicker::getTickStep(const QCPRange& range)
{
    m_tickStep = QCPAxisTicker::getTickStep(range);
    m_magnitude = std::max(std::abs(range.lower), std::abs(range.upper));
    return m_tickStep;
}

int ValueAxisTicker::getSubTickCount(double tickStep)
{
    return m_logTicks ? 0 : QCPAxisTicker::getSubTickCount(tickStep);
}

QVector<double> ValueAxisTicker::createTickVector(double tickStep, const QCPRange& range)
{
    m_logTicks = false;
    const double decades = range.lower > 0 ? std::log10(range.upper / range.lower) : 0;
    if (!m_logarithmic || !(decades >= 0.7) || !std::isfinite(decades))
        return QCPAxisTicker::createTickVector(tickStep, range);

    QVector<double> mantissas{1};
    if (decades < 1.5)
        mantissas = {1, 2, 3, 5};
    else if (decades < 2.5)
        mantissas = {1, 2, 5};
    const int every = decades > 8 ? static_cast<int>(std::ceil(decades / 6)) : 1;
    const int first = static_cast<int>(std::floor(std::log10(range.lower)));
    const int last = static_cast<int>(std::ceil(std::log10(range.upper)));
    QVector<double> ticks;
    for (int d = first; d <= last; ++d) {
        if (((d % every) + every) % every != 0)
            continue;
        const double power = std::pow(10.0, d);
        for (const double m : mantissas)
            ticks.append(m * power);
    }
    const auto inside = std::count_if(ticks.cbegin(), ticks.cend(), [&](double t) { return range.contains(t); });
    if (inside < 2)
        return QCPAxisTicker::createTickVector(tickStep, range);
    m_logTicks = true;
    return ticks;
}

QString ValueAxisTicker::getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision)
{
    Q_UNUSED(locale)
    Q_UNUSED(formatChar)
    Q_UNUSED(precision)
    if (m_logTicks && tick > 0) {
        // 1, 2 or 5 times a power of ten: the power itself is the precision.
        const double power = std::pow(10.0, std::floor(std::log10(tick) + 1e-9));
        return curvemath::formatAxisValue(tick, power, m_magnitude);
    }
    return curvemath::formatAxisValue(tick, m_tickStep, m_magnitude);
}

}  // namespace widelab
