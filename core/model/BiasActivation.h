// defines: biasActivationApplies, biasActivation: a feed-forward layer's first
// bias and activation, act(product + bias), in one pass over the product in
// place, on the CPU in fp32 or bf16 for inference, where LibTorch's addmm copies the
// bias into its output before multiplying and the activation makes one more
// pass (and, in 1.13, takes GELU's erf at 2.4x the time of 2.11's)
#pragma once

#include "config/ModelConfig.h"
#include "runtime/TargetClones.h"

#include <torch/types.h>

namespace widelab {

// Whether biasActivation takes a product of x by a weight, decided before it
// is made (the other way is an addmm): the fast path on, x and bias fp32 on
// the CPU (the bias contiguous), no gradient asked for (GradMode off), and the
// CPU's autocast off; or under the CPU's autocast to bf16, x fp32 or bf16 and
// the bias bf16 (autocast's copy), where the product comes out in bf16.
bool biasActivationApplies(const torch::Tensor& x, const torch::Tensor& bias);

// act(product + bias), written over product, which is returned. product:
// [N, M] or [U, N, M], contiguous fp32 or bf16 on the CPU; bias: [M], or [U, M]
// with a row for each of the U products (the experts' or paths' own), of the
// product's type. bf16 is widened as it is read and rounded once, to the
// nearest even, as it is written; the arithmetic is fp32's. GELU is the
// exact one (erf, as torch::gelu's default), erf by Abramowitz and Stegun's
// 7.1.26 (absolute error under 1.5e-7), e^x as attention's kernel takes it
// (runtime/VectorMath.h). Built for AVX-512, AVX2 with FMA and the baseline;
// `set` picks the build, as blockedAttention's does.
torch::Tensor biasActivation(torch::Tensor product, const torch::Tensor& bias, Activation activation,
                             InstructionSet set = bestInstructionSet());

}  // namespace widelab
