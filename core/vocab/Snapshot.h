// defines: RoutingStats, HealthEvent, PathWeights, LayerNormDivergence,
// ValueHistogram, TrainingSnapshot, EvaluationResult, HeadRoleScores, ExpertIntake,
// ValidationInsights, ProbeResult and TrainingObserver: what training reports,
// as plain C++ data (no tensors), for observers and metrics.jsonl
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

// One routing call (a block that routes), over the real tokens of one batch.
struct RoutingStats {
    std::int64_t block = 0;
    std::vector<std::int64_t> tokensPerExpert;    // kept assignments, all choices
    std::vector<double> droppedPercentPerChoice;  // [top_k]: choice 0 is top-1
    std::int64_t unusedExperts = 0;               // experts that received no token
    double routerEntropy = 0.0;                   // mean entropy of the router distribution, nats
    std::vector<double> loadVsFair;               // tokens per expert / (S * K / E)
    // Router health (docs/insights.md), on the router's probabilities averaged
    // over the tokens, p_e (what the router asks for, before ties and capacity):
    double maxViolation = 0.0;      // MaxVio: E * max_e p_e - 1; 0 when balanced
    double effectiveExperts = 0.0;  // exp(H(p)) / E; 1 when balanced
    double zLoss = 0.0;             // mean over tokens of logsumexp_e(logits)^2
    double deadFraction = 0.0;      // unusedExperts / E
    // Tokens whose top-1 expert is the one they had at the previous routing
    // block, 0..1; -1 for the first routing block.
    double consistency = -1.0;

    std::int64_t totalTokens() const;               // kept assignments over every expert
    double share(std::int64_t expert) const;        // of totalTokens, 0..1; 0 outside the experts or with none
    std::vector<double> shares() const;             // every expert's, the total summed once
};

// A health alarm raised (level "warning") or cleared ("info") at a measurement;
// the same sentence goes to the run's log (HealthAlarms.h).
struct HealthEvent {
    std::string kind;        // "collapse", "dead expert", "z-loss", "path weight"
    std::string level;       // "warning" or "info"
    std::int64_t block = -1; // 0-based
    std::int64_t index = -1; // the expert or the path feature; -1: the block
    std::string sublayer;    // path weights: "attention" or "ffn"; else empty
    std::string text;
};

// Learnable path weights of one multi-path sublayer. A translation model's
// decoder blocks are numbered after the encoder's (decoder block i is block
// model.layers + i), as the forward trace, ablations and the logit lens number them.
struct PathWeights {
    std::int64_t block = 0;
    std::string sublayer;        // "attention", "ffn", or a decoder's "cross_attention"
    std::int64_t paths = 0;      // raw paths; alpha holds them, then one extra feature per path when enabled
    std::vector<float> alpha;    // raw paths, then extra features
    float beta = 1.0f;
    double diversity = 0.0;      // over the raw paths (PathCombiner.h: pathDiversity)

    // The feature alpha[index] weighs: "path 2", or for an extra feature
    // "mean without path 2" (PathCombiner.h).
    std::string featureName(std::int64_t index) const;
};

// WideNet Eq. 9 for one LayerNorm position, over N blocks of width M.
// allPairs: the equation as printed, element i of block j against every element m
// of every other block n, averaged over i: 1/(M^2 N^2) sum_j sum_i sum_{n!=j} sum_m |g_ji - g_nm|.
// elementwise: the same element in every other block: 1/(M N^2) sum_j sum_m sum_{n!=j} |g_jm - g_nm|.
struct LayerNormDivergence {
    double gammaAllPairs = 0.0, betaAllPairs = 0.0;
    double gammaElementwise = 0.0, betaElementwise = 0.0;
};

// The values of one group of parameters, or of their gradients, at a step
// (measure/ParameterHistograms.h names the groups): counts in equal buckets from
// the smallest value to the largest; every value in the first bucket when the
// two are equal.
struct ValueHistogram {
    std::string group;  // "embed", "attention.0", "ffn.2", "classifier", ...
    double low = 0.0, high = 0.0;
    std::vector<std::int64_t> counts;

    std::int64_t total() const;
    // The value below which `fraction` (0..1) of the values lie, the values of a
    // bucket taken as spread evenly across it: low for 0, high for 1; 0 when empty.
    double quantile(double fraction) const;
};

// A distributed run's processes over a snapshot's interval (docs/distributed.md):
// each one's mean time per step computing (not waiting for the others: the
// slowest one's is the run's pace) and its peak memory, in rank order; and the
// mean time per step that rank 0 waited for the gradients' all-reduce after its
// backward pass (what the overlap did not hide). One process: size 1, empty.
struct WorldPace {
    std::int64_t size = 1;
    std::vector<double> computeSeconds;
    std::vector<std::int64_t> peakBytes;
    double allReduceWaitSeconds = 0.0;

    // The rank whose computing took longest (the others wait for it); -1 when none is known.
    int slowestRank() const
    {
        int slowest = -1;
        for (std::size_t r = 0; r < computeSeconds.size(); ++r)
            if (slowest < 0 || computeSeconds[r] > computeSeconds[static_cast<std::size_t>(slowest)])
                slowest = static_cast<int>(r);
        return slowest;
    }
};

struct TrainingSnapshot {
    std::int64_t step = 0;              // optimiser updates done
    double wallSeconds = 0.0;           // since the run (or its resumption) started
    double loss = 0.0;                  // task + balance_loss_weight * balance, mean over the interval
    double taskLoss = 0.0;
    double balanceLoss = 0.0;           // sum over routing calls
    double accuracy = 0.0;              // on the training batches of the interval
    double learningRate = 0.0;
    double gradientNorm = 0.0;          // before clipping
    double tokensPerSecond = 0.0;
    double stepSeconds = 0.0;
    double dataSeconds = 0.0;           // of stepSeconds, reading the batch (examples, augmentation, to the device)
    // The run's memory (DeviceMemory.h): on a GPU the CUDA allocator's bytes in
    // tensors and held from the driver, with their peaks since the run started;
    // on the CPU the process's resident set (both) and its high-water mark.
    std::string memoryKind = "rss";     // "cuda" or "rss"
    std::int64_t memoryBytes = 0;       // allocated (CUDA) or resident (CPU)
    std::int64_t memoryReservedBytes = 0;
    std::int64_t memoryPeakBytes = 0;
    std::int64_t memoryPeakReservedBytes = 0;
    double measurementSeconds = 0.0;    // time spent measuring in this interval
    WorldPace world;                    // a distributed run's processes
    std::vector<RoutingStats> routing;
    std::vector<std::vector<float>> ffnGamma, ffnBeta, attentionGamma, attentionBeta;  // per block
    LayerNormDivergence divergence;           // the LayerNorm before the FFN/MoE (the paper's)
    LayerNormDivergence attentionDivergence;  // the LayerNorm before attention
    std::vector<PathWeights> paths;
    // Per block: the residual stream after it, as the mean over the batch's real
    // tokens of each token's L2 norm over the width (a training batch's forward).
    std::vector<double> residualNorms;
    // Each parameter group's weights after the step, and its gradients of the
    // step before clipping; on the first train line, each one that reaches a
    // validation step (a multiple of train.eval_every), and the run's last.
    std::vector<ValueHistogram> weightHistograms, gradientHistograms;
    std::vector<HealthEvent> alarms;          // raised or cleared at this snapshot
    // The steps of a stopped run since the last recorded snapshot: shown, but
    // kept for its checkpoint rather than written to metrics.jsonl, so that the
    // resumed run writes the lines an uninterrupted run writes. No alarms.
    bool provisional = false;
};

struct EvaluationResult {
    std::int64_t step = 0;
    std::string split;          // "validation" or "test"
    double loss = 0.0;          // task loss
    double accuracy = 0.0;      // next-token accuracy for language models
    double perplexity = 0.0;    // language and translation models: exp(loss)
    std::int64_t examples = 0;
    // Translation: BLEU and chrF (sacreBLEU's defaults, 0-100) of greedy translations
    // of the split's first `translated` sentences; 0 sentences: not measured.
    double bleu = 0.0;
    double chrf = 0.0;
    std::int64_t translated = 0;
};

// What every head does on the validation probes (HeadRoles.h), 0..1 per role.
struct HeadRoleScores {
    std::vector<std::string> roles;                      // headRoleNames(): the scores' order
    std::vector<std::vector<std::vector<double>>> scores;  // [layer][head][role]
    std::vector<std::vector<std::int64_t>> dominant;      // [layer][head]: index into roles

    int layers() const { return static_cast<int>(scores.size()); }
    int heads() const { return scores.empty() ? 0 : static_cast<int>(scores.front().size()); }
};

// The roles a head is scored on, in the scores' order: six for every model, and
// for a language model "duplicate token" and "induction" after them.
std::vector<std::string> headRoleNames(bool languageModel);

// What one routing block's experts received over the validation sample: every
// kept choice counts.
struct ExpertIntake {
    std::int64_t block = 0;
    std::vector<std::vector<std::pair<std::string, std::int64_t>>> topTokens;  // [expert]: most frequent first
    std::vector<std::vector<std::int64_t>> classCounts;  // [expert][class] (classification; else empty)
};

// Measured at every validation besides loss and accuracy.
struct ValidationInsights {
    std::int64_t step = 0;
    std::int64_t examples = 0;         // validation examples in the sample (probes besides)
    HeadRoleScores heads;
    std::vector<ExpertIntake> experts;  // per routing block; empty for a dense model
    std::vector<std::string> classNames;        // classification: the classes of classCounts
};

// An image probe as the model saw it, before normalisation (resized, channels
// converted), with the grid of patches its tokens stand for.
struct ProbeImage {
    std::int64_t width = 0, height = 0, channels = 0;
    std::vector<std::uint8_t> pixels;  // row-major HWC
    std::int64_t gridRows = 0, gridCols = 0;  // patches
};

// The logit lens at one point of the residual stream.
struct LensStage {
    std::int64_t block = 0;     // 0-based
    std::string sublayer;       // after "attention" or "ffn"
    std::vector<float> distribution;
};

// What the model does with one probe text (or, for image models, one image).
struct ProbeResult {
    std::int64_t step = 0;
    std::string text;
    std::vector<std::string> tokens;                               // as the model sees them (CLS first when used)
    std::vector<std::vector<std::vector<std::vector<float>>>> attention;  // [layer][head][query][key]
    std::vector<std::vector<std::vector<std::int64_t>>> experts;  // [block][token][choice], -1 when dropped
    std::vector<float> prediction;    // class probabilities, or the next-token distribution after the last token
    std::vector<std::string> predictionLabels;
    std::int64_t label = -1;          // the true class when the text is a validation example, else -1
    std::int64_t cutTokens = 0;       // tokens of the text past the run's sequence length: the model never saw them
    // Translation models: the text's greedy translation; `tokens`, `attention` and
    // `experts` are the encoder's over the text, `prediction` what follows the translation.
    // The decoder reads targetTokens ("<s>", then the translation's tokens), and
    // each of its positions attends over the encoder's tokens: crossAttention
    // [decoder layer][head][target position][source token].
    std::string translation;
    std::vector<std::string> targetTokens;
    std::vector<std::vector<std::vector<std::vector<float>>>> crossAttention;
    // Image models: the image (text: the probe entry, "validation:N" or a file);
    // tokens are "CLS" (when used) and then the patches row by row, "r0c0", "r0c1", ...
    // Text probes: empty (width 0).
    ProbeImage image;
    // Logit lens: the final LayerNorm and head applied after every sublayer, one
    // stage each, in order; the last stage's distribution is `prediction`.
    // Each distribution holds the entries of `prediction` that lensColumns names
    // (empty: all of them, in order).
    std::vector<LensStage> logitLens;
    std::vector<std::int64_t> lensColumns;
};

class TrainingObserver {
public:
    virtual ~TrainingObserver() = default;
    virtual void onSnapshot(const TrainingSnapshot&) {}
    virtual void onEvaluation(const EvaluationResult&) {}
    virtual void onProbe(const ProbeResult&) {}
    virtual void onValidationInsights(const ValidationInsights&) {}
    virtual void onMessage(const std::string& level, const std::string& text) { (void)level, (void)text; }
    // The run has paused after `step` optimiser updates (the step its log line names);
    // snapshots come every log_every steps, so the last one may tell of fewer.
    virtual void onPaused(std::int64_t step) { (void)step; }
};

}  // namespace widelab
