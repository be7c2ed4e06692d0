// defines: HeadMapCaption, InsightHistory, and probeTextOf, probeTokens, headMap,
// meanOverHeads, probeQImage and the other readings of a probe: what the
// interpretability views draw, kept over a run's steps: the run's snapshots,
// validation insights and probes (vocab/Snapshot.h) as they are
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

// Reading a probe (vocab/Snapshot.h's ProbeResult, stored as the run reports
// it) for drawing: the views convert what they draw, when they draw it.

// The probe's text as shown and as the history keys it: legibleBytes (a text
// cut inside a character, or from binary data, is bytes, not UTF-8).
QString probeTextOf(const ProbeResult& probe);
// The tokens as the model sees them (CLS first when used), and the labels of
// `prediction`, as QStrings.
QStringList probeTokens(const ProbeResult& probe);
QStringList probeLabels(const ProbeResult& probe);
// A logit lens stage's name: "block 1 attention", "block 1 ffn", ... (1-based block).
QString lensStageName(const LensStage& stage);

int probeTokenCount(const ProbeResult& probe);
int probeLayers(const ProbeResult& probe);  // attention layers
int probeHeads(const ProbeResult& probe);   // heads of the first layer; 0 without maps
// The weight query -> key of a head (0 outside the map).
float probeWeight(const ProbeResult& probe, int layer, int head, int query, int key);
// One head's map, its rows (queries) one after another: tokens x tokens
// weights, row-major, for a map that matches its tokens; a map of another size
// (a damaged line) is not drawn. Empty outside the layers and heads.
QVector<float> headMap(const ProbeResult& probe, int layer, int head);
// Every head's map of a layer, as headMap; empty outside the layers.
QVector<QVector<float>> layerMaps(const ProbeResult& probe, int layer);
// The mean over heads of a layer, tokens x tokens, row-major (zeros outside the
// layers; a head's missing weights count as 0).
QVector<float> meanOverHeads(const ProbeResult& probe, int layer);

// Whether an image probe's picture can be drawn: 8-bit pixels, row-major HWC
// with 1 (grey) or 3 (RGB) channels, that fill width x height x channels, and a
// grid of patches that divides the image. A text probe (width 0), another
// channel count, pixels of another size or a grid that does not divide the
// image (a damaged line of metrics.jsonl) cannot: the probe is then drawn as tokens.
bool validProbeImage(const ProbeImage& image);
// The picture as a QImage (grey or RGB); a null image when !validProbeImage.
QImage probeQImage(const ProbeImage& image);
// Whether the probe is an image probe whose picture can be drawn, and its
// patches then (gridRows x gridCols; 0 otherwise).
bool probeHasImage(const ProbeResult& probe);
int probePatchCount(const ProbeResult& probe);

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
    void addCapture(ProbeResult capture);  // keyed by probeTextOf
    void addValidationInsight(ValidationInsights insight);  // one for a step already held replaces it
    void truncateAfter(qint64 step);      // a resumed run retraces the steps after its checkpoint
    void clear();

    const QVector<TrainingSnapshot>& states() const { return m_states; }
    QStringList probeTexts() const { return m_texts; }     // probeTextOf each, in the order first seen
    const QVector<ProbeResult>& captures(const QString& text) const;
    // The newest state (capture) at or before `step`; step < 0: the newest. nullptr when none.
    const TrainingSnapshot* stateAt(qint64 step) const;
    // The newest state at or before `step` (step < 0: any) that measured routing
    // (path weights): a step between log steps, such as the one a stop saves,
    // may have none.
    const TrainingSnapshot* routedStateAt(qint64 step) const;
    const TrainingSnapshot* pathStateAt(qint64 step) const;
    // The newest state at or before `step` (step < 0: any) for which `has`
    // holds: one that measured what a view draws. nullptr when none.
    template <typename Has>
    const TrainingSnapshot* lastStateWith(qint64 step, Has has) const
    {
        for (auto it = m_states.crbegin(); it != m_states.crend(); ++it)
            if ((step < 0 || it->step <= step) && has(*it))
                return &*it;
        return nullptr;
    }
    const ProbeResult* captureAt(const QString& text, qint64 step) const;
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
    QHash<QString, QVector<ProbeResult>> m_captures;
    QVector<ValidationInsights> m_validation;
    std::optional<ArchitectureSketch> m_architecture;
    QVector<HeadMapCaption> m_headCaptions;
    std::optional<bool> m_imageInput;
    quint64 m_revision = 0;
};

}  // namespace widelab
