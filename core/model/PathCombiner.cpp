#include "PathCombiner.h"

#include <torch/nn/functional/normalization.h>

#include <cmath>
#include <numeric>

namespace widelab {

PathCombinerImpl::PathCombinerImpl(const PathCombinerOptions& options_) : options(options_)
{
    const std::int64_t n = options.paths;
    const std::int64_t m = options.extraFeatures ? 2 * n : n;
    if (options.pathNorm) {
        normWeight = register_parameter("norm_weight", torch::ones({m, options.dModel}));
        normBias = register_parameter("norm_bias", torch::zeros({m, options.dModel}));
    }
    const torch::Tensor alphaInit = torch::full({m}, options.weight);
    const torch::Tensor betaInit = torch::ones({1});
    if (options.learnable) {
        alpha = register_parameter("alpha", alphaInit);
        beta = register_parameter("beta", betaInit);
    } else {
        alpha = register_buffer("alpha", alphaInit);
        beta = register_buffer("beta", betaInit);
    }
}

torch::Tensor PathCombinerImpl::forward(const torch::Tensor& x, const torch::Tensor& raw,
                                        const std::vector<Ablation>& ablated, const torch::Tensor& valid)
{
    // n = paths, m = features, B = batch, T = sequence, D = width
    const std::int64_t n = options.paths, D = options.dModel;
    torch::Tensor features = raw;  // [n, B, T, D]
    if (options.extraFeatures) {
        // Feature j leaves path j out: (sum_i F_i - F_j) / (n - 1), O(n) work.
        const torch::Tensor leaveOneOut = (raw.sum(0, true) - raw) / static_cast<double>(n - 1);
        features = torch::cat({raw, leaveOneOut}, 0);  // [m, B, T, D]
    }
    const std::int64_t m = features.size(0);
    if (options.pathNorm) {
        // All m PathNorms at once: normalise, then each feature's own affine.
        features = torch::layer_norm(features, {D}, {}, {}, 1e-5);
        features = torch::addcmul(normBias.view({m, 1, 1, D}), features, normWeight.view({m, 1, 1, D}));
    }
    for (const Ablation& a : ablated) {
        if (a.part != AblationPart::Path || a.index < 0 || a.index >= n)
            continue;
        const torch::Tensor own = features[a.index].reshape({-1, D});
        const torch::Tensor replaced = ablatedValue(own, a.mode, valid.defined() ? valid.reshape({-1}) : torch::Tensor());
        features = features.clone();
        features[a.index].copy_(replaced.view_as(features[a.index]));
    }
    const torch::Tensor mixed = torch::tensordot(alpha.to(features.dtype()), features, {0}, {0});  // [B, T, D]
    return beta.to(x.dtype()) * x + mixed;
}

double pathDiversity(const std::vector<float>& alpha)
{
    if (alpha.size() < 2)
        return 0.0;
    if (alpha.size() == 2) {
        const double sum = std::abs(static_cast<double>(alpha[0]) + alpha[1]);
        return sum > 0.0 ? std::abs(static_cast<double>(alpha[0]) - alpha[1]) / sum : 0.0;
    }
    const double mean = std::accumulate(alpha.begin(), alpha.end(), 0.0) / static_cast<double>(alpha.size());
    double deviation = 0.0;
    for (const float a : alpha)
        deviation += std::abs(a - mean);
    deviation /= static_cast<double>(alpha.size());
    return std::abs(mean) > 0.0 ? deviation / std::abs(mean) : 0.0;
}

}  // namespace widelab
