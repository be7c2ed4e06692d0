// defines: CrossAttentionImpl / CrossAttention: an encoder-decoder's attention from
// the decoder's tokens (queries) to the encoder's output (keys and values), every
// head of every path, with the full mechanism's softmax
#pragma once

#include "Attention.h"

namespace widelab {

struct CrossAttentionImpl : torch::nn::Module {
    CrossAttentionImpl(const AttentionOptions& options, const ModelConfig& config);
    explicit CrossAttentionImpl(const ModelConfig& config)
        : CrossAttentionImpl(AttentionOptions::fromConfig(config), config)
    {
    }

    // The encoder's output projected once: [2, B, n*H, S, A] keys then values.
    // A decoding loop computes it once per source and passes it to every step.
    torch::Tensor keysValues(const torch::Tensor& memory);

    // x: decoder tokens [B, T, D]; kv: keysValues(memory); memoryBias: additive fp32
    // mask broadcastable to [B, 1, 1, S] (-1e9 at padding keys) or undefined;
    // memoryValid [B, S] bool or undefined. Returns per-path outputs [n, B, T, D];
    // `weights` receives the maps [B, n*H, T, S] when given.
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& kv, const torch::Tensor& memoryBias,
                          const torch::Tensor& memoryValid = {}, torch::Tensor* weights = nullptr);

    AttentionOptions options;
    torch::nn::Linear q{nullptr};   // [n*H*A, D], rows ordered (path, head, a)
    torch::nn::Linear kv{nullptr};  // [2*n*H*A, D], rows ordered (k|v, path, head, a)
    torch::Tensor outWeight;        // [n, D, H*A]
    torch::Tensor outBias;          // [n, D]
    std::shared_ptr<MechanismImpl> mixer;  // "full"
};
TORCH_MODULE(CrossAttention);

}  // namespace widelab
