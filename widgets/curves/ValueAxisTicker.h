// defines: widelab::ValueAxisTicker, a QCustomPlot ticker for metric values:
// plain decimals (0.25, 1.5), 3e-4 style below 0.01, k/M suffixes from 10'000,
// and on a logarithmic axis 1-2-(3-)5 ticks per decade (or powers of ten)
#pragma once

#include <qcustomplot.h>

namespace widelab {

class ValueAxisTicker : public QCPAxisTicker {
public:
    ValueAxisTicker() = default;

    // On a log axis: ticks at 1, 2, 3, 5 times each power of ten when the range
    // spans under 1.5 decades, at 1, 2, 5 times under 2.5, at powers of ten (every k-th one beyond 8
    // decades) when wider, and evenly spaced when it spans under 0.7 of one.
    void setLogarithmic(bool on);
    bool logarithmic() const;

protected:
    double getTickStep(const QCPRange& range) override;
    int getSubTickCount(double tickStep) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override;

private:
    bool m_logarithmic = false;
    bool m_logTicks = false;  // the ticks being labelled are log ticks (each carries its own precision)
    double m_tickStep = 0;    // the step of linear ticks being labelled
    double m_magnitude = 0;   // the largest absolute value in the range, which picks the notation
};

}  // namespace widelab
