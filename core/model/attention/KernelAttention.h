// defines: kernelAttention, the linear-cost mixing shared by the kernel mechanisms
// (linear, performer): attention whose weights factor as phi(q_i).phi(k_j);
// kernelChunk, the block length of its causal form; kernelFlopsPerToken
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace widelab {

// The block length of the causal form: within a block the [C, C] weights are
// formed, across blocks a running sum carries the keys seen so far.
inline constexpr std::int64_t kKernelChunk = 64;

struct KernelDenominator {
    double eps = 0.0;    // added to every denominator (linear attention's 1e-6)
    double floor = 0.0;  // and then the denominator is at least this (guards a row whose features all underflowed)
};

// B = batch, G = heads, T = sequence, F = features, A = head_dim.
//   phiQ [B, G, T, F], phiK [B, G, T, F] (non-negative; rows of padded keys already zero), v [B, G, T, A]
// Returns context_i = sum_j w_ij v_j / (sum_j w_ij + eps), w_ij = phiQ_i.phiK_j over
// every key (j <= i when causal), without forming [T, T]: non-causal by
// phiQ (phiK^T v), causal by prefix sums over blocks of kKernelChunk keys.
// When `map` is given it receives the implied [B, G, T, T] weights
// w_ij / denominator_i, so that context = map v (inspection of probes only).
torch::Tensor kernelAttention(const torch::Tensor& phiQ, const torch::Tensor& phiK, const torch::Tensor& v, bool causal,
                              KernelDenominator denominator, torch::Tensor* map);

// Products per token (x 2 for FLOPs) of kernelAttention for one head with F
// features and head_dim A at sequence T.
double kernelMultiplyAddsPerToken(std::int64_t features, std::int64_t headDim, bool causal, std::int64_t T);

}  // namespace widelab
