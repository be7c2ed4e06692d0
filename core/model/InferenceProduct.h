// defines: inferenceProductApplies, inferenceProduct: a projection's or
// feed-forward layer's product in inference on the CPU in fp32, its bias and
// activation added as its tiles are written, by oneDNN's matmul, where
// LibTorch's addmm copies the bias into every row first and the activation
// makes one more pass
#pragma once

#include "config/ModelConfig.h"

#include <optional>
#include <torch/types.h>

namespace widelab {

// Whether inferenceProduct takes a [M, K] by b [K, N] with bias [N]: the build
// found oneDNN, the fast path is on, M is 2 or more (one row stays a BLAS
// matrix-vector product), a, b and bias (when defined) are fp32 on
// the CPU, a and b with one of their two strides 1, no gradient is asked for
// (GradMode off) and the CPU's autocast is off. Other shapes go to LibTorch,
// which says what is wrong with them.
bool inferenceProductApplies(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias);

// act(a b + bias) as a new contiguous [M, N] tensor; bias undefined or [N];
// no activation when none is given. GELU is the exact one (erf), as
// torch::gelu's default. Call only where inferenceProductApplies.
torch::Tensor inferenceProduct(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                               std::optional<Activation> activation = std::nullopt);

}  // namespace widelab
