// defines: AttentionOptions, AttentionImpl / Attention: multi-head self-attention in
// which all heads of all paths run as one batched product
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

namespace widelab {

struct AttentionOptions {
    std::int64_t dModel = 256;
    std::int64_t heads = 8;
    std::int64_t headDim = 32;
    std::int64_t paths = 1;   // n parallel attention sublayers, fused into n*heads heads
    double dropout = 0.0;     // on the attention probabilities
};

struct AttentionImpl : torch::nn::Module {
    explicit AttentionImpl(const AttentionOptions& options);

    // x: [B, T, D]; bias: additive fp32 mask broadcastable to [B, 1, T, T] (0 where
    // a query may look at a key, -1e9 elsewhere), or undefined.
    // Returns the per-path outputs [n, B, T, D]. When `weights` is given it
    // receives the attention probabilities [B, n*H, T, T] (before dropout).
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& bias, torch::Tensor* weights = nullptr);

    AttentionOptions options;
    torch::nn::Linear qkv{nullptr};  // [3*n*H*A, D], rows ordered (q|k|v, path, head, a)
    torch::Tensor outWeight;         // [n, D, H*A]
    torch::Tensor outBias;           // [n, D]
};
TORCH_MODULE(Attention);

}  // namespace widelab
