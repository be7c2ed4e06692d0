// defines: NumberSpinBox, a QDoubleSpinBox that shows the shortest form of its value
// and accepts scientific input ("3e-4"), optionally stepping per decade (1, 2, ... 9,
// 10), its arrows within an advised range that typing may leave
#pragma once

#include <QDoubleSpinBox>

#include <limits>

namespace widelab {

class NumberSpinBox : public QDoubleSpinBox {
    Q_OBJECT

public:
    explicit NumberSpinBox(QWidget* parent = nullptr);

    // Logarithmic: the arrows step the leading digit within its decade
    // (3e-4 -> 4e-4 ... 9e-4 -> 1e-3), for rates and other scale-free values.
    // Otherwise they add singleStep().
    void setLogarithmic(bool logarithmic) { m_logarithmic = logarithmic; }
    bool isLogarithmic() const { return m_logarithmic; }

    // The range the arrows keep to (the values a key allows). Typing is not
    // held to it: a value outside stays as typed, for the configuration's checks
    // to name, rather than being put back without a word.
    void setAdvisedRange(double minimum, double maximum);
    double advisedMinimum() const { return m_advisedMin; }
    double advisedMaximum() const { return m_advisedMax; }

    QString textFromValue(double value) const override;
    double valueFromText(const QString& text) const override;
    QValidator::State validate(QString& text, int& position) const override;
    void fixup(QString& text) const override;
    void stepBy(int steps) override;

protected:
    StepEnabled stepEnabled() const override;  // the arrows within the advised range

private:
    bool m_logarithmic = false;
    double m_advisedMin = -std::numeric_limits<double>::max();
    double m_advisedMax = std::numeric_limits<double>::max();
};

}  // namespace widelab
