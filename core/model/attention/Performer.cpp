// defines: performerMechanism: FAVOR+ attention (Choromanski et al., 2020): the
// softmax kernel estimated with m positive orthogonal random features, linear in
// the sequence, causal by prefix sums; the features redrawn every
// model.performer_redraw_every training steps
#include "KernelAttention.h"
#include "Mechanisms.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace widelab {
namespace {

// [m, A] orthogonal random features: blocks of A orthonormal rows (the Q of a
// Gaussian matrix's QR), the last block cut to what remains, each row rescaled
// to the length of an independent Gaussian vector in A dimensions, so that every
// row is marginally N(0, I_A) and rows within a block are exactly orthogonal.
// From LibTorch's default CPU generator (seeded by train.seed and checkpointed).
torch::Tensor drawOrthogonalFeatures(std::int64_t m, std::int64_t A)
{
    std::vector<torch::Tensor> blocks;
    for (std::int64_t row = 0; row < m; row += A) {
        const torch::Tensor gaussian = torch::randn({A, A}, torch::kFloat);
        const auto [q, r] = torch::linalg_qr(gaussian);  // q [A, A], orthonormal columns
        // Columns times the signs of r's diagonal: a uniformly random rotation. Without this the
        // QR's sign convention biases every block (its first row always leans one way), and so
        // the softmax estimate (measured in tst_attention_kernel).
        const torch::Tensor rotation = q * torch::sign(r.diagonal()).unsqueeze(0);
        blocks.push_back(rotation.transpose(0, 1).narrow(0, 0, std::min(A, m - row)));
    }
    const torch::Tensor lengths = torch::randn({m, A}, torch::kFloat).norm(2, 1, true);  // [m, 1]
    return torch::cat(blocks, 0) * lengths;
}

struct PerformerOptions {
    std::int64_t features = 256;    // m
    std::int64_t redrawEvery = 1;   // 0: never
};

class PerformerImpl : public MechanismImpl {
public:
    PerformerImpl(const MechanismShape& shape, PerformerOptions options_) : options(options_)
    {
        features = register_buffer("features", drawOrthogonalFeatures(options.features, shape.headDim));
    }

    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        // q, k, v: [B, G, T, A]; w: [m, A]
        const std::int64_t B = in.q.size(0), T = in.q.size(2), A = in.q.size(3);
        const torch::Tensor w = features.to(in.q.scalar_type());
        const double dataScale = std::pow(static_cast<double>(A), -0.25);  // q'.k' = q.k / sqrt(A)
        // h = w_i.x' - |x'|^2 / 2: [B, G, T, m]; phi(x) = exp(h) / sqrt(m).
        auto exponents = [&](const torch::Tensor& x) {
            const torch::Tensor scaled = x * dataScale;
            return torch::matmul(scaled, w.transpose(0, 1)) - scaled.pow(2).sum(-1, true) * 0.5;
        };
        const double featureScale = 1.0 / std::sqrt(static_cast<double>(options.features));
        // A constant shift per query row and per (sequence, head) for the keys cancels between the
        // weights and their sum; it keeps exp() in range. Queries: their own largest exponent.
        const torch::Tensor hq = exponents(in.q);
        const torch::Tensor phiQ = torch::exp(hq - std::get<0>(hq.detach().max(-1, true))) * featureScale;
        torch::Tensor hk = exponents(in.k);
        if (in.keyValid.defined())  // padded keys weigh nothing: exp(-inf) = 0
            hk = hk.masked_fill(in.keyValid.logical_not().view({B, 1, T, 1}), -std::numeric_limits<double>::infinity());
        // Keys: the largest exponent of the sequence's real keys, which a causal model may not
        // use (later keys would decide an earlier token's rounding and underflow); there the
        // data-free bound h <= |w_i|^2 / 2 (complete the square), the same for every key.
        const torch::Tensor keyShift =
            in.causal ? (w.pow(2).sum(-1).max() * 0.5).view({1, 1, 1, 1})
                      : hk.detach().amax({2, 3}, true).clamp_min(-1e30);  // [B, G, 1, 1]; finite when no key is real
        const torch::Tensor phiK = torch::exp(hk - keyShift) * featureScale;
        KernelDenominator denominator;
        denominator.floor = 1e-30;  // only a row whose every weight underflowed; its context is then 0
        // No probabilities are formed, so there is no attention dropout (as in LRA's FAVOR+).
        return kernelAttention(phiQ, phiK, in.v, in.causal, denominator, map);
    }

    void beginStep(std::int64_t step) override
    {
        // The features of step s were drawn at the last multiple of redrawEvery <= s (at
        // construction before the first): a resumed run redraws at the same steps.
        if (options.redrawEvery <= 0 || step <= 0 || step % options.redrawEvery != 0)
            return;
        torch::NoGradGuard noGrad;
        features.copy_(drawOrthogonalFeatures(features.size(0), features.size(1)).to(features.device()));
    }

    PerformerOptions options;
    torch::Tensor features;  // [m, A] buffer: checkpointed with the model, not trained
};

PerformerOptions performerOptions(const ModelConfig& config)
{
    PerformerOptions o;
    o.features = config.attentionInteger("performer_features");
    o.redrawEvery = config.attentionInteger("performer_redraw_every");
    return o;
}

}  // namespace

const MechanismSpec& performerMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "performer";
        s.title = "Performer (Choromanski et al., 2020): FAVOR+ positive orthogonal random features";
        s.map = MapKind::Implied;
        s.causal = true;
        s.linearCost = true;
        s.keys = {
            integerKey("model.performer_features", 1, 65536, 256,
                       "random features m of FAVOR+ (default 256: the Long Range Arena's FAVOR+ nb_features)"),
            integerKey("model.performer_redraw_every", 0, 1000000000, 1,
                       "redraw the random features every this many training steps, never in evaluation; 0: never "
                       "(default 1: the Long Range Arena's FAVOR+ draws new features at every call)"),
        };
        s.make = [](const MechanismShape& shape, const ModelConfig& config) {
            return std::make_shared<PerformerImpl>(shape, performerOptions(config));
        };
        s.parameters = [](const MechanismShape&, const ModelConfig&) { return std::int64_t{0}; };
        // The features of q and k (2 m A + 2 A products per token) and the kernel mixing.
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig& config, std::int64_t T) {
            const std::int64_t m = config.attentionInteger("performer_features"), A = shape.headDim;
            const double features = 2.0 * static_cast<double>(m * A + A);
            return 2.0 * static_cast<double>(shape.heads)
                   * (features + kernelMultiplyAddsPerToken(m, A, shape.causal, T));
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
