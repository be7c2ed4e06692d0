#include "NumberSpinBox.h"

#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <limits>

namespace widelab {
namespace {

// A complete number, or one still being typed ("", "-", "1e", "3.").
const QRegularExpression kComplete(QStringLiteral(R"(^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$)"));
const QRegularExpression kPartial(QStringLiteral(R"(^[+-]?(\d*\.?\d*)([eE][+-]?\d*)?$)"));

QString stripped(const QString& text) { return text.trimmed().remove(QLatin1Char(' ')); }

}  // namespace

NumberSpinBox::NumberSpinBox(QWidget* parent) : QDoubleSpinBox(parent)
{
    // The most decimals Qt allows, so that the value is never rounded; the text
    // comes from textFromValue, not from decimals().
    setDecimals(std::numeric_limits<double>::max_exponent10 + std::numeric_limits<double>::digits10);
    setLocale(QLocale::c());
    setKeyboardTracking(true);
    setCorrectionMode(QAbstractSpinBox::CorrectToPreviousValue);
}

QString NumberSpinBox::textFromValue(double value) const
{
    return QString::number(value, 'g', QLocale::FloatingPointShortest);
}

double NumberSpinBox::valueFromText(const QString& text) const
{
    bool ok = false;
    const double value = stripped(text).toDouble(&ok);
    return ok ? value : this->value();
}

QValidator::State NumberSpinBox::validate(QString& text, int&) const
{
    const QString s = stripped(text);
    if (kComplete.match(s).hasMatch()) {
        bool ok = false;
        const double value = s.toDouble(&ok);
        if (ok && value >= minimum() && value <= maximum())
            return QValidator::Acceptable;
        return QValidator::Intermediate;
    }
    if (kPartial.match(s).hasMatch())
        return QValidator::Intermediate;
    return QValidator::Invalid;
}

void NumberSpinBox::fixup(QString& text) const { text = textFromValue(value()); }

void NumberSpinBox::setAdvisedRange(double minimum, double maximum)
{
    m_advisedMin = minimum;
    m_advisedMax = maximum;
    // What typing may reach: wide, and short to print (the box's width follows
    // its limits' text).
    constexpr double kTyped = 1e15;
    setRange(std::min(-kTyped, minimum), std::max(kTyped, maximum));
}

QAbstractSpinBox::StepEnabled NumberSpinBox::stepEnabled() const
{
    if (isReadOnly())
        return StepNone;
    StepEnabled enabled = StepNone;
    if (value() > m_advisedMin)
        enabled |= StepDownEnabled;
    if (value() < m_advisedMax)
        enabled |= StepUpEnabled;
    return enabled;
}

void NumberSpinBox::stepBy(int steps)
{
    if (!m_logarithmic) {
        setValue(std::clamp(value() + steps * singleStep(), m_advisedMin, m_advisedMax));
        selectAll();
        return;
    }
    double value = this->value();
    for (int i = 0; i < std::abs(steps); ++i) {
        const bool up = steps > 0;
        if (value <= 0) {
            value = up ? std::max(minimum(), 1e-6) : 0.0;
            continue;
        }
        // value = m * 10^e with the mantissa m rounded to one digit in 1..9.
        double exponent = std::floor(std::log10(value));
        double mantissa = std::round(value / std::pow(10.0, exponent));
        if (mantissa >= 10) {
            mantissa = 1;
            exponent += 1;
        }
        mantissa += up ? 1 : -1;
        if (mantissa >= 10) {
            mantissa = 1;
            exponent += 1;
        } else if (mantissa < 1) {
            mantissa = 9;
            exponent -= 1;
        }
        // Printed and read back so that 3e-4 is stored as 3e-4, not 0.00030000000000000003.
        value = QString::number(mantissa, 'f', 0).append('e').append(QString::number(exponent, 'f', 0)).toDouble();
    }
    setValue(std::clamp(value, std::max(minimum(), m_advisedMin), std::min(maximum(), m_advisedMax)));
    selectAll();
}

}  // namespace widelab
