// defines: RoutingStats, PathWeights, LayerNormDivergence, TrainingSnapshot,
// EvaluationResult, ProbeResult and TrainingObserver: what training reports, as
// plain C++ data (no tensors), for observers and metrics.jsonl
#pragma once

#include <nlohmann/json.hpp>

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
};

// Learnable path weights of one multi-path sublayer.
struct PathWeights {
    std::int64_t block = 0;
    std::string sublayer;        // "attention" or "ffn"
    std::int64_t paths = 0;      // raw paths; alpha holds them, then one extra feature per path when enabled
    std::vector<float> alpha;    // raw paths, then extra features
    float beta = 1.0f;
    double diversity = 0.0;      // over the raw paths (PathCombiner.h: pathDiversity)
};

// WideNet Eq. 9 for one LayerNorm position, over N blocks of width M.
// allPairs: the equation as printed, element i of block j against every element m
// of every other block n, averaged over i: 1/(M^2 N^2) sum_j sum_i sum_{n!=j} sum_m |g_ji - g_nm|.
// elementwise: the same element in every other block: 1/(M N^2) sum_j sum_m sum_{n!=j} |g_jm - g_nm|.
struct LayerNormDivergence {
    double gammaAllPairs = 0.0, betaAllPairs = 0.0;
    double gammaElementwise = 0.0, betaElementwise = 0.0;
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
    // The run's memory (DeviceMemory.h): on a GPU the CUDA allocator's bytes in
    // tensors and held from the driver, with their peaks since the run started;
    // on the CPU the process's resident set (both) and its high-water mark.
    std::string memoryKind = "rss";     // "cuda" or "rss"
    std::int64_t memoryBytes = 0;       // allocated (CUDA) or resident (CPU)
    std::int64_t memoryReservedBytes = 0;
    std::int64_t memoryPeakBytes = 0;
    std::int64_t memoryPeakReservedBytes = 0;
    double measurementSeconds = 0.0;    // time spent measuring in this interval
    std::vector<RoutingStats> routing;
    std::vector<std::vector<float>> ffnGamma, ffnBeta, attentionGamma, attentionBeta;  // per block
    LayerNormDivergence divergence;           // the LayerNorm before the FFN/MoE (the paper's)
    LayerNormDivergence attentionDivergence;  // the LayerNorm before attention
    std::vector<PathWeights> paths;
};

struct EvaluationResult {
    std::int64_t step = 0;
    std::string split;          // "validation" or "test"
    double loss = 0.0;          // task loss
    double accuracy = 0.0;      // next-token accuracy for language models
    double perplexity = 0.0;    // language models: exp(loss)
    std::int64_t examples = 0;
};

// An image probe as the model saw it, before normalisation (resized, channels
// converted), with the grid of patches its tokens stand for.
struct ProbeImage {
    std::int64_t width = 0, height = 0, channels = 0;
    std::vector<std::uint8_t> pixels;  // row-major HWC
    std::int64_t gridRows = 0, gridCols = 0;  // patches
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
    // Image models: the image (text: the probe entry, "validation:N" or a file);
    // tokens are "CLS" (when used) and then the patches row by row, "r0c0", "r0c1", ...
    // Text probes: empty (width 0).
    ProbeImage image;
};

class TrainingObserver {
public:
    virtual ~TrainingObserver() = default;
    virtual void onSnapshot(const TrainingSnapshot&) {}
    virtual void onEvaluation(const EvaluationResult&) {}
    virtual void onProbe(const ProbeResult&) {}
    virtual void onMessage(const std::string& level, const std::string& text) { (void)level, (void)text; }
    // The run has paused after `step` optimiser updates (the step its log line names);
    // snapshots come every log_every steps, so the last one may tell of fewer.
    virtual void onPaused(std::int64_t step) { (void)step; }
};

// Each as its line of metrics.jsonl: the writer, defined with the reader in
// MetricsCodec.cpp (encodeMetricsLine gives the line's text).
nlohmann::json toJson(const TrainingSnapshot& snapshot);
nlohmann::json toJson(const EvaluationResult& result);
nlohmann::json toJson(const ProbeResult& result);

}  // namespace widelab
