// defines: batchedProductApplies, batchedProduct, batchedSoftmaxProductApplies,
// batchedSoftmaxProduct: a batch of small fp32 matrix products on the CPU, each
// in one thread, for the per-head products of attention (a [T, A] by [A, T]
// product 128 times a layer), where a BLAS call per product spends more time
// starting than multiplying; and attention's softmax taken as each row of its
// scores is made
#pragma once

#include "runtime/TargetClones.h"

#include <torch/types.h>

namespace widelab {

// Whether batchedProduct takes a and b: fp32 on the CPU, both of 3 or 4
// dimensions with equal leading sizes (no broadcasting), inner sizes that
// agree, and nothing empty.
bool batchedProductApplies(const torch::Tensor& a, const torch::Tensor& b);

// Whether a has enough products for batchedProduct to give each thread four or
// more, each task a whole product. With fewer it cuts each product's rows into
// tasks, copying b for each; such a product is a large one (a projection, the
// layers of a few experts), and a BLAS, which blocks it for the caches, took
// those shapes 5-15 % faster than the tasks of rows (docs/performance.md).
bool batchedProductTakesWholeProducts(const torch::Tensor& a);

// a: [..., N, K], b: [..., K, M], any strides -> [..., N, M], contiguous: each
// product by a register tile of 6 rows by two vectors of columns over the
// whole of K, from copies of its rows of a and of b laid out in the order the
// tile reads them. The same result as torch::matmul to fp32 rounding
// (tests/core/tst_batchedproduct.cpp). No autograd: batchedMatmul
// (BatchedMatmul.h) differentiates it. Built for AVX-512, AVX2 with FMA and
// the baseline; `set` picks the build as blockedAttention's does.
torch::Tensor batchedProduct(const torch::Tensor& a, const torch::Tensor& b,
                             InstructionSet set = bestInstructionSet());

// Whether batchedSoftmaxProduct takes these: what batchedProduct takes, and a
// bias (if any) of fp32 on the CPU that broadcasts to the product's shape.
bool batchedSoftmaxProductApplies(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias);

// softmax(a b + bias) over the last dimension, bias undefined or broadcastable
// to [..., N, M]: each tile's rows take their bias and softmax while they are
// still in cache, so the product's [N, M] is written once, as probabilities,
// not written, read and written again by an addition and a softmax. Equals
// LibTorch's to fp32 rounding (e^x to 2 ulp); no autograd (batchedSoftmax in
// BatchedMatmul.h differentiates it).
torch::Tensor batchedSoftmaxProduct(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                                    InstructionSet set = bestInstructionSet());

}  // namespace widelab
