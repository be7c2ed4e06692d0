// defines: CaptureImage, HeadMapCaption, ProbeCapture, InsightHistory: what the
// interpretability views draw, kept over a run's steps: the run's snapshots and
// validation insights (vocab/Snapshot.h) as they are, and probes as plain Qt data
#pragma once

#include "configuration/ArchitectureSketch.h"
#include "vocab/Snapshot.h"

#include <QHash>
#include <QImage>
#include <QString>
#include <QStringList>
#include <QVector>

#include <optional>

namespace widelab {

// A probe image as the model saw it (before normalisation), cut into a grid of
// patches; null image for a text probe.
struct CaptureImage {
    QImage image;                 // width x height pixels, grey or RGB
    int gridRows = 0, gridCols = 0;  // patches

    // From 8-bit pixels, row-major HWC with 1 (grey) or 3 (RGB) channels, and
    // the patch grid. Pixels that do not fill width x height x channels, another
    // channel count or a grid that does not divide the image (a damaged line of
    // metrics.jsonl) give an empty image: the probe is then drawn as tokens.
    static CaptureImage fromPixels(qint64 width, qint64 height, qint64 channels, const quint8* pixels,
                                   qint64 count, qint64 gridRows, qint64 gridCols);
};

// What one head's attention map is: the head's mechanism ("linformer") and the
// kind of map it shows ("exact", "sparse pattern", "implied"), from the model's
// configuration.
struct HeadMapCaption {
    QString mechanism;
    QString kind;
};
// "linformer (implied)" for `head` (of heads, in `paths` paths; captions are one
// per head of a path); empty when the captions do not say.
QString headCaptionText(const QVector<HeadMapCaption>& captions, int head, int heads, int paths);
// One line that explains the kinds among `captions` that need it ("implied: ...");
// empty when every map is exact or nothing is said.
QString mapKindLegend(const QVector<HeadMapCaption>& captions);

// What the model did with one probe text (or image) at one step.
struct ProbeCapture {
    qint64 step = 0;
    QString text;
    QStringList tokens;
    QVector<QVector<QVector<float>>> attention;  // [layer][head]: tokens x tokens, row = query, row-major
    QVector<QVector<QVector<int>>> experts;      // [block][token][choice], -1: dropped
    QVector<float> prediction;
    QStringList predictionLabels;
    int trueLabel = -1;  // index into prediction of the text's true class, when known
    // An image probe's picture; tokens are then "CLS" (when the model has one)
    // and one per patch, row-major.
    CaptureImage image;
    // Logit lens: the model's final LayerNorm and head applied to the residual
    // stream after each sublayer. lensStages[i] names stage i ("block 1 attention",
    // "block 1 ffn", ...); the last stage is the model's output, so its row
    // equals prediction. logitLens[i][c] is the probability of
    // predictionLabels[lensColumns[c]] (lensColumns empty: of every label, c).
    QStringList lensStages;
    QVector<QVector<float>> logitLens;
    QVector<int> lensColumns;

    int tokenCount() const { return static_cast<int>(tokens.size()); }
    bool hasImage() const { return !image.image.isNull() && image.gridRows > 0 && image.gridCols > 0; }
    int patchCount() const { return hasImage() ? image.gridRows * image.gridCols : 0; }
    int layers() const { return static_cast<int>(attention.size()); }
    int heads() const { return attention.isEmpty() ? 0 : static_cast<int>(attention.front().size()); }
    // The weight query -> key of a head (0 outside the map).
    float weight(int layer, int head, int query, int key) const;
    // The mean over heads of a layer, tokens x tokens.
    QVector<float> meanOverHeads(int layer) const;
};

// A token as a label: line breaks, tabs and lone spaces made visible.
QString visibleToken(const QString& token);

// A run's model states and probe captures, in step order. Every state and
// capture added is kept until there are more than the limits below; then every
// second one of the older half goes, so a long run keeps its whole span at a
// coarser grain and memory stays bounded.
class InsightHistory {
public:
    static constexpr int kMaxStates = 4000;
    static constexpr int kMaxCapturesPerText = 300;

    void addState(TrainingSnapshot state);  // a state for a step already held replaces it
    void addCapture(ProbeCapture capture);
    void addValidationInsight(ValidationInsights insight);  // one for a step already held replaces it
    void truncateAfter(qint64 step);      // a resumed run retraces the steps after its checkpoint
    void clear();

    const QVector<TrainingSnapshot>& states() const { return m_states; }
    QStringList probeTexts() const { return m_texts; }     // in the order first seen
    const QVector<ProbeCapture>& captures(const QString& text) const;
    // The newest state (capture) at or before `step`; step < 0: the newest. nullptr when none.
    const TrainingSnapshot* stateAt(qint64 step) const;
    // The newest state at or before `step` (step < 0: any) that measured routing
    // (path weights): a step between log steps, such as the one a stop saves,
    // may have none.
    const TrainingSnapshot* routedStateAt(qint64 step) const;
    const TrainingSnapshot* pathStateAt(qint64 step) const;
    const ProbeCapture* captureAt(const QString& text, qint64 step) const;
    const QVector<ValidationInsights>& validationInsights() const { return m_validation; }
    // The newest validation insight at or before `step` (step < 0: the newest); nullptr when none.
    const ValidationInsights* validationInsightAt(qint64 step) const;
    // Every step something was recorded at, ascending: the scrubber's stops.
    QVector<qint64> steps() const;
    qint64 lastStep() const;  // -1 when empty
    bool isEmpty() const { return m_states.isEmpty() && m_texts.isEmpty() && m_validation.isEmpty(); }
    // What the model has, from its configuration: the views decide from this
    // whether a run has experts or path weights at all, not from whether some
    // step measured them. Unknown (nullopt) until the app sets it; clear() keeps it.
    void setArchitecture(const ArchitectureSketch& sketch);
    const std::optional<ArchitectureSketch>& architecture() const { return m_architecture; }
    // From the architecture when known, else from whether any state measured them.
    bool hasExperts() const;
    bool hasPathWeights() const;
    // What each head's attention map is, one per head of a path (from the
    // configuration, like the architecture); empty: not known. clear() keeps it.
    void setHeadCaptions(const QVector<HeadMapCaption>& captions);
    const QVector<HeadMapCaption>& headCaptions() const { return m_headCaptions; }
    // Whether the model reads images (its probes are "validation:N" or image
    // files), from the configuration; else whether a capture holds an image.
    void setImageInput(bool images);
    bool imageInput() const;

    // Increases with every change, so views can tell whether to redraw.
    quint64 revision() const { return m_revision; }

private:
    QVector<TrainingSnapshot> m_states;
    QStringList m_texts;
    QHash<QString, QVector<ProbeCapture>> m_captures;
    QVector<ValidationInsights> m_validation;
    std::optional<ArchitectureSketch> m_architecture;
    QVector<HeadMapCaption> m_headCaptions;
    std::optional<bool> m_imageInput;
    quint64 m_revision = 0;
};

}  // namespace widelab
