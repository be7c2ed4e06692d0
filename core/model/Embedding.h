// defines: EmbeddingImpl / Embedding: token embedding (optionally factorised
// V -> embedding_dim -> D), the optional CLS token and learned positions
#pragma once

#include "config/ModelConfig.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

namespace widelab {

struct EmbeddingImpl : torch::nn::Module {
    explicit EmbeddingImpl(const ModelConfig& config);

    // ids: [B, T] -> [B, T', D], T' = T + 1 when a CLS token is prepended.
    torch::Tensor forward(const torch::Tensor& ids);

    torch::nn::Embedding token{nullptr};
    torch::nn::Linear project{nullptr};  // factorised embedding only
    torch::nn::Embedding position{nullptr};
    torch::Tensor cls;                   // [D], CLS pooling only
};
TORCH_MODULE(Embedding);

}  // namespace widelab
