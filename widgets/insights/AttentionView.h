// defines: widelab::AttentionPane, AttentionView, attention heads on a probe text
// or image: every head's map of a layer in a grid (over the picture, for an
// image), one head enlarged, the mean over heads (every layer's, over an image),
// where each token looks, every head of every layer (the model view), and the
// prediction; a second run beside the first on the same probe
#pragma once

#include "InsightPage.h"

#include <algorithm>
#include <optional>

class QBoxLayout;
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
class HeadSpinBox;
class MatrixView;
class ModelViewFigure;
class PatchAttentionGrid;
class PredictionBars;
class TokenFlowView;

// One run's side of the view.
class AttentionPane : public QWidget {
    Q_OBJECT
public:
    enum class Mode { Grid, Head, Mean, Tokens, Model };

    explicit AttentionPane(QWidget* parent = nullptr);

    // The run's attention paths, for the heads' names (headLabel); set before show().
    void setPaths(int paths) { m_paths = std::max(1, paths); }
    int paths() const { return m_paths; }
    // Fitting: the grid's (model view's) maps as large as lets all of them be
    // seen in this pane, kept so whenever the pane changes size; else cellSize.
    void setFitting(bool fitting) { m_fitting = fitting; }
    // What each head's map is (InsightHistory::headCaptions); set before show().
    void setCaptions(const QVector<HeadMapCaption>& captions) { m_captions = captions; }
    const QVector<HeadMapCaption>& captions() const { return m_captions; }
    // A masked language model's probe hides its last token: the prediction is of
    // that token, not of a next one. Set before show().
    void setHidesLastToken(bool hides) { m_hidesLastToken = hides; }

    // Shows `capture` (nullptr: `why` instead) at `layer` (clamped to the model's layers).
    // perHead: each map in the grid spans its own range (HeadGrid::setScalePerHead).
    void show(const ProbeResult* capture, const QString& runLabel, int layer, Mode mode, int head, int cellSize,
              bool perHead, const QString& why);
    int shownLayer() const { return m_layer; }
    const ProbeResult* capture() const { return m_capture ? &*m_capture : nullptr; }

    HeadGrid* grid() const { return m_grid; }
    // An image probe's grid: every head's attention over the picture.
    PatchAttentionGrid* patches() const { return m_patches; }
    QScrollArea* patchArea() const { return m_patchArea; }
    bool showsPatches() const;
    MatrixView* matrix() const { return m_matrix; }
    TokenFlowView* tokens() const { return m_tokens; }
    PredictionBars* prediction() const { return m_prediction; }
    QScrollArea* gridArea() const { return m_gridArea; }
    ModelViewFigure* modelView() const { return m_model; }
    QScrollArea* modelArea() const { return m_modelArea; }
    QLabel* header() const { return m_header; }

Q_SIGNALS:
    void headClicked(int head);             // -1: back to the grid
    void layerHeadClicked(int layer, int head);  // in the model view
    void layerClicked(int layer);                // a layer's tile of a picture's means
    void fitted(int cellSize);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void fit();
    void arrange();  // the prediction beside the maps, or under them in a tall pane



    QLabel* m_header = nullptr;
    QBoxLayout* m_body = nullptr;
    QStackedWidget* m_stack = nullptr;
    QScrollArea* m_gridArea = nullptr;
    HeadGrid* m_grid = nullptr;
    QScrollArea* m_patchArea = nullptr;
    PatchAttentionGrid* m_patches = nullptr;
    MatrixView* m_matrix = nullptr;
    TokenFlowView* m_tokens = nullptr;
    QScrollArea* m_modelArea = nullptr;
    ModelViewFigure* m_model = nullptr;
    PredictionBars* m_prediction = nullptr;
    std::optional<ProbeResult> m_capture;  // a copy: the history may move its captures
    int m_layer = 0;
    int m_paths = 1;
    QVector<HeadMapCaption> m_captions;
    bool m_hidesLastToken = false;
    bool m_fitting = false;
    bool m_inFit = false;
};

class AttentionView : public InsightPage {
    Q_OBJECT
public:
    explicit AttentionView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    // In the grid and the model view: a sheet drawn off screen with every head
    // of each shown run at a readable size, whatever the scroll and zoom; in the
    // other modes the panes as they are. A sheet lives until the next call.
    QWidget* exportArea() override;
    QByteArray csv() const override;

    void setLayer(int layer);   // 0-based
    int layer() const;
    void setMode(AttentionPane::Mode mode);
    AttentionPane::Mode mode() const;
    void showHead(int head);    // enlarges a head (0-based)
    int head() const;
    void setCellSize(int pixels);
    void fitCells();  // the largest maps at which every head is in view, in each pane
    void setScalePerHead(bool perHead);

    AttentionPane* primaryPane() const { return m_panes[0]; }
    QLabel* legend() const { return m_legend; }
    QLabel* mapKinds() const { return m_kinds; }
    AttentionPane* comparisonPane() const { return m_panes[1]; }

protected:
    void keyPressEvent(QKeyEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    QSpinBox* m_layer = nullptr;
    QComboBox* m_mode = nullptr;
    HeadSpinBox* m_head = nullptr;
    QSlider* m_zoom = nullptr;
    QPushButton* m_fit = nullptr;
    QComboBox* m_scale = nullptr;
    QLabel* m_legend = nullptr;
    QLabel* m_kinds = nullptr;  // what "implied" and "sparse pattern" mean, when a head shows one
    QSplitter* m_split = nullptr;
    AttentionPane* m_panes[2] = {nullptr, nullptr};
    QWidget* m_sheet = nullptr;  // the last export's, never shown
    bool m_fitting = true;  // maps sized to fit their pane, not to the zoom slider
};

}  // namespace widelab
