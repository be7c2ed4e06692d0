// defines: normToBf16Applies, normToBf16: a LayerNorm whose output goes
// straight into bf16 products, computed in fp32 and written in bf16 in one
// pass, for inference under the CPU's autocast, where LibTorch writes the fp32
// output and autocast then reads it again to cast it
#pragma once

#include "runtime/TargetClones.h"

#include <torch/types.h>

namespace widelab {

// Whether normToBf16 takes x for a LayerNorm of this weight and bias (its
// elementwise affine over the last dimension): the fast path on, the CPU's
// autocast on to bf16, no gradient asked for (GradMode off), x fp32 on the CPU
// (any layout: rows apart are read where they lie, others copied first), and
// weight and bias fp32 of its last dimension's width.
bool normToBf16Applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// LayerNorm over x's last dimension with this weight and bias, as
// torch::layer_norm computes it in fp32 (mean, then the biased variance of
// the centred row, each summed in fp32), each row rounded once to bf16 (to
// the nearest, ties to even) as it is written. Returns x's shape in bf16.
// Built for AVX-512, AVX2 with FMA and the baseline; `set` picks the build, as
// blockedAttention's does.
torch::Tensor normToBf16(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                         InstructionSet set = bestInstructionSet());

}  // namespace widelab
