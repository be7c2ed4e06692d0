// defines: batchedMatmul, batchedSoftmax, batchedAddMatmul: batched matrix
// products that stay on a fast path on the CPU; linearLayer: a Linear layer
// as one product
#pragma once

#include <torch/nn/modules/linear.h>
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

// bias + a b for a: [U, N, K], b: [U, K, M], bias broadcastable to [U, N, M];
// for one product (U = 1) and one bias row, an addmm.
torch::Tensor batchedAddMatmul(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b);

// `layer` on x [..., in] -> [..., out], as at::linear: one operator to
// autocast, which casts its weight and bias once per scope and folds a
// contiguous input's rows into one addmm with the bias. The C++ frontend's
// own forward makes an input of three or more dimensions a matmul of the
// weight's transpose, cast afresh each call, and an in-place addition of the
// bias, which under autocast adds an fp32 bias to the bf16 product in
// LibTorch's unvectorised kernel (on an H200, 0.11 ms per [8192, 3072] qkv).
// In inference in fp32 on the CPU, a contiguous input's rows go to
// inferenceProduct instead, the bias added in its tiles.
torch::Tensor linearLayer(const torch::nn::Linear& layer, const torch::Tensor& x);

// The same with a weight [out, in] and bias [out] given apart: rows of a
// layer's, as a classifier's last block takes its query's and its keys' and
// values' rows of one qkv projection.
torch::Tensor linearProduct(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace widelab
