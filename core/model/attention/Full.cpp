// defines: fullMechanism: softmax(q k^T / sqrt(A) + mask) v, the Transformer's own
// attention (Vaswani et al., 2017), with LibTorch 2.x's fused kernel, WideLab's
// own blocked kernel for fp32 and bf16 inference on the CPU (bf16 on AMX's
// tiles where the CPU has them), and a head-blocked inference
// path for long sequences otherwise
#include "AmxAttention.h"
#include "BlockedAttention.h"
#include "Mechanisms.h"

#include "model/BatchedMatmul.h"
#include "model/Dropout.h"
#include "runtime/FastPaths.h"

#include <torch/version.h>

#include <algorithm>
#include <cmath>

namespace widelab {
namespace {

// Without autograd (inference), when all heads' [T, T] scores would exceed
// this many elements (1 MiB in fp32, a core's L2 cache here), heads are
// processed a block at a time so that only one block's scores exist at once and
// stay in cache. At 16 MiB (the bound until 2026-11-24) a single 48-head layer
// at batch 1 and 128 tokens (3 MiB of scores) took longer in attention than six
// 8-head layers (6.2 against 3.7 ms); at 1 MiB it takes 3.2 ms (widelab-cli bench
// transformer-1x48 --mode infer --batch 1 --seq 128; batch 16 unchanged).
constexpr std::int64_t kScoreChunkElements = std::int64_t{1} << 18;

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

class FullImpl : public MechanismImpl {
public:
    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        const torch::Tensor &q = in.q, &k = in.k, &v = in.v;
        const std::int64_t B = q.size(0), G = q.size(1), T = q.size(2), A = q.size(3);
        const double scale = 1.0 / std::sqrt(static_cast<double>(A));
        const torch::Tensor fp32Bias = maskIn(in.bias, torch::kFloat);  // WideLab's kernels take it in fp32
        if (!map && in.dropout == 0.0 && fastPathEnabled(FastPath::AmxAttention)
            && amxAttentionApplies(q, k, v, fp32Bias))
            return amxAttention(q, k, v, fp32Bias, scale);
        if (!map && in.dropout == 0.0 && fastPathEnabled(FastPath::BlockedAttention)
            && blockedAttentionApplies(q, k, v, fp32Bias))
            return blockedAttention(q, k, v, fp32Bias, scale);
#if TORCH_VERSION_MAJOR >= 2
        // LibTorch 2.x: a fused kernel that never stores the [T, T] probabilities,
        // after WideLab's own on the CPU in inference. Built against 2.11, one
        // layer of 16 x 8 heads x 257 tokens (head dimension 32, two threads)
        // took 9.2-9.3 ms with the blocked kernel against 10.7-11.4 with this
        // one in fp32, 4.2-5.5 against 8.7-8.9 with the AMX kernel in bf16, and
        // the blocked kernel in bf16 was on par (docs/performance.md).
        if (!map && fusedAttentionRuns(q.is_cpu(), in.dropout)) {
            // A language model without padding passes no mask but the kernel's
            // own causal rule, which the flash kernels (CUDA's fastest) take and
            // a mask rules out.
            if (in.causal && !in.keyValid.defined())
                return at::scaled_dot_product_attention(q, k, v, c10::nullopt, in.dropout, /*is_causal=*/true);
            return in.bias.defined()
                       ? at::scaled_dot_product_attention(q, k, v, maskIn(in.bias, q.scalar_type()), in.dropout)
                       : at::scaled_dot_product_attention(q, k, v, c10::nullopt, in.dropout);
        }
#endif
        if (!map && in.dropout == 0.0 && !torch::GradMode::is_enabled() && B * G * T * T > kScoreChunkElements)
            return attentionInHeadBlocks(q, k, v, in.bias, scale, kScoreChunkElements);
        // Scaled in q, [T, A], not in the scores, [T, T].
        torch::Tensor probs = batchedSoftmax(q * scale, k.transpose(-2, -1), maskIn(in.bias, q.scalar_type()));
        if (map)
            *map = probs;
        probs = applyDropout(probs, in.dropout, in.dropout > 0.0);
        return batchedMatmul(probs, v);
    }
};

}  // namespace

torch::Tensor maskIn(const torch::Tensor& bias, torch::ScalarType dtype)
{
    if (!bias.defined() || bias.scalar_type() == dtype)
        return bias;
    return (dtype == torch::kHalf ? bias.clamp_min(-3.0e4) : bias).to(dtype);
}

const MechanismSpec& fullMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "full";
        s.title = "full softmax attention (Vaswani et al., 2017)";
        s.map = MapKind::Exact;
        s.causal = true;
        s.linearCost = false;
        s.paddingFree = true;  // padding keys are masked out of the softmax
        s.queriesApart = true;  // a row of softmax(q k^T) v is its query's alone
        s.make = [](const MechanismShape&, const ModelConfig&) { return std::make_shared<FullImpl>(); };
        s.parameters = [](const MechanismShape&, const ModelConfig&) { return std::int64_t{0}; };
        // q k^T and probabilities x v: 2 * 2 * T * A multiply-adds per token and head.
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig&, std::int64_t T) {
            return 2.0 * 2.0 * static_cast<double>(T) * static_cast<double>(shape.heads * shape.headDim);
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
