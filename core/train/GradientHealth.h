// defines: clearGradients, GradientNorms, clipGradients, NonFiniteWatch: a step's
// gradients dropped, their norms and clipping, and the first non-finite tensor of
// the steps since the last check, all kept on the device so that a GPU step never
// waits for the host
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <functional>
#include <vector>

namespace widelab {

// Drops every parameter's gradient before a step, so that backward writes the
// gradients rather than adding into zeros. Dispatches no operator (a module's
// zero_grad(true) detaches each gradient first, an operator per parameter).
void clearGradients(const std::vector<torch::Tensor>& parameters);

// P = parameters, in the order of module.parameters()
struct GradientNorms {
    torch::Tensor each;   // [P] float32: each parameter's gradient norm (0 without a gradient; NaN/Inf where it has one)
    torch::Tensor total;  // [] float64: the global norm before clipping
};

// Parameters that each process holds a part of (expert parallelism): the global
// norm sums their squares over the ranks.
struct ShardedNorms {
    std::function<bool(const torch::Tensor& parameter)> holds;
    std::function<void(torch::Tensor& squares)> sumOverRanks;
};

// The global gradient norm, and each parameter's (of this process's part, where
// sharded); scales the gradients down to a global norm of at most `maxNorm`
// (<= 0: never). No host synchronisation but for `sharded`'s sum.
GradientNorms clipGradients(const std::vector<torch::Tensor>& parameters, double maxNorm,
                            const ShardedNorms* sharded = nullptr);

// Watches steps for a non-finite loss or gradient. observe() queues a few device
// operations per step; firstProblem() reads the verdict back (waiting for the
// device), naming the first step that went wrong and its first non-finite
// tensor: the loss, or the gradient of a parameter by its name.
class NonFiniteWatch {
public:
    // The names of the parameters, in the order of GradientNorms::each.
    explicit NonFiniteWatch(std::vector<std::string> parameterNames);

    // `step` is the step's number as reported (1 for the first update).
    void observe(std::int64_t step, const torch::Tensor& loss, const GradientNorms& norms);
    // "step 12: the gradient of blocks.0.w is not finite (NaN or Inf)", or
    // nothing when every step observed since the last reset was finite.
    std::optional<std::string> firstProblem() const;
    // Forgets the steps observed so far (after a check that found none bad).
    void reset() { m_first = torch::Tensor(); }

private:
    std::vector<std::string> m_names;
    torch::Tensor m_first;  // [2] int64 on the device: step and tensor (0 the loss, i + 1 parameter i); -1 when none
};

}  // namespace widelab
