// defines: batchedMatmul, batchedSoftmax, batchedAddMatmul: batched matrix
// products that stay on a fast path on the CPU
#pragma once

#include <torch/types.h>

namespace widelab {

// a: [..., N, K], b: [..., K, M] with equal leading dimensions -> [..., N, M].
// On the CPU in fp32 with one or two leading dimensions and many products
// (four a thread or more: attention's per head), WideLab's own kernel
// (BatchedProduct.h), with its gradients. Otherwise: LibTorch 1.13 built with
// a generic BLAS (Debian) runs CPU bmm over many small products 10-30x slower
// than the same products one torch::mm at a time (measured in
// docs/performance.md), so there, without autograd (inference), this loops
// over such a batch with mm; elsewhere, in training, and for a few large
// products (one BLAS call each), it is torch::matmul.
torch::Tensor batchedMatmul(const torch::Tensor& a, const torch::Tensor& b);

// softmax(a b + bias, -1) for a: [..., N, K], b: [..., K, M], bias undefined or
// broadcastable to [..., N, M] (it takes no gradient): attention's
// probabilities from its scaled queries and transposed keys. On the CPU in
// fp32 in one pass of WideLab's own kernel (BatchedProduct.h); elsewhere the
// product, the addition and LibTorch's softmax.
torch::Tensor batchedSoftmax(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias);

// bias + a b for a: [U, N, K], b: [U, K, M], bias broadcastable to [U, N, M].
torch::Tensor batchedAddMatmul(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b);

}  // namespace widelab
