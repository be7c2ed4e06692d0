// defines: widelab::LayerNormView, how the individual LayerNorms of blocks
// diverge around shared weights: WideNet Eq. 9 for gamma and beta over training
// (against a comparison run), and gamma and beta of every block and channel
#pragma once

#include "InsightPage.h"

class QComboBox;

namespace widelab {

class CurvePlot;
class MatrixView;

class LayerNormView : public InsightPage {
    Q_OBJECT
public:
    enum class Position { Ffn, Attention };
    enum class Reading { AllPairs, Elementwise };

    explicit LayerNormView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override { return m_body; }
    QByteArray csv() const override;

    void setPosition(Position position);
    void setReading(Reading reading);
    CurvePlot* divergencePlot() const { return m_divergence; }
    MatrixView* gammaMap() const { return m_gamma; }
    MatrixView* betaMap() const { return m_beta; }

private:
    Position position() const;
    Reading reading() const;
    void showCurves();
    void showMaps();

    QComboBox* m_position = nullptr;
    QComboBox* m_reading = nullptr;
    QWidget* m_body = nullptr;
    CurvePlot* m_divergence = nullptr;
    MatrixView* m_gamma = nullptr;
    MatrixView* m_beta = nullptr;
    QString m_curvesKey;  // what the curves were built from, to rebuild only on change
};

}  // namespace widelab
