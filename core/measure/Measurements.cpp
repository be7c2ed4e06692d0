#include "Measurements.h"

#include "model/PathCombiner.h"

#include <cmath>

namespace widelab {

std::vector<float> toFloats(const torch::Tensor& tensor)
{
    const torch::Tensor flat = tensor.detach().to(torch::kCPU, torch::kFloat32).contiguous().view({-1});
    return {flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel()};
}

std::vector<RoutingStats> routingStats(const ForwardTrace& trace, std::int64_t experts)
{
    std::vector<RoutingStats> all;
    torch::Tensor previousTop1;  // [S] at the previous routing block
    for (std::size_t block = 0; block < trace.blocks.size(); ++block) {
        const BlockTrace& b = trace.blocks[block];
        if (!b.routed || !b.expert.defined())
            continue;
        RoutingStats stats;
        stats.block = static_cast<std::int64_t>(block);
        const torch::Tensor expert = b.expert.to(torch::kCPU);  // [S, K]
        const torch::Tensor kept = b.kept.to(torch::kCPU);
        const std::int64_t S = expert.size(0), K = expert.size(1);
        const torch::Tensor counts = torch::zeros({experts}, torch::kLong).index_add_(
            0, expert.masked_select(kept), torch::ones({kept.sum().item<std::int64_t>()}, torch::kLong));
        const double fair = S > 0 ? static_cast<double>(S * K) / static_cast<double>(experts) : 0.0;
        for (std::int64_t e = 0; e < experts; ++e) {
            const std::int64_t n = counts[e].item<std::int64_t>();
            stats.tokensPerExpert.push_back(n);
            stats.loadVsFair.push_back(fair > 0.0 ? static_cast<double>(n) / fair : 0.0);
            stats.unusedExperts += n == 0 ? 1 : 0;
        }
        for (std::int64_t c = 0; c < K; ++c) {
            const double dropped = S > 0 ? 100.0 * (1.0 - kept.select(1, c).to(torch::kFloat64).mean().item<double>()) : 0.0;
            stats.droppedPercentPerChoice.push_back(dropped);
        }
        if (b.probs.defined() && S > 0) {
            const torch::Tensor p = b.probs.to(torch::kCPU, torch::kFloat64);
            stats.routerEntropy = -(p * torch::log(p.clamp_min(1e-30))).sum(-1).mean().item<double>();
            // What the router asks for on average: balanced when every expert gets 1/E.
            const torch::Tensor mean = p.mean(0);
            const double E = static_cast<double>(experts);
            stats.maxViolation = E * mean.max().item<double>() - 1.0;
            stats.effectiveExperts = std::exp(-(mean * torch::log(mean.clamp_min(1e-300))).sum().item<double>()) / E;
        }
        if (b.logits.defined() && S > 0)
            stats.zLoss = torch::logsumexp(b.logits.to(torch::kCPU, torch::kFloat64), -1).square().mean().item<double>();
        stats.deadFraction = static_cast<double>(stats.unusedExperts) / static_cast<double>(experts);
        const torch::Tensor top1 = expert.select(1, 0);
        if (previousTop1.defined() && previousTop1.numel() == top1.numel() && S > 0)
            stats.consistency = top1.eq(previousTop1).to(torch::kFloat64).mean().item<double>();
        previousTop1 = top1;
        all.push_back(std::move(stats));
    }
    return all;
}

namespace {

// Sum of |a - b| over all ordered pairs of `values` (1-D, double): with the
// values sorted, element k is larger than k others and smaller than n-1-k.
double pairwiseAbsoluteSum(const torch::Tensor& values)
{
    const torch::Tensor sorted = std::get<0>(values.sort());
    const auto n = sorted.numel();
    const torch::Tensor weight = 2.0 * torch::arange(n, sorted.options()) - static_cast<double>(n - 1);
    return 2.0 * (sorted * weight).sum().item<double>();
}

}  // namespace

LayerNormDivergence layerNormDivergence(const torch::Tensor& gamma, const torch::Tensor& beta)
{
    // g: [N, M] in double. Both readings are documented in Snapshot.h. Across
    // blocks, all pairs = (all pairs of every value) - (pairs within each block),
    // O(N M log(N M)) instead of O(N^2 M^2).
    auto measure = [](const torch::Tensor& values, double& allPairs, double& elementwise) {
        const torch::Tensor g = values.detach().to(torch::kCPU, torch::kFloat64);
        const std::int64_t N = g.size(0), M = g.size(1);
        if (N < 2)
            return;
        double across = pairwiseAbsoluteSum(g.reshape({-1}));
        for (std::int64_t j = 0; j < N; ++j)
            across -= pairwiseAbsoluteSum(g[j]);
        // Same element, other block: |g_jm - g_nm| over ordered pairs (j, n), j != n.
        const double same = (g.unsqueeze(0) - g.unsqueeze(1)).abs().sum().item<double>();
        const double m = static_cast<double>(M), n = static_cast<double>(N);
        allPairs = across / (m * m * n * n);
        elementwise = same / (m * n * n);
    };
    LayerNormDivergence d;
    measure(gamma, d.gammaAllPairs, d.gammaElementwise);
    measure(beta, d.betaAllPairs, d.betaElementwise);
    return d;
}

std::vector<PathWeights> pathWeights(const WideTransformerImpl& model)
{
    using Sublayer = BlockStack::Sublayer;
    std::vector<PathWeights> all;
    // The decoder's blocks after the encoder's, numbered on from them.
    auto measure = [&](const BlockStack& stack, std::int64_t firstBlock) {
        const ModelConfig& c = stack.side();
        if (!c.isMultiPath())
            return;
        for (std::int64_t block = 0; block < c.layers; ++block) {
            for (const Sublayer which : {Sublayer::Attention, Sublayer::Cross, Sublayer::FeedForward}) {
                const torch::Tensor measured = stack.pathWeights(block, which);
                if (!measured.defined())
                    continue;
                const std::vector<float> weights = toFloats(measured);
                PathWeights p;
                p.block = firstBlock + block;
                p.sublayer = which == Sublayer::Attention ? "attention"
                             : which == Sublayer::Cross   ? "cross_attention"
                                                          : "ffn";
                p.paths = c.paths;
                p.alpha.assign(weights.begin(), weights.end() - 1);
                p.beta = weights.back();
                p.diversity = pathDiversity({p.alpha.begin(), p.alpha.begin() + c.paths});
                all.push_back(std::move(p));
            }
        }
    };
    measure(model.encoder(), 0);
    if (const BlockStack* decoder = model.decoder())
        measure(*decoder, model.config().layers);
    return all;
}


}  // namespace widelab
