// defines: batchedMatmul, batchedAddMatmul: batched matrix products that stay
// on the BLAS's fast path under LibTorch 1.13's CPU build
#pragma once

#include <torch/types.h>

namespace widelab {

// a: [..., N, K], b: [..., K, M] with equal leading dimensions -> [..., N, M].
// LibTorch 1.13 built with a generic BLAS (Debian) runs CPU bmm 10-30x slower
// than the same products one torch::mm at a time (measured in
// docs/performance.md); there, without autograd (inference), this loops over
// the batch with mm. Elsewhere, and in training, it is torch::matmul.
torch::Tensor batchedMatmul(const torch::Tensor& a, const torch::Tensor& b);

// bias + a b for a: [U, N, K], b: [U, K, M], bias broadcastable to [U, N, M].
torch::Tensor batchedAddMatmul(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b);

}  // namespace widelab
