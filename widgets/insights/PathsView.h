// defines: widelab::PathsView, the learnable weights of multi-path sublayers:
// alpha of every path and feature and beta of every sublayer against step, and
// path diversity against depth (the multi-path paper's |d| figure). In the
// alpha chart each path is a run of its own colour: series "alpha" its weight,
// "feature" the weight of the extra feature that leaves it out, when there is one.
// The trainer's path-weight alarms are listed (AlarmList) and the path an alarm
// in force names is marked in the alpha chart's legend and title.
#pragma once

#include "InsightPage.h"

class QComboBox;
class QCustomPlot;
class QLabel;

namespace widelab {

class AlarmList;
class CurvePlot;

class PathsView : public InsightPage {
    Q_OBJECT
public:
    explicit PathsView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override { return m_body; }
    QByteArray csv() const override;

    void setBlock(int block);  // 0-based
    void setSublayer(const QString& sublayer);  // "attention", "ffn" or a decoder block's "cross_attention"
    CurvePlot* alphaPlot() const { return m_alpha; }
    CurvePlot* betaPlot() const { return m_beta; }
    QCustomPlot* diversityPlot() const { return m_diversity; }
    AlarmList* alarms() const { return m_alarms; }
    // Whether `alarm` (kind "path weight") concerns the alpha chart's block and
    // sublayer: same block, and the sublayer its text names, or either when it names none.
    static bool concerns(const HealthEvent& alarm, int block, const QString& sublayer);

private:
    void showCurves();
    void showDiversity();

    QLabel* m_empty = nullptr;
    QWidget* m_controls = nullptr;
    QWidget* m_body = nullptr;
    QComboBox* m_block = nullptr;
    QComboBox* m_sublayer = nullptr;
    CurvePlot* m_alpha = nullptr;
    CurvePlot* m_beta = nullptr;
    QCustomPlot* m_diversity = nullptr;
    AlarmList* m_alarms = nullptr;
    QString m_curvesKey;
    int m_blockNaming = -1;  // the encoder depth the block list was named for (0: one stack)
};

}  // namespace widelab
