// defines: blockedAttentionApplies, blockedAttention: softmax(q k^T * scale + bias) v
// on the CPU in one pass over blocks of keys, the [T, T] scores never written
// out; WideLab's own kernel for inference where LibTorch has no fused one
#pragma once

#include "runtime/TargetClones.h"

#include <torch/types.h>

namespace widelab {

// Whether blockedAttention takes these inputs: q, k and v all fp32 or all bf16
// on the CPU, nothing that needs a gradient, and an fp32 bias (if any) that
// broadcasts to [B, 1, Tq, Tk].
bool blockedAttentionApplies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& bias);

// q: [B, G, Tq, A], k and v: [B, G, Tk, A], bias: additive, broadcastable to
// [B, 1, Tq, Tk], or undefined. Returns [B, G, Tq, A] in q's type (laid out as
// [B, Tq, G, A], which the output projection reads without a copy). bf16
// inputs are widened as they are read and the arithmetic is fp32's, so their
// result is the fp32 kernel's on the widened inputs, rounded once to bf16. Each query row keeps
// a running maximum, sum and weighted sum of values over blocks of 16 keys (8
// in the AVX2 build, 4 in the baseline; the online softmax of Milakov and
// Gimelshein, 2018), so only a block's scores exist at once, in registers, as
// many query rows to a vector; the result equals the unblocked product's to rounding
// (tests/core/tst_blockedattention.cpp). The kernel is built for AVX-512,
// AVX2 with FMA, and the baseline; `set` picks the build (the best this CPU
// runs by default; one it cannot run throws std::invalid_argument), so that a
// test can run each on one machine.
torch::Tensor blockedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& bias, double scale,
                               InstructionSet set = bestInstructionSet());

}  // namespace widelab
