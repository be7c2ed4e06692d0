// defines: ModelOutput, TargetInput, WideTransformerImpl / WideTransformer (the one
// model every WideLab architecture is built from: an encoder of any depth, width,
// experts, paths and sharing, with a classifier or language-model head, or followed
// by a decoder of the same knobs for translation) and taskLoss
#pragma once

#include "BlockStack.h"
#include "Embedding.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <memory>
#include <string>

namespace widelab {

struct ModelOutput {
    torch::Tensor logits;       // [B, classes] or [B, T, V]
    torch::Tensor balanceLoss;  // [] sum of the balance losses of every routing call (0 without MoE)
    torch::Tensor routerZLoss;  // [] sum of the router z-losses of every routing call (0 without MoE, and
                                // unless training with model.router_z_loss_weight > 0: not computed)
};

// An encoder-decoder's target side: the decoder's input ids [B, T] (the target
// shifted right behind the start token) and their mask ([B, T] bool, true for real
// tokens; undefined: all real). Undefined for every other model.
struct TargetInput {
    torch::Tensor ids;
    torch::Tensor mask;
};

class WideTransformerImpl : public torch::nn::Module {
public:
    explicit WideTransformerImpl(const ModelConfig& config);

    // Token models (model.input "tokens"): input = ids [B, T] int64, T <= max_len;
    // mask: [B, T] bool, true for real tokens (undefined: all real).
    // Image models (model.input "image"): input = pixels [B, C, H, W] floating
    // point, normalised, C = channels, H = W = image_size; no mask (undefined).
    // Translation (model.head "translation"): input and mask are the source, and
    // `target` the decoder's input (T' <= max_len); the logits are [B, T', V], one
    // row per target position, and the trace's blocks are the encoder's, then the
    // decoder's (decoder block i is block layers + i, for ablations too).
    // Throws std::invalid_argument naming what was expected on a wrong shape or
    // dtype, an empty batch, a target given to (or missing from) a model, or (for
    // CPU tensors) a token id outside the vocabulary.
    // `routed`: a model with experts routes only the mask's real tokens; given
    // routedPositions(mask) of the mask on the host, before its upload, it does
    // not find them on the device, where their count would be read back.
    ModelOutput forward(const torch::Tensor& input, const torch::Tensor& mask = {}, const TargetInput& target = {},
                        const torch::Tensor& routed = {});
    // The same pass, also recording what `trace` asks for.
    ModelOutput inspect(const torch::Tensor& input, const torch::Tensor& mask, ForwardTrace& trace,
                        const TargetInput& target = {}, const torch::Tensor& routed = {});

    // What a model with experts routes of a [B, T] mask (true: a real token): the
    // flat positions of its real tokens, a CLS token's first, [S] int64 on the
    // mask's device; undefined for a dense model or no mask. Its size is the
    // data's: on a GPU it waits for the device, on the host it does not.
    torch::Tensor routedPositions(const torch::Tensor& mask) const;

    // Before every training step (0-based): the attention mechanisms' schedules
    // (the Performer redraws its random features).
    void beginStep(std::int64_t step);
    // Distributed training: how the routers sum their counts over the ranks in
    // training passes (RoutingOptions::sumOverRanks); none in one process.
    void setSumOverRanks(std::function<void(torch::Tensor&)> sum) { m_sumOverRanks = std::move(sum); }
    // Expert parallelism: this process keeps experts [first, first + count) of
    // every mixture layer and reaches all of them through `placement`.
    void placeExperts(std::shared_ptr<ExpertPlacement> placement, std::int64_t first, std::int64_t count);
    // Inference computes every token's row, also where the head reads the CLS
    // token's alone and the last block could compute that row only
    // (lastBlockReadsClsRowOnly): the work the papers timed, for the studies' latency.
    void computeEveryRow(bool every) { m_everyRow = every; }
    // The experts' parameters, every mixture layer's in order (none in a dense model).
    std::vector<torch::Tensor> expertParameters() const;

    const ModelConfig& config() const { return m_config; }
    // Whether a parameter (by its name in named_parameters) belongs to the task's
    // head: a classifier and its pooler, or a language model's output. Another
    // task replaces it when a run starts from this one's weights (train.init_from).
    static bool isTaskHead(const std::string& parameterName);
    // The encoder's blocks (a translation model's decoder: decoder()).
    std::vector<BlockNorms> blockNorms() const { return m_encoder->blockNorms(); }
    // Path weights (alpha, then beta as the last element) of the encoder's block i's sublayers.
    torch::Tensor attentionPathWeights(std::int64_t block) const
    {
        return m_encoder->pathWeights(block, BlockStack::Sublayer::Attention);
    }
    torch::Tensor ffnPathWeights(std::int64_t block) const
    {
        return m_encoder->pathWeights(block, BlockStack::Sublayer::FeedForward);
    }
    // Decoding (a translation model, in evaluation): the source [B, S] (mask [B, S]
    // or undefined) encoded once, and caches for `capacity` target positions (at
    // most max_len); then each step's logits [B, V] for the tokens [B] at the next
    // position, the first being the start token. std::invalid_argument for a model
    // that is not a translation model, a source as forward() refuses it, or a step
    // past the capacity.
    DecoderState beginDecoding(const torch::Tensor& source, const torch::Tensor& mask, std::int64_t capacity);
    torch::Tensor decodeStep(DecoderState& state, const torch::Tensor& tokens);

    const BlockStack& encoder() const { return *m_encoder; }
    const BlockStack* decoder() const { return m_decoder.get(); }

private:
    ModelOutput run(const torch::Tensor& input, const torch::Tensor& mask, const TargetInput& target,
                    const torch::Tensor& routed, ForwardTrace* trace);
    // The encoder's output (after final_ln) for checked input, `pass` filled with
    // its masks, routed tokens and losses.
    torch::Tensor encode(const torch::Tensor& input, const torch::Tensor& mask, StackPass& pass, ForwardTrace* trace);
    // The decoder's logits [B, T', V] for the encoder's output `memory`.
    torch::Tensor decode(const torch::Tensor& memory, const torch::Tensor& sourceValid, const TargetInput& target,
                         StackPass& pass);
    torch::Tensor head(const torch::Tensor& h, const torch::Tensor& mask);

    ModelConfig m_config;
    std::function<void(torch::Tensor&)> m_sumOverRanks;
    std::shared_ptr<ExpertPlacement> m_placement;
    bool m_everyRow = false;
    Embedding m_embed{nullptr};
    std::unique_ptr<BlockStack> m_encoder;  // its modules registered on this one, under their own names
    torch::nn::LayerNorm m_finalNorm{nullptr};
    torch::nn::Linear m_pooler{nullptr}, m_output{nullptr};
    // Translation: the decoder's blocks, registered under "decoder", and its final LayerNorm.
    std::unique_ptr<BlockStack> m_decoder;
    torch::nn::LayerNorm m_decoderNorm{nullptr};
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
