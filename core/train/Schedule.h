// defines: ScheduleKind, ScheduleOptions, learningRate() (the learning rate of a schedule at a step)
// and applyLearningRate() (setting it on every param group of an optimizer)
#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>

namespace widelab {

// Steps count from 0: the first update uses step 0. w = warmupSteps, T = totalSteps.
//
// Linear warmup (every kind but Constant), for step < w:
//     lr = peak * (step + 1) / w                  (w = 0: no warmup)
// so the last warmup step, w - 1, runs at peak.
//
// After warmup (step >= w):
//   Constant      lr = peak at every step, warmup ignored.
//   WarmupCosine  lr = peak * (minRatio + (1 - minRatio) * 0.5 * (1 + cos(pi * p))),
//                 p = (step - w) / max(1, T - w) clamped to [0, 1]: peak at step w, minRatio * peak from
//                 step T on.
//   WarmupLinear  BERT's and ALBERT's linear decay: lr = peak * (minRatio + (1 - minRatio) * (1 - p)), p as
//                 for the cosine: peak at step w, minRatio * peak from step T on.
//   InverseSqrt   the inverse square root of the Transformer (Vaswani et al. 2017) and the Multi-Path
//                 Transformer: lr = peak * sqrt(w / (step + 1)), continuous with warmup (at step + 1 = w
//                 both give peak). w = 0: lr = peak / sqrt(step + 1), which is the same as w = 1.
//   WarmupRsqrt   LRA's "constant * linear_warmup * rsqrt_decay" (Tay et al. 2021, train_utils.py), with
//                 LRA's step s = step + 1 and its base rate expressed through the peak (base = peak * sqrt(w)):
//                     lr = peak * sqrt(w) * min(1, s / w) / sqrt(max(s, w))
//                 For s < w this is peak * sqrt(w) * (s / w) / sqrt(w) = peak * (step + 1) / w (the warmup
//                 above); for s >= w it is peak * sqrt(w) / sqrt(s) = peak * sqrt(w / (step + 1)). So it
//                 equals InverseSqrt at every step (w = 0 is taken as w = 1 here too); it is computed from
//                 LRA's formula and kept as its own kind for naming fidelity.
enum class ScheduleKind { Constant, WarmupCosine, InverseSqrt, WarmupRsqrt, WarmupLinear };

struct ScheduleOptions {
    ScheduleKind kind = ScheduleKind::WarmupCosine;
    double peak = 1e-3;                // learning rate at the end of warmup
    std::int64_t warmupSteps = 100;    // 0: no warmup
    std::int64_t totalSteps = 1000;    // cosine and linear decay to minRatio * peak at totalSteps and stay there
    double minRatio = 0.0;             // cosine and linear only
};

// Throws std::invalid_argument for a negative step or warmupSteps.
double learningRate(const ScheduleOptions& options, std::int64_t step);

// Sets lr in every param group of an AdamW, SGD or Lamb optimizer (found by dynamic_cast on each group's
// options; the optimizer's defaults are left alone). Throws std::invalid_argument, changing nothing, when
// a group has options of another type or when lr is negative or not finite.
void applyLearningRate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace widelab
