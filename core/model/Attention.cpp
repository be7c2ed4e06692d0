#include "Attention.h"

#include "BatchedMatmul.h"
#include "Dropout.h"
#include "Init.h"
#include "runtime/FastPaths.h"

#include <torch/nn/init.h>

#include <torch/version.h>

#include <algorithm>
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

// Without autograd (inference), when all heads' [T, T] scores would exceed
// this many elements (16 MB in fp32), heads are processed a block at a time so
// that only one block's scores exist at once and stay in cache.
constexpr std::int64_t kScoreChunkElements = std::int64_t{1} << 22;

// softmax(q k^T * scale + bias) v for a block of heads at a time, so that at
// most `chunkElements` scores exist at once; the same result as the full
// product, for inference on long sequences. q, k, v: [B, G, T, A]; bias:
// broadcastable to [B, 1, T, T] or undefined. Returns [B, G, T, A].
torch::Tensor attentionInHeadBlocks(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& bias, double scale, std::int64_t chunkElements)
{
    const std::int64_t B = q.size(0), G = q.size(1), T = q.size(2);
    const std::int64_t block = std::max<std::int64_t>(1, chunkElements / (T * T));
    torch::Tensor context = torch::empty(q.sizes(), q.options());
    const torch::Tensor qScaled = q * scale;  // [T, A] scaled, not each block's [T, T] scores
    const torch::Tensor kT = k.transpose(-2, -1);
    for (std::int64_t b = 0; b < B; ++b) {
        const torch::Tensor mask = bias.defined() ? maskIn(bias, q.scalar_type())[bias.size(0) == 1 ? 0 : b] : bias;
        for (std::int64_t g = 0; g < G; g += block) {
            const std::int64_t heads = std::min(block, G - g);
            torch::Tensor scores = batchedMatmul(qScaled[b].narrow(0, g, heads), kT[b].narrow(0, g, heads));
            if (mask.defined())
                scores.add_(mask);  // [1, T, T] or [1, 1, T]
            context[b].narrow(0, g, heads).copy_(batchedMatmul(torch::softmax(scores, -1), v[b].narrow(0, g, heads)));
        }
    }
    return context;
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
    if (!weights && fastPathEnabled(FastPath::FusedAttention)) {
        context = bias.defined() ? at::scaled_dot_product_attention(q, k, v, maskIn(bias, q.scalar_type()), dropout)
                                 : at::scaled_dot_product_attention(q, k, v, c10::nullopt, dropout);
    }
#endif
    const double scale = 1.0 / std::sqrt(static_cast<double>(A));
    const bool chunked = !weights && dropout == 0.0 && !torch::GradMode::is_enabled()
                         && B * n * H * T * T > kScoreChunkElements;
    if (!context.defined() && chunked)
        context = attentionInHeadBlocks(q, k, v, bias, scale, kScoreChunkElements);
    if (!context.defined()) {
        // Scaled in q, [T, A], not in the scores, [T, T].
        torch::Tensor scores = batchedMatmul(q * scale, k.transpose(-2, -1));
        if (bias.defined())
            scores.add_(maskIn(bias, scores.scalar_type()));
        torch::Tensor probs = torch::softmax(scores, -1);  // [B, n*H, T, T]
        if (weights)
            *weights = probs;
        probs = applyDropout(probs, dropout, dropout > 0.0);
        context = batchedMatmul(probs, v);
    }

    // Per path: its H heads side by side, [n, B*T, H*A], through its own output projection.
    const torch::Tensor perPath =
        context.view({B, n, H, T, A}).permute({1, 0, 3, 2, 4}).reshape({n, B * T, H * A});
    const torch::Tensor out = batchedAddMatmul(outBias.unsqueeze(1), perPath, outWeight.transpose(1, 2));
    return out.view({n, B, T, D});
}

}  // namespace widelab
