// defines: NumberSpinBox, a QDoubleSpinBox that shows the shortest form of its value
// and accepts scientific input ("3e-4"), optionally stepping per decade (1, 2, ... 9, 10)
#pragma once

#include <QDoubleSpinBox>

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

    QString textFromValue(double value) const override;
    double valueFromText(const QString& text) const override;
    QValidator::State validate(QString& text, int& position) const override;
    void fixup(QString& text) const override;
    void stepBy(int steps) override;

private:
    bool m_logarithmic = false;
};

}  // namespace widelab
