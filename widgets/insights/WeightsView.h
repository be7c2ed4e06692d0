// defines: widelab::WeightsView, each parameter group's weights and gradients
// over training (TrainingSnapshot::weightHistograms, gradientHistograms): their
// spread against the step as TensorBoard's Distributions draw it (bands between
// percentiles, the median a line), and the histogram at the shown step beside
// the compared run's
#pragma once

#include "InsightPage.h"

#include <vector>

class QComboBox;
class QCPGraph;
class QCustomPlot;
class QLabel;

namespace widelab {

class WeightsView : public InsightPage {
    Q_OBJECT
public:
    explicit WeightsView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override;
    QByteArray csv() const override;

    // The percentiles the bands join, as fractions: TensorBoard's (the normal
    // distribution's -inf, -1.5, -1, -0.5, 0, 0.5, 1, 1.5 and +inf sigma).
    static const std::vector<double>& bandFractions();
    // The newest state at or before `step` (step < 0: the newest) with
    // histograms; nullptr when none has them.
    static const TrainingSnapshot* measuredAt(const InsightHistory& history, qint64 step);

    QComboBox* groups() const { return m_group; }
    QComboBox* kinds() const { return m_kind; }  // weights, then gradients
    QCustomPlot* spreadPlot() const { return m_spread; }
    QCustomPlot* histogramPlot() const { return m_histogram; }
    // The spread's line of bandFractions()[index] (the median's is drawn last, over the bands).
    QCPGraph* spreadLine(std::size_t index) const;

private:
    bool showsGradients() const;
    void drawSpread(const QString& group, qint64 shownStep);
    void drawHistogram(const QString& group, const TrainingSnapshot& shown, const TrainingSnapshot* compared);

    QLabel* m_empty = nullptr;
    QWidget* m_charts = nullptr;
    QComboBox* m_group = nullptr;
    QComboBox* m_kind = nullptr;
    QCustomPlot* m_spread = nullptr;
    QCustomPlot* m_histogram = nullptr;
    std::vector<QCPGraph*> m_lines;  // by bandFractions()
};

}  // namespace widelab
