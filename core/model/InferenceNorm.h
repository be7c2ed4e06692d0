// defines: residualNormApplies, residualNorm, NormedResidual, normToBf16Applies,
// normToBf16: the LayerNorms of inference on the CPU, each row in one pass of
// WideLab's own: in fp32 a sublayer's output added to the residual stream in
// the pass that norms the sum for the next sublayer (LibTorch adds in one
// operator, writing the sum, and norms in another, reading it back); under the
// CPU's autocast a norm that feeds bf16 products written in bf16 as it is
// computed (LibTorch writes fp32, and autocast reads it again to cast it)
#pragma once

#include "runtime/TargetClones.h"

#include <torch/types.h>

namespace widelab {

// The residual stream after a sublayer, and its norm for the next one.
struct NormedResidual {
    torch::Tensor sum;     // h + addend, contiguous; h itself (as it lies) when no addend was given
    torch::Tensor normed;  // LayerNorm(sum), contiguous, fp32
};

// Whether residualNorm takes h, addend and this LayerNorm's weight and bias:
// the fast path on, no gradient asked for (GradMode off), the CPU's autocast
// off, h fp32 on the CPU, addend undefined or fp32 on the CPU of h's shape, and
// weight and bias fp32 of h's last dimension's width. Any layout: rows apart
// are read where they lie, others copied first.
bool residualNormApplies(const torch::Tensor& h, const torch::Tensor& addend, const torch::Tensor& weight,
                         const torch::Tensor& bias);

// sum = h + addend (each element one fp32 addition, as h + addend) and
// LayerNorm(sum) over the last dimension with this weight and bias, as
// torch::layer_norm computes it in fp32 (the mean, then the biased variance of
// the centred row, each summed in fp32). Without an addend, sum is h and
// normed its LayerNorm. Built for AVX-512, AVX2 with FMA and the baseline;
// `set` picks the build, as blockedAttention's does.
NormedResidual residualNorm(const torch::Tensor& h, const torch::Tensor& addend, const torch::Tensor& weight,
                            const torch::Tensor& bias, double eps, InstructionSet set = bestInstructionSet());

// Whether normToBf16 takes x for a LayerNorm of this weight and bias: the fast
// path on, the CPU's autocast on to bf16, no gradient asked for, x fp32 on the
// CPU (any layout), and weight and bias fp32 of its last dimension's width.
bool normToBf16Applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// LayerNorm over x's last dimension as residualNorm computes it, each element
// rounded once to bf16 (to the nearest, ties to even) as it is written.
// Returns x's shape in bf16.
torch::Tensor normToBf16(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                         InstructionSet set = bestInstructionSet());

}  // namespace widelab
