// defines: BenchmarkOptions, BenchmarkResult, runBenchmark(): timed training or
// inference steps of a model on random tokens, on the CPU or a CUDA device, in
// fp32 or under bf16 autocast, with achieved FLOP/s against the measured
// matrix-product peak (MFU), peak memory and a per-phase breakdown (`widelab-cli bench`)
#pragma once

#include "train/RunConfig.h"
#include "config/ModelConfig.h"
#include "runtime/KernelProfile.h"
#include "runtime/OperatorCount.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace widelab {

struct BenchmarkOptions {
    bool train = true;          // false: inference (eval mode, no autograd)
    std::int64_t batch = 16;
    std::int64_t sequence = 256;  // tokens per sequence, not counting a CLS token (image models: their patches)
    std::int64_t steps = 10;    // timed steps; the step time reported is their median
    std::int64_t warmup = 2;    // untimed steps first (allocation, caches)
    std::int64_t peakSize = 0;  // matrix size of the peak measurement; 0: 1024 on the CPU, 8192 on CUDA
    double learningRate = 1e-4;  // AdamW, as the Python reference uses
    std::string device = "cpu";  // cpu, cuda, cuda:N
    bool bf16 = false;          // bf16 autocast for forward and loss (the router stays fp32)
    // Inference: every token's row, also where a classifier's last block could
    // compute its CLS token's alone (WideTransformerImpl::computeEveryRow).
    bool everyRow = false;
    double nominalPeakFlops = 0.0;  // the device's dense peak from its data sheet; 0: none
    // CUDA training: capture one step as a CUDA graph after the warm-up and time
    // its replays (no host launches per kernel; no phase pass). For timing only:
    // the optimizer's step count, and so AdamW's bias correction, stays at the
    // captured step's.
    bool cudaGraph = false;
    // Where one more step spends its time, by operator and by kernel
    // (KernelProfile.h), the `kernels` entries with most time kept; 0: not profiled.
    std::int64_t kernels = 0;
};

struct BenchmarkResult {
    std::string mode;           // "train" or "infer"
    std::string device;         // "cpu", "cuda:0", ...
    std::string dtype;          // "fp32", or "bf16" under autocast
    bool clsRowOnly = false;    // inference whose last block computed the CLS token's row alone
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
    double peakFlops = 0.0;            // best [n x n] mm in this process, in the step's dtype
    std::int64_t peakSize = 0;         // n
    std::string peakDtype;             // "fp32" or "bf16"
    double peakRatio = 0.0;            // achieved / peak: the MFU against the measured peak
    double nominalPeakFlops = 0.0;     // as given, 0 when none
    double nominalPeakRatio = 0.0;     // achieved / nominal peak, 0 when none
    // Memory since the process started, as deviceMemory() counts it: the CUDA
    // allocator's peaks, or the process's resident high-water mark on the CPU.
    std::int64_t peakAllocatedBytes = 0, peakReservedBytes = 0;
    // Training: what the configuration panel's estimate (MemoryEstimate.h) says
    // these steps hold, to set against the CUDA allocator's peak. 0 for inference.
    std::int64_t memoryEstimateBytes = 0;
    // Seconds per step (mean over the steps timed for phases) of each phase, in
    // PhaseTimer's names, then "other" (embedding, LayerNorms, head, loss,
    // zero_grad). On the CPU these are the timed steps; on CUDA a separate pass
    // of as many steps whose scopes synchronise (PhaseTimer.h).
    std::vector<std::pair<std::string, double>> phases;
    double phaseStepSeconds = 0.0;     // mean step of the pass the phases come from
    // CUDA training: how long the host took to queue a step's work (forward,
    // backward, optimizer; median over the timed steps). Close to the step time,
    // the GPU waited on the host's kernel launches rather than the other way round.
    double queueSeconds = 0.0;
    bool cudaGraph = false;            // the timed steps were replays of a captured CUDA graph
    // Mixtures: routing_dispatch_combine / (routing_dispatch_combine + ffn_experts),
    // forward only: the share of the MoE layers' time not spent in experts. -1: dense.
    double moeRoutingShare = -1.0;
    // The same share in one more step under the profiler (BenchmarkOptions::
    // kernels): on a GPU the device time of the kernels each phase launched, so
    // the host's launches and the scopes' synchronisations are not in it; on
    // the CPU the operators' self time. -1: dense, or no profile.
    double moeRoutingShareByKernels = -1.0;
    // Mixtures: how the experts multiplied, "grouped" (products over the
    // pairs sorted by expert: at::_grouped_mm on a GPU, an mm per expert on the
    // CPU) or "batched" (the capacity buffer); empty: dense.
    std::string expertProducts;
    // The ATen operators of one more step, counted apart from the timed ones
    // (none counted for graph replays): per phase as `phases` orders them.
    // Fewer is faster wherever the host's dispatches and launches bound a step.
    OperatorTally operators;
    // One more step under LibTorch's profiler (BenchmarkOptions::kernels), cut
    // to that many entries; none for graph replays.
    KernelProfile kernels;
    double loss = 0.0;                 // last step's loss (training) or mean logit (inference)
    std::string warning;               // slowMatmulWarning, empty when none

    nlohmann::json toJson() const;
};

// Builds the model (max_len raised to `sequence` when shorter) on the device,
// runs warm-up and timed steps on random tokens (image models: random pixels), single process, current thread
// settings. Throws std::invalid_argument for a device that cannot be used.
BenchmarkResult runBenchmark(const ModelConfig& config, const BenchmarkOptions& options);

// The run the training steps of runBenchmark amount to, as the memory estimate
// takes it: benchmarkConfig, every example `sequence` tokens long, `batch` of
// them, AdamW, bf16 as asked, no label smoothing.
RunDocument benchmarkRunDocument(const ModelConfig& config, const BenchmarkOptions& options);

// The configuration runBenchmark builds for a sequence length.
ModelConfig benchmarkConfig(const ModelConfig& config, std::int64_t sequence);

}  // namespace widelab
