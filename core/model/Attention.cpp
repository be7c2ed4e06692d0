#include "Attention.h"

#include "Init.h"

#include <torch/nn/functional/dropout.h>
#include <torch/nn/init.h>

#include <torch/version.h>

#include <cmath>

namespace widelab {
namespace {

// The additive mask in the dtype of the scores. fp16 cannot hold the mask's
// -1e9, so the floor is lifted to a value that still zeroes a masked weight.
torch::Tensor maskIn(const torch::Tensor& bias, torch::ScalarType dtype)
{
    if (!bias.defined() || bias.scalar_type() == dtype)
        return bias;
    return (dtype == torch::kHalf ? bias.clamp_min(-3.0e4) : bias).to(dtype);
}

}  // namespace

AttentionImpl::AttentionImpl(const AttentionOptions& options_) : options(options_)
{
    const std::int64_t n = options.paths;
    const std::int64_t width = options.heads * options.headDim;
    qkv = register_module("qkv", torch::nn::Linear(options.dModel, 3 * n * width));
    outWeight = register_parameter("out_weight", torch::empty({n, options.dModel, width}));
    outBias = register_parameter("out_bias", torch::zeros({n, options.dModel}));

    torch::NoGradGuard noGrad;
    // Each (q|k|v, path) block is its own [A*H, D] projection: Xavier per block.
    xavierUniformStacked(qkv->weight.view({3 * n, width, options.dModel}));
    qkv->bias.zero_();
    xavierUniformStacked(outWeight);
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& bias, torch::Tensor* weights)
{
    // B = batch, T = sequence, D = model width, n = paths, H = heads, A = head_dim
    const std::int64_t B = x.size(0), T = x.size(1), D = x.size(2);
    const std::int64_t n = options.paths, H = options.heads, A = options.headDim;

    // [B, T, 3, n*H, A] -> [3, B, n*H, T, A]
    const torch::Tensor qkvAll = qkv(x).view({B, T, 3, n * H, A}).permute({2, 0, 3, 1, 4});
    const torch::Tensor q = qkvAll[0], k = qkvAll[1], v = qkvAll[2];

    const double dropout = is_training() ? options.dropout : 0.0;
    torch::Tensor context;  // [B, n*H, T, A]
#if TORCH_VERSION_MAJOR >= 2
    // LibTorch 2.x: a fused kernel that never stores the [T, T] probabilities.
    if (!weights) {
        context = bias.defined() ? at::scaled_dot_product_attention(q, k, v, maskIn(bias, q.scalar_type()), dropout)
                                 : at::scaled_dot_product_attention(q, k, v, c10::nullopt, dropout);
    }
#endif
    if (!context.defined()) {
        torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(A)));
        if (bias.defined())
            scores.add_(maskIn(bias, scores.scalar_type()));
        torch::Tensor probs = torch::softmax(scores, -1);  // [B, n*H, T, T]
        if (weights)
            *weights = probs;
        if (dropout > 0.0)
            probs = torch::dropout(probs, dropout, true);
        context = torch::matmul(probs, v);
    }

    // Per path: its H heads side by side, [n, B*T, H*A], through its own output projection.
    const torch::Tensor perPath =
        context.view({B, n, H, T, A}).permute({1, 0, 3, 2, 4}).reshape({n, B * T, H * A});
    const torch::Tensor out = torch::baddbmm(outBias.unsqueeze(1), perPath, outWeight.transpose(1, 2));
    return out.view({n, B, T, D});
}

}  // namespace widelab
