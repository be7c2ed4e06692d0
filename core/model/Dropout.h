// defines: applyDropout: inverted dropout whose CPU mask costs a fraction of LibTorch's
#pragma once

#include <torch/types.h>

namespace widelab {

// Inverted dropout: each element is zeroed with probability p, the rest scaled
// so that the expectation is x; x itself when not training or p is 0.
//
// On the CPU, LibTorch 1.13's dropout draws a Bernoulli variable per element
// through its mt19937 generator: for the [B, H, T, T] attention probabilities
// it took half of a wide model's forward pass (docs/performance.md). Here one
// 64-bit seed is taken from LibTorch's default generator per call (so
// torch::manual_seed and checkpointed generator states still fix the mask), and
// the mask comes from a hash of each element's position, 16 bits per element,
// in fixed chunks, so it does not depend on the thread count. The drop
// probability is p rounded to a multiple of 2^-16 (below 2^-17 nothing is
// dropped), and the scale matches it exactly. The backward pass multiplies by
// the saved one-byte mask. Other devices use torch::dropout.
torch::Tensor applyDropout(const torch::Tensor& x, double p, bool training);

}  // namespace widelab
