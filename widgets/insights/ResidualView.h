// defines: widelab::ResidualView, the residual stream's size against depth: after
// each block, the mean over a training batch's real tokens of each token's L2
// norm (TrainingSnapshot::residualNorms), at the shown step beside the run's
// first measured step, and the compared run's at its step
#pragma once

#include "InsightPage.h"

class QCustomPlot;
class QLabel;

namespace widelab {

class ResidualView : public InsightPage {
    Q_OBJECT
public:
    explicit ResidualView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override;
    QByteArray csv() const override;

    QCustomPlot* plot() const { return m_plot; }
    // The newest state at or before `step` (step < 0: the newest) that measured
    // the residual stream; nullptr when none did.
    static const TrainingSnapshot* measuredAt(const InsightHistory& history, qint64 step);

private:
    QLabel* m_empty = nullptr;
    QLabel* m_note = nullptr;
    QCustomPlot* m_plot = nullptr;
};

}  // namespace widelab
