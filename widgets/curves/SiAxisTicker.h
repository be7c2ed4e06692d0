// defines: widelab::SiAxisTicker, a QCustomPlot ticker that labels counts (steps,
// parameters) with k/M/B/T suffixes: 0, 2.5k, 5k, ... 1.2M
#pragma once

#include <qcustomplot.h>

namespace widelab {

class SiAxisTicker : public QCPAxisTicker {
public:
    SiAxisTicker() = default;

protected:
    double getTickStep(const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;

private:
    double m_tickStep = 0;  // the step of the ticks being labelled, so labels tell them apart
};

}  // namespace widelab
