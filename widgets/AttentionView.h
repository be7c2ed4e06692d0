// defines: widelab::AttentionView, attention heads on a probe text: every head's
// map of a layer in a grid, one head enlarged, the mean over heads, where each
// token looks, and the prediction; a second run beside the first on the same text
#pragma once

#include "InsightPage.h"

#include <optional>

class QComboBox;
class QLabel;
class QPushButton;
class QScrollArea;
class QSlider;
class QSpinBox;
class QSplitter;
class QStackedWidget;

namespace widelab {

class HeadGrid;
class MatrixView;
class PredictionBars;
class TokenFlowView;

// One run's side of the view.
class AttentionPane : public QWidget {
    Q_OBJECT
public:
    enum class Mode { Grid, Head, Mean, Tokens };

    explicit AttentionPane(QWidget* parent = nullptr);

    // Shows `capture` (nullptr: `why` instead) at `layer` (clamped to the model's layers).
    // perHead: each map in the grid spans its own range (HeadGrid::setScalePerHead).
    void show(const ProbeCapture* capture, const QString& runLabel, int layer, Mode mode, int head, int cellSize,
              bool perHead, const QString& why);
    int shownLayer() const { return m_layer; }
    const ProbeCapture* capture() const { return m_capture ? &*m_capture : nullptr; }

    HeadGrid* grid() const { return m_grid; }
    MatrixView* matrix() const { return m_matrix; }
    TokenFlowView* tokens() const { return m_tokens; }
    PredictionBars* prediction() const { return m_prediction; }
    QScrollArea* gridArea() const { return m_gridArea; }
    QLabel* header() const { return m_header; }

Q_SIGNALS:
    void headClicked(int head);

private:
    QLabel* m_header = nullptr;
    QStackedWidget* m_stack = nullptr;
    QScrollArea* m_gridArea = nullptr;
    HeadGrid* m_grid = nullptr;
    MatrixView* m_matrix = nullptr;
    TokenFlowView* m_tokens = nullptr;
    PredictionBars* m_prediction = nullptr;
    std::optional<ProbeCapture> m_capture;  // a copy: the history may move its captures
    int m_layer = 0;
};

class AttentionView : public InsightPage {
    Q_OBJECT
public:
    explicit AttentionView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override;
    QByteArray csv() const override;

    void setLayer(int layer);   // 0-based
    int layer() const;
    void setMode(AttentionPane::Mode mode);
    AttentionPane::Mode mode() const;
    void showHead(int head);    // enlarges a head (0-based)
    int head() const;
    void setCellSize(int pixels);
    void fitCells();
    void setScalePerHead(bool perHead);            // the largest maps at which every head is in view

    AttentionPane* primaryPane() const { return m_panes[0]; }
    AttentionPane* comparisonPane() const { return m_panes[1]; }

protected:
    void keyPressEvent(QKeyEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    QSpinBox* m_layer = nullptr;
    QComboBox* m_mode = nullptr;
    QSpinBox* m_head = nullptr;
    QSlider* m_zoom = nullptr;
    QPushButton* m_fit = nullptr;
    QComboBox* m_scale = nullptr;
    QLabel* m_legend = nullptr;
    QSplitter* m_split = nullptr;
    AttentionPane* m_panes[2] = {nullptr, nullptr};
    bool m_fitting = true;  // maps sized to fit their pane, not to the zoom slider
};

}  // namespace widelab
