// defines: makeLayerNorm, BlockNorms, StackPass, BlockStack: the blocks of one side of a model, the encoder or
// an encoder-decoder's decoder: attention (and, in a decoder, cross-attention to the
// encoder's output), the FFN or experts, LayerNorms and path combiners, with sharing
#pragma once

#include "Attention.h"
#include "CrossAttention.h"
#include "FeedForward.h"
#include "ForwardTrace.h"
#include "PathCombiner.h"
#include "Router.h"
#include "config/ModelConfig.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/normalization.h>

#include <functional>
#include <vector>

namespace widelab {

// A LayerNorm over the width, as every one of the model's (eps 1e-5).
torch::nn::LayerNorm makeLayerNorm(std::int64_t width);

// LayerNorm parameters of one block, for the divergence views.
struct BlockNorms {
    torch::Tensor attentionGamma, attentionBeta, ffnGamma, ffnBeta;
};

// A decoding loop's state (WideTransformerImpl::beginDecoding): each block's
// self-attention keys and values [B, n*H, capacity, A], the first `length`
// positions filled; each block's keys and values of the source
// (CrossAttentionImpl::keysValues); the source's masks.
struct DecoderState {
    std::vector<torch::Tensor> keys, values, sourceKeysValues;
    torch::Tensor memoryBias, memoryValid;
    std::int64_t length = 0;    // positions decoded so far
    std::int64_t capacity = 0;  // positions the caches hold

    // Keeps the batch rows `rows` ([R] int64 on the caches' device) of every
    // cached tensor, in that order; rows may repeat or be left out: a beam
    // search's beams after a step, a batch expanded into beams, finished sources dropped.
    void reorder(const torch::Tensor& rows);
};

// What one pass through a stack reads and adds to. B = batch, T = tokens.
struct StackPass {
    torch::Tensor bias;        // self-attention's additive fp32 mask, broadcastable to [B, 1, T, T]; or undefined
    torch::Tensor valid;       // [B, T] bool, true for real tokens; undefined when all are
    torch::Tensor tokenIndex;  // [S] flat positions of the routed (real) tokens; undefined: all
    // A decoder's cross-attention: the encoder's output [B, S, D], its padding mask
    // (broadcastable to [B, 1, 1, S]) and valid source tokens [B, S] (both undefined when all are real).
    torch::Tensor memory, memoryBias, memoryValid;
    bool training = false;
    // The caller reads only the first position after the last block (a classifier
    // read at its CLS token): forward() may return [B, 1, D], that row alone.
    bool readsFirstRowOnly = false;
    ForwardTrace* trace = nullptr;
    // The number of this stack's first block among the trace's blocks and the
    // ablations' (a decoder's follow the encoder's).
    std::int64_t firstBlock = 0;
    std::function<void(const torch::Tensor&)> afterSublayer;  // the logit lens, when set
    std::function<void(torch::Tensor&)> sumOverRanks;
    ExpertPlacement* placement = nullptr;
    torch::Tensor balanceLoss, zLoss;  // [] fp32, each routing call's added
};

class BlockStack {
public:
    // `side` gives the depth (its layers) and every knob: the model's
    // configuration for the encoder, ModelConfig::decoderSide() for a decoder,
    // which also gets cross-attention. The module lists are registered on
    // `owner`: "attention", "ffn", "router", "ln_att", "ln_ffn", "path_att",
    // "path_ffn", and with cross-attention "cross", "ln_cross", "path_cross".
    BlockStack(const ModelConfig& side, bool crossAttention, torch::nn::Module& owner);

    // h: [B, T, D] after the embedding; returns the residual stream after the last
    // block: [B, T, D], or [B, 1, D] where pass.readsFirstRowOnly let the last
    // block compute the first row alone.
    torch::Tensor forward(torch::Tensor h, StackPass& pass);
    // A decoder's caches for `capacity` positions over the encoder's output `memory` [B, S, D].
    DecoderState beginDecoding(const torch::Tensor& memory, const torch::Tensor& memoryBias,
                               const torch::Tensor& memoryValid, std::int64_t capacity);
    // One decoding step in evaluation: h [B, 1, D] at position state.length; the
    // residual stream after the last block, what forward() gives that position
    // when no expert drops a token (a decoder's default).
    torch::Tensor step(torch::Tensor h, DecoderState& state);

    const ModelConfig& side() const { return m_side; }
    std::int64_t depth() const { return m_side.layers; }
    void beginStep(std::int64_t step);
    void keepExperts(std::int64_t first, std::int64_t count);
    std::vector<torch::Tensor> expertParameters() const;
    std::vector<BlockNorms> blockNorms() const;
    enum class Sublayer { Attention = 0, FeedForward = 1, Cross = 2 };
    bool hasCrossAttention() const { return m_cross; }
    // Path weights (alpha, then beta as the last element) of block i's sublayer;
    // undefined for a stack of one path (Cross: one without cross-attention).
    torch::Tensor pathWeights(std::int64_t block, Sublayer which) const;

private:
    // The residual after a sublayer; `ablated` (this block's ablations) may switch
    // the sublayer, or one of its paths, off.
    torch::Tensor sublayer(const torch::Tensor& h, const torch::Tensor& raw, std::int64_t block, Sublayer which,
                           bool training, const std::vector<Ablation>& ablated, const torch::Tensor& valid);
    torch::Tensor feedForward(const torch::Tensor& x, std::int64_t block, StackPass& pass, Routing& groupRouting,
                              BlockTrace* trace, const Ablation* expertAblated);
    const torch::nn::ModuleList& pathCombiners(Sublayer which) const;
    std::int64_t pick(std::int64_t block, bool shared) const { return shared ? 0 : block; }

    ModelConfig m_side;
    bool m_cross;
    bool m_lastBlockCanAnswerFirstRow;  // lastBlockReadsClsRowOnly, decided once: not per pass
    torch::nn::ModuleList m_attention, m_ffn, m_router, m_lnAttention, m_lnFfn, m_pathAttention, m_pathFfn;
    torch::nn::ModuleList m_crossAttention{nullptr}, m_lnCross{nullptr}, m_pathCross{nullptr};
};

}  // namespace widelab
