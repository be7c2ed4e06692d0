// defines: AttentionOptions, AttentionImpl / Attention: multi-head self-attention:
// the q, k, v and output projections of every head of every path as batched
// products, around the mixing step of the configured mechanism(s)
#pragma once

#include "Ablation.h"
#include "model/attention/AttentionMechanism.h"
#include "config/ModelConfig.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>

#include <vector>

namespace widelab {

struct AttentionOptions {
    std::int64_t dModel = 256;
    std::int64_t heads = 8;
    std::int64_t headDim = 32;
    std::int64_t paths = 1;   // n parallel attention sublayers, fused into n*heads heads
    double dropout = 0.0;     // on the attention probabilities

    static AttentionOptions fromConfig(const ModelConfig& config);
};

struct AttentionImpl : torch::nn::Module {
    // The mechanism of each head comes from `config` (model.attention, attention_mix).
    AttentionImpl(const AttentionOptions& options, const ModelConfig& config);
    explicit AttentionImpl(const ModelConfig& config) : AttentionImpl(AttentionOptions::fromConfig(config), config) {}

    // x: [B, T, D]; bias: additive fp32 mask broadcastable to [B, 1, T, T] (0 where
    // a query may look at a key, -1e9 elsewhere), or undefined; keyValid: [B, T]
    // bool (true for real tokens) or undefined when all are real.
    // Returns the per-path outputs [n, B, T, D]. When `weights` is given it
    // receives each head's attention map [B, n*H, T, T] (what mapKind says).
    // `ablated`: heads (Ablation::index among the n*H) whose context is replaced
    // before the output projection (Ablation.h); the others are ignored.
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& bias, const torch::Tensor& keyValid = {},
                          torch::Tensor* weights = nullptr, const std::vector<Ablation>& ablated = {});
    // One decoding step of a causal full-attention layer (a decoder's): x [B, 1, D]
    // at `position`, whose keys and values are written into the caches [B, n*H,
    // capacity, A] that hold the earlier positions'. Returns [n, B, 1, D], what
    // forward() gives that position. std::logic_error for another mechanism.
    torch::Tensor forwardStep(const torch::Tensor& x, torch::Tensor& keys, torch::Tensor& values, std::int64_t position);
    // The first `queries` positions' outputs [n, B, queries, D], what forward()
    // gives them, with keys and values from every position of x [B, T, D]; bias
    // and keyValid as forward's. Only where answersLeading(); no maps, no ablations.
    torch::Tensor forwardLeading(const torch::Tensor& x, std::int64_t queries, const torch::Tensor& bias,
                                 const torch::Tensor& keyValid);
    // One mechanism has every head, and it answers queries apart (MechanismSpec::queriesApart).
    bool answersLeading() const { return groups.size() == 1 && groups.front().spec->queriesApart; }
    // Before every training step: the mechanisms' schedules.
    void beginStep(std::int64_t step);

    AttentionOptions options;
    bool causal = false;
    torch::nn::Linear qkv{nullptr};  // [3*n*H*A, D], rows ordered (q|k|v, path, head, a)
    torch::Tensor outWeight;         // [n, D, H*A]
    torch::Tensor outBias;           // [n, D]

    // The heads a mechanism mixes: one group for the whole layer, or with mixed
    // attention one per mechanism (its heads in every path), registered as "mix.<g>".
    struct Group {
        const MechanismSpec* spec = nullptr;
        std::shared_ptr<MechanismImpl> mechanism;
        torch::Tensor heads;        // [G] int64 indices into the n*H heads, ascending
        std::int64_t first = 0;     // when contiguous: heads = first .. first + count - 1
        std::int64_t count = 0;
        bool contiguous = true;
    };
    std::vector<Group> groups;
    torch::nn::ModuleList mixers{nullptr};  // the groups' mechanisms, "mix.<g>"
    torch::Tensor order;  // [n*H] the inverse of the groups' concatenated heads; undefined with one group

private:
    // Every head's context [B, n*H, T, A] through its path's output projection: [n, B, T, D].
    torch::Tensor project(const torch::Tensor& context) const;
};
TORCH_MODULE(Attention);

}  // namespace widelab
