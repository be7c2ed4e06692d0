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

// activate(x weight^T + bias): x [N, D], weight [M, D], bias [M]; or a batch
// of U, x [U, N, D], weight [U, M, D], bias [U, M]. For inference on the CPU
// the product is made without its bias and biasActivation (BiasActivation.h)
// adds it with the activation in one pass; otherwise an addmm (baddbmm) and
// the activation.
torch::Tensor activatedProduct(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                               Activation activation);

}  // namespace widelab
