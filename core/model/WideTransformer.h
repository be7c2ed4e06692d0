// defines: ModelOutput, BlockNorms, WideTransformerImpl / WideTransformer (the one
// encoder every WideLab architecture is built from: depth, width, experts, paths,
// sharing) and taskLoss
#pragma once

#include "Attention.h"
#include "Embedding.h"
#include "FeedForward.h"
#include "ForwardTrace.h"
#include "PathCombiner.h"
#include "Router.h"
#include "config/ModelConfig.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <memory>

namespace widelab {

struct ModelOutput {
    torch::Tensor logits;       // [B, classes] or [B, T, V]
    torch::Tensor balanceLoss;  // [] sum of the balance losses of every routing call (0 without MoE)
    torch::Tensor routerZLoss;  // [] sum of the router z-losses of every routing call (0 without MoE, and
                                // unless training with model.router_z_loss_weight > 0: not computed)
};

// LayerNorm parameters of one block, for the divergence views.
struct BlockNorms {
    torch::Tensor attentionGamma, attentionBeta, ffnGamma, ffnBeta;
};

class WideTransformerImpl : public torch::nn::Module {
public:
    explicit WideTransformerImpl(const ModelConfig& config);

    // Token models (model.input "tokens"): input = ids [B, T] int64, T <= max_len;
    // mask: [B, T] bool, true for real tokens (undefined: all real).
    // Image models (model.input "image"): input = pixels [B, C, H, W] floating
    // point, normalised, C = channels, H = W = image_size; no mask (undefined).
    // Throws std::invalid_argument naming what was expected on a wrong shape or
    // dtype, an empty batch, or (for CPU tensors) a token id outside the vocabulary.
    ModelOutput forward(const torch::Tensor& input, const torch::Tensor& mask = {});
    // The same pass, also recording what `trace` asks for.
    ModelOutput inspect(const torch::Tensor& input, const torch::Tensor& mask, ForwardTrace& trace);

    // Before every training step (0-based): the attention mechanisms' schedules
    // (the Performer redraws its random features).
    void beginStep(std::int64_t step);
    // Distributed training: how the routers sum their counts over the ranks in
    // training passes (RoutingOptions::sumOverRanks); none in one process.
    void setSumOverRanks(std::function<void(torch::Tensor&)> sum) { m_sumOverRanks = std::move(sum); }
    // Expert parallelism: this process keeps experts [first, first + count) of
    // every mixture layer and reaches all of them through `placement`.
    void placeExperts(std::shared_ptr<ExpertPlacement> placement, std::int64_t first, std::int64_t count);
    // The experts' parameters, every mixture layer's in order (none in a dense model).
    std::vector<torch::Tensor> expertParameters() const;

    const ModelConfig& config() const { return m_config; }
    std::vector<BlockNorms> blockNorms() const;
    // Path weights (alpha, then beta as the last element) of block i's sublayers.
    torch::Tensor attentionPathWeights(std::int64_t block) const;
    torch::Tensor ffnPathWeights(std::int64_t block) const;

private:
    ModelOutput run(const torch::Tensor& input, const torch::Tensor& mask, ForwardTrace* trace);
    // The residual after a sublayer; `ablated` (this block's ablations) may switch
    // the sublayer, or one of its paths, off.
    torch::Tensor sublayer(const torch::Tensor& h, const torch::Tensor& raw, std::int64_t block, bool attention,
                           const std::vector<Ablation>& ablated = {}, const torch::Tensor& valid = {});
    torch::Tensor feedForward(const torch::Tensor& x, std::int64_t block, const torch::Tensor& tokenIndex,
                              Routing& groupRouting, torch::Tensor& balanceLoss, torch::Tensor& zLoss,
                              BlockTrace* trace, const Ablation* expertAblated);
    torch::Tensor head(const torch::Tensor& h, const torch::Tensor& mask);

    std::int64_t pick(std::int64_t block, bool shared) const { return shared ? 0 : block; }

    ModelConfig m_config;
    std::function<void(torch::Tensor&)> m_sumOverRanks;
    std::shared_ptr<ExpertPlacement> m_placement;
    Embedding m_embed{nullptr};
    torch::nn::ModuleList m_attention, m_ffn, m_router, m_lnAttention, m_lnFfn, m_pathAttention, m_pathFfn;
    torch::nn::LayerNorm m_finalNorm{nullptr};
    torch::nn::Linear m_pooler{nullptr}, m_output{nullptr};
};
TORCH_MODULE(WideTransformer);

// Mean cross-entropy of a classification ([B, C] vs [B]) or language model
// ([B, T, V] vs [B, T], averaged over positions where mask is true) output.
torch::Tensor taskLoss(const ModelConfig& config, const torch::Tensor& logits, const torch::Tensor& targets,
                       const torch::Tensor& mask = {}, double labelSmoothing = 0.0);

// What a training step minimises: `task` (taskLoss) plus the auxiliary losses
// at their weights, model.balance_loss_weight x the balance loss and, when
// model.router_z_loss_weight is above zero, that x the router z-loss.
torch::Tensor trainingLoss(const ModelConfig& config, const torch::Tensor& task, const ModelOutput& output);

}  // namespace widelab
