// defines: FeedForwardImpl / FeedForward, a stack of U independent two-layer FFNs
// (the n paths of a dense FFN sublayer, or the E experts of a mixture) run as batched products
#pragma once

#include "config/ModelConfig.h"

#include <torch/nn/module.h>

namespace widelab {

struct FeedForwardImpl : torch::nn::Module {
    FeedForwardImpl(std::int64_t units, std::int64_t dModel, std::int64_t hidden, Activation activation);

    // Every unit reads every row (paths): x [N, D] -> [U, N, D]; the U input
    // projections are one [D -> U*M] product.
    torch::Tensor forwardShared(const torch::Tensor& x);
    // Each unit reads its own rows (experts): x [U, C, D] -> [U, C, D].
    torch::Tensor forwardEach(const torch::Tensor& x);
    // Keeps units [first, first + count) and lets the others go (expert parallelism).
    void keepUnits(std::int64_t first, std::int64_t count);

    std::int64_t units, dModel, hidden;
    Activation activation;
    torch::Tensor wIn;   // [U, M, D]
    torch::Tensor bIn;   // [U, M]
    torch::Tensor wOut;  // [U, D, M]
    torch::Tensor bOut;  // [U, D]
};
TORCH_MODULE(FeedForward);

torch::Tensor activate(const torch::Tensor& x, Activation activation);

}  // namespace widelab
