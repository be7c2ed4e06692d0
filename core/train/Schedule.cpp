#include "Schedule.h"

#include "FusedAdamW.h"
#include "Lamb.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace widelab {

namespace {

// lr = peak * sqrt(w) * min(1, s / w) / sqrt(max(s, w)), s = step + 1 (LRA); w = 0 is taken as 1.
double lraWarmupRsqrt(double peak, std::int64_t warmupSteps, std::int64_t step)
{
    const auto w = static_cast<double>(std::max<std::int64_t>(warmupSteps, 1));
    const auto s = static_cast<double>(step + 1);
    return peak * std::sqrt(w) * std::min(1.0, s / w) / std::sqrt(std::max(s, w));
}

bool isSupported(const torch::optim::OptimizerOptions& options)
{
    return dynamic_cast<const torch::optim::AdamWOptions*>(&options)
           || dynamic_cast<const torch::optim::SGDOptions*>(&options) || dynamic_cast<const LambOptions*>(&options);
}

void setLr(torch::optim::OptimizerOptions& options, double lr)
{
    if (auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&options))
        adamw->lr(lr);
    else if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&options))
        sgd->lr(lr);
    else if (auto* lamb = dynamic_cast<LambOptions*>(&options))
        lamb->lr(lr);
}

}  // namespace

double learningRate(const ScheduleOptions& options, std::int64_t step)
{
    if (step < 0)
        throw std::invalid_argument("learning rate schedule: step " + std::to_string(step) + " is negative");
    if (options.warmupSteps < 0)
        throw std::invalid_argument("learning rate schedule: warmupSteps " + std::to_string(options.warmupSteps)
                                    + " is negative");
    const double peak = options.peak;
    const std::int64_t warmup = options.warmupSteps;
    if (options.kind == ScheduleKind::Constant)
        return peak;
    if (options.kind == ScheduleKind::WarmupRsqrt)
        return lraWarmupRsqrt(peak, warmup, step);
    if (step < warmup)
        return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);

    // Cosine and linear: how far through the decay, from 0 at the end of warmup to 1 at the last step.
    const auto span = static_cast<double>(std::max<std::int64_t>(1, options.totalSteps - warmup));
    const double p = std::clamp(static_cast<double>(step - warmup) / span, 0.0, 1.0);
    switch (options.kind) {
    case ScheduleKind::WarmupCosine:
        return peak * (options.minRatio + (1.0 - options.minRatio) * 0.5 * (1.0 + std::cos(std::numbers::pi * p)));
    case ScheduleKind::WarmupLinear:
        return peak * (options.minRatio + (1.0 - options.minRatio) * (1.0 - p));
    case ScheduleKind::InverseSqrt:
        if (warmup == 0)
            return peak / std::sqrt(static_cast<double>(step + 1));
        return peak * std::sqrt(static_cast<double>(warmup) / static_cast<double>(step + 1));
    case ScheduleKind::Constant:
    case ScheduleKind::WarmupRsqrt:
        break;
    }
    return peak;
}

void applyLearningRate(torch::optim::Optimizer& optimizer, double lr)
{
    if (!std::isfinite(lr) || lr < 0.0)
        throw std::invalid_argument("learning rate " + std::to_string(lr) + " is negative or not finite");
    for (auto& group : optimizer.param_groups())
        if (!isSupported(group.options()))
            throw std::invalid_argument("applyLearningRate: the optimizer is not AdamW, SGD or Lamb");
    for (auto& group : optimizer.param_groups())
        setLr(group.options(), lr);
    if (auto* fused = dynamic_cast<FusedAdamW*>(&optimizer))
        fused->stageLearningRates();  // a capturable step reads its rate from the device
}

}  // namespace widelab
