#include "SiAxisTicker.h"

#include "CurveMath.h"

#include <cmath>

namespace widelab {

double SiAxisTicker::getTickStep(const QCPRange& range)
{
    m_tickStep = QCPAxisTicker::getTickStep(range);
    return m_tickStep;
}

QString SiAxisTicker::getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision)
{
    Q_UNUSED(locale)
    Q_UNUSED(formatChar)
    Q_UNUSED(precision)
    // Ticks are multiples of the step; a value within a millionth of a step of
    // zero is zero (floating-point residue from the tick arithmetic).
    if (m_tickStep > 0 && std::abs(tick) < m_tickStep * 1e-6)
        tick = 0;
    return curvemath::formatCount(tick, m_tickStep);
}

}  // namespace widelab
