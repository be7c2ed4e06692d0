// defines: EmbeddingImpl / Embedding: token embedding (optionally factorised
// V -> embedding_dim -> D) or patch embedding (images: a convolution with
// kernel = stride = patch_size), the optional CLS token, learned positions and, for text pairs, learned
// segments
#pragma once

#include "config/ModelConfig.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

namespace widelab {

struct EmbeddingImpl : torch::nn::Module {
    explicit EmbeddingImpl(const ModelConfig& config);

    // Tokens: ids [B, T] int64 -> [B, T', D]. Images: pixels [B, C, H, W] float ->
    // [B, T', D] with T = (H / P) * (W / P) patches in row-major order. T' = T + 1
    // when a CLS token is prepended (position 0). Shapes are the caller's to check.
    // `firstPosition`: the position of the first token (a decoding step's, past the prefix).
    // With segments, token t's is the number of separators before it (at most segments - 1); the CLS token has
    // none.
    torch::Tensor forward(const torch::Tensor& input, std::int64_t firstPosition = 0);

    torch::nn::Embedding token{nullptr};  // token input only
    torch::nn::Linear project{nullptr};   // factorised embedding only
    torch::nn::Conv2d patch{nullptr};     // image input only: weight [D, C, P, P], bias [D]
    torch::nn::Embedding position{nullptr};
    torch::Tensor cls;                    // [D], CLS pooling only
    torch::nn::Embedding segment{nullptr};  // text pairs only: [segments, D]
    std::int64_t separator = -1;            // the id that ends a segment (data/PairInput.h)
};
TORCH_MODULE(Embedding);

}  // namespace widelab
