// defines: amxRuns, amxAttentionApplies, amxAttention: bf16 softmax(q k^T *
// scale + bias) v on the CPU's AMX tiles, for inference under the CPU's
// autocast, where the blocked kernel's fp32 arithmetic would take most of a
// step whose products AMX runs several times faster than fp32's
#pragma once

#include <torch/types.h>

namespace widelab {

// Whether this CPU multiplies bf16 tiles (AMX-TILE and AMX-BF16, with
// AVX512-BW and AVX512-BF16, which every CPU with AMX has) and the
// operating system lets this process use them (Linux asks a process to request
// the tiles' state, arch_prctl ARCH_REQ_XCOMP_PERM). Asked once per process.
bool amxRuns();

// Whether amxAttention takes these inputs: amxRuns(); q, k and v bf16 on the
// CPU, laid out as blockedAttention takes them, nothing that needs a gradient;
// a head dimension that is a whole number of 32 (a tile's depth) up to 256;
// between 16 and 8192 keys; an fp32 bias (if any) that broadcasts to
// [B, 1, Tq, Tk].
bool amxAttentionApplies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                         const torch::Tensor& bias);

// q: [B, G, Tq, A], k and v: [B, G, Tk, A], bf16; bias: fp32, additive,
// broadcastable to [B, 1, Tq, Tk], or undefined. Returns [B, G, Tq, A] in bf16,
// laid out as [B, Tq, G, A] (blockedAttention's layout). For each tile of 16
// query rows: the scores of every key by tile products (fp32 sums of bf16
// products), a softmax over each whole row in fp32 (its powers of 2 to 3.5e-6
// of their value), the weights rounded to bf16, and their product with the
// values by tile products; the output divided by the fp32 sum of the weights
// and rounded once to bf16. The weights' rounding is where it departs most
// from blockedAttention's arithmetic, as PyTorch's bf16 attention on the CPU
// departs from its fp32 (tests/core/tst_amxattention.cpp bounds it against
// the formula in double precision).
torch::Tensor amxAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& bias, double scale);

}  // namespace widelab
