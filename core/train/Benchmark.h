// defines: BenchmarkOptions, BenchmarkResult, runBenchmark(): timed training or
// inference steps of a model on random tokens, with achieved FLOP/s against the
// measured matrix-product peak and a per-phase breakdown (`widelab-cli bench`)
#pragma once

#include "config/ModelConfig.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace widelab {

struct BenchmarkOptions {
    bool train = true;          // false: inference (eval mode, no autograd)
    std::int64_t batch = 16;
    std::int64_t sequence = 256;  // tokens per sequence, not counting a CLS token
    std::int64_t steps = 10;    // timed steps; the step time reported is their median
    std::int64_t warmup = 2;    // untimed steps first (allocation, caches)
    std::int64_t peakSize = 1024;  // matrix size of the peak measurement
    double learningRate = 1e-4;  // AdamW, as the Python reference uses
};

struct BenchmarkResult {
    std::string mode;           // "train" or "infer"
    std::int64_t batch = 0, sequence = 0, steps = 0, warmup = 0;
    int threads = 0;
    std::string blas, blasFile;
    std::vector<double> stepSeconds;   // every timed step
    double medianStepSeconds = 0.0;
    double tokensPerSecond = 0.0;      // batch * sequence / median step
    // Analytic matrix-product FLOPs (ParameterCount) of one step: forward per
    // token x positions x batch, x3 when training (backward ~2x forward).
    double forwardFlopsPerToken = 0.0;
    double flopsPerStep = 0.0;
    double flopsPerStepAtCapacity = 0.0;  // mixtures: expert buffers counted full
    double achievedFlops = 0.0;        // flopsPerStep / median step
    double peakFlops = 0.0;            // best fp32 [n x n] mm in this process
    double peakRatio = 0.0;            // achieved / peak
    // Seconds per step (mean over timed steps) of each phase, in PhaseTimer's
    // names, then "other" (embedding, LayerNorms, head, loss, zero_grad).
    std::vector<std::pair<std::string, double>> phases;
    double loss = 0.0;                 // last step's loss (training) or mean logit (inference)
    std::string warning;               // slowMatmulWarning, empty when none

    nlohmann::json toJson() const;
};

// Builds the model (max_len raised to `sequence` when shorter), runs warm-up and
// timed steps on random tokens, single process, current thread settings.
BenchmarkResult runBenchmark(const ModelConfig& config, const BenchmarkOptions& options);

// The configuration runBenchmark builds for a sequence length.
ModelConfig benchmarkConfig(const ModelConfig& config, std::int64_t sequence);

}  // namespace widelab
