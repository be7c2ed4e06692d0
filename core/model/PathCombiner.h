// defines: PathCombinerImpl / PathCombiner, the fusion of a multi-path sublayer:
// Y = beta * X + sum_j alpha_j * PathNorm_j(F_j), with the optional extra features
#pragma once

#include "Ablation.h"

#include <torch/nn/module.h>

#include <vector>

namespace widelab {

struct PathCombinerOptions {
    std::int64_t paths = 2;       // n raw features
    std::int64_t dModel = 256;
    bool pathNorm = true;         // a LayerNorm at the end of every feature
    bool learnable = true;        // alpha and beta are trained; otherwise fixed buffers
    bool extraFeatures = false;   // n more features: the mean of every n-1 paths
    double weight = 0.5;          // every alpha's value (its start when learnable): ModelConfig::pathWeightValue
};

struct PathCombinerImpl : torch::nn::Module {
    explicit PathCombinerImpl(const PathCombinerOptions& options);

    // x: residual [B, T, D]; raw: path outputs [n, B, T, D]. Returns [B, T, D].
    // `ablated`: paths (Ablation::index) whose own feature PathNorm_p(F_p) is
    // replaced (Ablation.h), its mean taken over `valid` ([B, T] bool; undefined: every token).
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& raw, const std::vector<Ablation>& ablated = {},
                          const torch::Tensor& valid = {});

    std::int64_t features() const { return alpha.size(0); }

    PathCombinerOptions options;
    torch::Tensor normWeight;  // [m, D], m = n or 2n (path_norm only)
    torch::Tensor normBias;    // [m, D]
    torch::Tensor alpha;       // [m], starts at `weight`
    torch::Tensor beta;        // [1], starts at 1
};
TORCH_MODULE(PathCombiner);

// Spread of the path weights: for two paths the paper's |a1 - a2| / |a1 + a2|
// (Fig. 7); for n paths the mean absolute deviation of alpha over |mean alpha|.
double pathDiversity(const std::vector<float>& alpha);

}  // namespace widelab
