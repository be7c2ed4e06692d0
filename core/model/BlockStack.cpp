#include "BlockStack.h"

#include "Dropout.h"
#include "InferenceNorm.h"
#include "ParameterCount.h"
#include "runtime/PhaseTimer.h"

#include <torch/nn/modules/normalization.h>

namespace widelab {

torch::nn::LayerNorm makeLayerNorm(std::int64_t width)
{
    return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(1e-5));
}

namespace {

torch::nn::LayerNormImpl& layerNorm(const torch::nn::ModuleList& list, std::int64_t at)
{
    return *list->ptr(at)->as<torch::nn::LayerNormImpl>();
}

// A LayerNorm whose output only enters products: under the CPU's autocast in
// inference, written in bf16 as it is computed, the type the products would
// cast it to.
torch::Tensor normForProducts(torch::nn::LayerNormImpl& norm, const torch::Tensor& h)
{
    if (normToBf16Applies(h, norm.weight, norm.bias))
        return normToBf16(h, norm.weight, norm.bias, norm.options.eps());
    return norm.forward(h);
}

// The norm of h for the next sublayer (normForProducts's when `forProducts`,
// else the LayerNorm's own), after adding `pending` to h: a sublayer's output
// whose addition forward() deferred, or undefined. Where residualNorm applies
// (inference in fp32 on the CPU) the addition and the norm are one pass.
torch::Tensor addThenNorm(torch::nn::LayerNormImpl& norm, torch::Tensor& h, torch::Tensor& pending, bool forProducts)
{
    if (residualNormApplies(h, pending, norm.weight, norm.bias)) {
        NormedResidual r = residualNorm(h, pending, norm.weight, norm.bias, norm.options.eps());
        h = std::move(r.sum);
        pending = torch::Tensor();
        return r.normed;
    }
    if (pending.defined()) {
        h = h + pending;
        pending = torch::Tensor();
    }
    return forProducts ? normForProducts(norm, h) : norm.forward(h);
}

// The mean over real tokens (every token when `valid` is undefined) of each
// token's L2 norm over the width: h is [..., B, T, D], valid [B, T].
torch::Tensor meanTokenNorm(const torch::Tensor& h, const torch::Tensor& valid)
{
    const torch::Tensor norms = h.to(torch::kFloat32).reshape({-1, h.size(-1)}).norm(2, 1);
    if (!valid.defined())
        return norms.mean();
    return norms.masked_select(valid.reshape({-1})).mean();
}

// Each block's keys and values of the source `memory` (CrossAttentionImpl::keysValues),
// projected once per cross-attention module: shared ones give every block the same tensor.
std::vector<torch::Tensor> sourceKeysValues(const torch::nn::ModuleList& cross, std::int64_t blocks, bool shared,
                                            const torch::Tensor& memory)
{
    std::vector<torch::Tensor> perModule(cross->size());
    std::vector<torch::Tensor> perBlock;
    for (std::int64_t i = 0; i < blocks; ++i) {
        const std::size_t at = shared ? 0 : static_cast<std::size_t>(i);
        if (!perModule[at].defined())
            perModule[at] = cross->ptr(at)->as<CrossAttentionImpl>()->keysValues(memory);
        perBlock.push_back(perModule[at]);
    }
    return perBlock;
}

}  // namespace

BlockStack::BlockStack(const ModelConfig& side, bool crossAttention, torch::nn::Module& owner)
    : m_side(side), m_cross(crossAttention), m_lastBlockCanAnswerFirstRow(!crossAttention && lastBlockReadsClsRowOnly(side))
{
    const ModelConfig& c = m_side;
    m_attention = owner.register_module("attention", torch::nn::ModuleList());
    for (std::int64_t i = 0; i < c.attentionModules(); ++i)
        m_attention->push_back(Attention(c));

    m_ffn = owner.register_module("ffn", torch::nn::ModuleList());
    const std::int64_t units = c.isMoe() ? c.experts : c.paths;
    for (std::int64_t i = 0; i < c.ffnModules(); ++i)
        m_ffn->push_back(FeedForward(units, c.dModel, c.ffnDim, c.activation));

    m_router = owner.register_module("router", torch::nn::ModuleList());
    for (std::int64_t i = 0; i < c.routerModules(); ++i)
        m_router->push_back(Router(c.dModel, c.experts));

    m_lnAttention = owner.register_module("ln_att", torch::nn::ModuleList());
    m_lnFfn = owner.register_module("ln_ffn", torch::nn::ModuleList());
    m_pathAttention = owner.register_module("path_att", torch::nn::ModuleList());
    m_pathFfn = owner.register_module("path_ffn", torch::nn::ModuleList());
    const PathCombinerOptions paths{c.paths, c.dModel, c.pathNorm, c.learnablePathWeights, c.pathExtraFeatures,
                                    c.pathWeightValue()};
    for (std::int64_t i = 0; i < c.layerNormSets(); ++i) {
        m_lnAttention->push_back(makeLayerNorm(c.dModel));
        m_lnFfn->push_back(makeLayerNorm(c.dModel));
        if (c.isMultiPath()) {
            m_pathAttention->push_back(PathCombiner(paths));
            m_pathFfn->push_back(PathCombiner(paths));
        }
    }
    if (!m_cross)
        return;
    // Cross-attention shares across blocks as self-attention does, with its own LayerNorms and combiners.
    m_crossAttention = owner.register_module("cross", torch::nn::ModuleList());
    for (std::int64_t i = 0; i < c.attentionModules(); ++i)
        m_crossAttention->push_back(CrossAttention(c));
    m_lnCross = owner.register_module("ln_cross", torch::nn::ModuleList());
    m_pathCross = owner.register_module("path_cross", torch::nn::ModuleList());
    for (std::int64_t i = 0; i < c.layerNormSets(); ++i) {
        m_lnCross->push_back(makeLayerNorm(c.dModel));
        if (c.isMultiPath())
            m_pathCross->push_back(PathCombiner(paths));
    }
}

torch::Tensor BlockStack::forward(torch::Tensor h, StackPass& pass)
{
    const ModelConfig& c = m_side;
    const std::int64_t B = h.size(0), D = h.size(2);
    ForwardTrace* trace = pass.trace;
    // A classifier read at its CLS token needs the last block's first row only:
    // there every token's keys and values, but one query, one FFN row, one
    // residual (a sixth of a 6-block model's inference, most of a 1-block one's).
    // Only in inference (training's dropout draws per row), without a trace (the
    // views read every row) or the logit lens; lastBlockReadsClsRowOnly says
    // for which models.
    const bool lastBlockFirstRow =
        m_lastBlockCanAnswerFirstRow && pass.readsFirstRowOnly && !pass.training && !trace && !pass.afterSublayer;
    torch::Tensor valid = pass.valid;  // [B, rows of h]
    // In inference without a trace, hooks or cross-attention, a single path's
    // sublayer output is what sublayer() would add to h (no dropout, no
    // ablation); it waits in `pending` for the next LayerNorm to add it in the
    // pass that norms the sum (addThenNorm).
    const bool deferAdditions = !pass.training && !trace && !pass.afterSublayer && !m_cross && !c.isMultiPath();
    torch::Tensor pending;
    auto after = [&] {
        if (pass.afterSublayer)
            pass.afterSublayer(h);
    };
    Routing groupRouting;  // the routing of the current group of blocks
    const std::vector<torch::Tensor> sourceKv =
        m_cross ? sourceKeysValues(m_crossAttention, c.layers, c.shareAttention, pass.memory) : std::vector<torch::Tensor>();
    for (std::int64_t i = 0; i < c.layers; ++i) {
        BlockTrace* blockTrace = nullptr;
        std::vector<Ablation> ablated;  // this block's
        const Ablation* expertAblated = nullptr;
        if (trace) {
            trace->blocks.emplace_back();
            blockTrace = &trace->blocks.back();
            for (const Ablation& a : trace->ablations)
                if (a.block == pass.firstBlock + i)
                    ablated.push_back(a);
            for (const Ablation& a : ablated)
                if (a.part == AblationPart::Expert)
                    expertAblated = &a;
        }
        const bool wantWeights = blockTrace && trace->captureAttention;

        auto& attention = *m_attention->ptr(pick(i, c.shareAttention))->as<AttentionImpl>();
        const bool firstRowOnly = lastBlockFirstRow && i + 1 == c.layers;
        const torch::Tensor normed = addThenNorm(layerNorm(m_lnAttention, pick(i, c.shareLayerNorm)), h, pending, true);
        torch::Tensor weights, attended;
        {
            const PhaseScope timed(Phase::Attention);
            attended = firstRowOnly ? attention.forwardLeading(normed, 1, pass.bias, pass.valid)
                                    : attention.forward(normed, pass.bias, pass.valid,
                                                        wantWeights ? &weights : nullptr, ablated);
        }
        if (firstRowOnly) {
            h = h.narrow(1, 0, 1);
            if (valid.defined())
                valid = valid.narrow(1, 0, 1);
        }
        if (wantWeights)
            blockTrace->attention = weights.detach();
        if (deferAdditions)
            pending = attended.squeeze(0);
        else
            h = sublayer(h, attended, i, Sublayer::Attention, pass.training, ablated, valid);
        after();

        if (m_cross) {
            auto& cross = *m_crossAttention->ptr(pick(i, c.shareAttention))->as<CrossAttentionImpl>();
            const torch::Tensor query = layerNorm(m_lnCross, pick(i, c.shareLayerNorm)).forward(h);
            torch::Tensor crossWeights, read;
            {
                const PhaseScope timed(Phase::Attention);
                read = cross.forward(query, sourceKv[static_cast<std::size_t>(i)], pass.memoryBias, pass.memoryValid,
                                     wantWeights ? &crossWeights : nullptr);
            }
            if (wantWeights)
                blockTrace->crossAttention = crossWeights.detach();
            h = sublayer(h, read, i, Sublayer::Cross, pass.training, ablated, pass.valid);
            after();
        }

        // A mixture's router reads x too, in fp32.
        auto& ffnNorm = layerNorm(m_lnFfn, pick(i, c.shareLayerNorm));
        const torch::Tensor x = addThenNorm(ffnNorm, h, pending, !c.isMoe());
        const std::int64_t T = h.size(1);
        torch::Tensor transformed;
        if (c.isMoe()) {
            const torch::Tensor moe = feedForward(x.reshape({B * T, D}), i, pass, groupRouting,
                                                  blockTrace && trace->captureRouting ? blockTrace : nullptr,
                                                  expertAblated);
            transformed = moe.view({1, B, T, D});
        } else {
            auto& ffn = *m_ffn->ptr(pick(i, c.shareFfn))->as<FeedForwardImpl>();
            const PhaseScope timed(Phase::FeedForward);
            transformed = ffn.forwardShared(x.reshape({B * T, D})).view({c.paths, B, T, D});
        }
        if (deferAdditions)
            pending = transformed.squeeze(0);
        else
            h = sublayer(h, transformed, i, Sublayer::FeedForward, pass.training, ablated, valid);
        after();
        if (blockTrace && trace->captureResidual)
            blockTrace->residualNorm = meanTokenNorm(h.detach(), pass.valid);
    }
    return pending.defined() ? h + pending : h;
}

DecoderState BlockStack::beginDecoding(const torch::Tensor& memory, const torch::Tensor& memoryBias,
                                       const torch::Tensor& memoryValid, std::int64_t capacity)
{
    const ModelConfig& c = m_side;
    DecoderState state;
    state.memoryBias = memoryBias;
    state.memoryValid = memoryValid;
    state.capacity = capacity;
    const std::int64_t B = memory.size(0), heads = c.paths * c.heads;
    for (std::int64_t i = 0; i < c.layers; ++i) {
        state.keys.push_back(torch::zeros({B, heads, capacity, c.headDim}, memory.options()));
        state.values.push_back(torch::zeros({B, heads, capacity, c.headDim}, memory.options()));
    }
    state.sourceKeysValues = sourceKeysValues(m_crossAttention, c.layers, c.shareAttention, memory);
    return state;
}

void DecoderState::reorder(const torch::Tensor& rows)
{
    for (std::size_t i = 0; i < keys.size(); ++i) {
        keys[i] = keys[i].index_select(0, rows);
        values[i] = values[i].index_select(0, rows);
    }
    // The source's keys and values are [2, B, n*H, S, A]; a shared cross-attention's
    // blocks hold one tensor, which stays one.
    const std::vector<torch::Tensor> before = sourceKeysValues;
    for (std::size_t i = 0; i < before.size(); ++i) {
        std::size_t first = 0;
        while (!before[first].is_same(before[i]))
            ++first;
        sourceKeysValues[i] = first < i ? sourceKeysValues[first] : before[i].index_select(1, rows);
    }
    if (memoryBias.defined())
        memoryBias = memoryBias.index_select(0, rows);
    if (memoryValid.defined())
        memoryValid = memoryValid.index_select(0, rows);
}

torch::Tensor BlockStack::step(torch::Tensor h, DecoderState& state)
{
    const ModelConfig& c = m_side;
    const std::int64_t B = h.size(0), D = h.size(2);
    StackPass pass;  // evaluation: every token real, nothing traced or ablated
    pass.balanceLoss = torch::zeros({}, h.options().dtype(torch::kFloat32));
    pass.zLoss = pass.balanceLoss;
    Routing groupRouting;
    for (std::int64_t i = 0; i < c.layers; ++i) {
        const std::int64_t norms = pick(i, c.shareLayerNorm);
        auto& attention = *m_attention->ptr(pick(i, c.shareAttention))->as<AttentionImpl>();
        const torch::Tensor attended = attention.forwardStep(layerNorm(m_lnAttention, norms).forward(h), state.keys[i],
                                                             state.values[i], state.length);
        h = sublayer(h, attended, i, Sublayer::Attention, false, {}, {});
        auto& cross = *m_crossAttention->ptr(pick(i, c.shareAttention))->as<CrossAttentionImpl>();
        const torch::Tensor read = cross.forward(layerNorm(m_lnCross, norms).forward(h), state.sourceKeysValues[i],
                                                 state.memoryBias, state.memoryValid);
        h = sublayer(h, read, i, Sublayer::Cross, false, {}, {});
        const torch::Tensor x = layerNorm(m_lnFfn, norms).forward(h).reshape({B, D});
        const torch::Tensor transformed =
            c.isMoe() ? feedForward(x, i, pass, groupRouting, nullptr, nullptr).view({1, B, 1, D})
                      : m_ffn->ptr(pick(i, c.shareFfn))->as<FeedForwardImpl>()->forwardShared(x).view({c.paths, B, 1, D});
        h = sublayer(h, transformed, i, Sublayer::FeedForward, false, {}, {});
    }
    return h;
}

torch::Tensor BlockStack::sublayer(const torch::Tensor& h, const torch::Tensor& raw, std::int64_t block,
                                   Sublayer which, bool training, const std::vector<Ablation>& ablated,
                                   const torch::Tensor& valid)
{
    const ModelConfig& c = m_side;
    const PhaseScope timed(Phase::Paths);
    const auto index = static_cast<std::int64_t>(which);
    torch::Tensor paths = applyDropout(raw, c.dropout, training);
    for (const Ablation& a : ablated) {
        if (a.part != AblationPart::Sublayer || a.index != index)
            continue;
        if (a.mode == AblationMode::Zero)
            return h;  // the sublayer skipped: only the residual passes
        // Every path's output [n, B*T, D] by its mean over the real tokens.
        const std::int64_t n = paths.size(0), D = paths.size(-1);
        const torch::Tensor flat = paths.reshape({n, -1, D});
        std::vector<torch::Tensor> means;
        for (std::int64_t p = 0; p < n; ++p)
            means.push_back(ablatedValue(flat[p], a.mode, valid.defined() ? valid.reshape({-1}) : torch::Tensor()));
        paths = torch::stack(means).view_as(paths);
    }
    // squeeze, not paths[0]: a select's backward fills a zero gradient and
    // copies into it, a squeeze's is a view
    if (!c.isMultiPath())
        return h + paths.squeeze(0);
    const torch::nn::ModuleList& combiners = pathCombiners(which);
    std::vector<Ablation> pathsAblated;  // this sublayer's, indexed among its own paths
    const std::int64_t first = index * c.paths;
    for (Ablation a : ablated) {
        if (a.part != AblationPart::Path || a.index < first || a.index >= first + c.paths)
            continue;
        a.index -= first;
        pathsAblated.push_back(a);
    }
    return combiners->ptr(pick(block, c.shareLayerNorm))->as<PathCombinerImpl>()->forward(h, paths, pathsAblated, valid);
}

torch::Tensor BlockStack::feedForward(const torch::Tensor& x, std::int64_t block, StackPass& pass,
                                      Routing& groupRouting, BlockTrace* trace, const Ablation* expertAblated)
{
    const ModelConfig& c = m_side;
    const torch::Tensor& tokenIndex = pass.tokenIndex;
    torch::Tensor tokens;
    {
        const PhaseScope timed(Phase::Routing);
        tokens = tokenIndex.defined() ? x.index_select(0, tokenIndex) : x;  // [S, D]
        if (c.routesAt(block)) {
            const auto& router = *m_router->ptr(pick(block, c.shareRouter))->as<RouterImpl>();
            RoutingOptions options = RoutingOptions::fromConfig(c, pass.training);
            if (pass.training)
                options.sumOverRanks = pass.sumOverRanks;
            groupRouting = route(tokens, router.weight, options);
            pass.balanceLoss = pass.balanceLoss + groupRouting.balanceLoss;
            if (groupRouting.zLoss.defined())
                pass.zLoss = pass.zLoss + groupRouting.zLoss;
        }
    }
    auto& experts = *m_ffn->ptr(pick(block, c.shareFfn))->as<FeedForwardImpl>();
    const torch::Tensor y = dispatchCombine(tokens, groupRouting, experts, expertAblated, pass.placement);
    if (trace) {
        trace->routed = c.routesAt(block);
        trace->expert = groupRouting.expert;
        trace->gates = groupRouting.gates.detach();
        trace->kept = groupRouting.kept;
        trace->capacity = groupRouting.capacity;
        if (trace->routed) {
            trace->probs = groupRouting.probs.detach();
            trace->logits = groupRouting.logits.detach();
        }
    }
    if (!tokenIndex.defined())
        return y;
    const PhaseScope timed(Phase::Routing);
    return torch::zeros_like(x).index_copy(0, tokenIndex, y);
}

void BlockStack::beginStep(std::int64_t step)
{
    for (const auto& module : *m_attention)
        module->as<AttentionImpl>()->beginStep(step);
}

void BlockStack::keepExperts(std::int64_t first, std::int64_t count)
{
    for (const auto& module : *m_ffn)
        module->as<FeedForwardImpl>()->keepUnits(first, count);
}

std::vector<torch::Tensor> BlockStack::expertParameters() const
{
    std::vector<torch::Tensor> parameters;
    if (!m_side.isMoe())
        return parameters;
    for (const auto& module : *m_ffn)
        for (const torch::Tensor& p : module->parameters())
            parameters.push_back(p);
    return parameters;
}

std::vector<BlockNorms> BlockStack::blockNorms() const
{
    std::vector<BlockNorms> norms;
    for (std::int64_t i = 0; i < m_side.layers; ++i) {
        const std::int64_t at = pick(i, m_side.shareLayerNorm);
        const auto& attention = layerNorm(m_lnAttention, at);
        const auto& ffn = layerNorm(m_lnFfn, at);
        norms.push_back({attention.weight, attention.bias, ffn.weight, ffn.bias});
    }
    return norms;
}

const torch::nn::ModuleList& BlockStack::pathCombiners(Sublayer which) const
{
    return which == Sublayer::Attention ? m_pathAttention : which == Sublayer::Cross ? m_pathCross : m_pathFfn;
}

torch::Tensor BlockStack::pathWeights(std::int64_t block, Sublayer which) const
{
    if (!m_side.isMultiPath() || (which == Sublayer::Cross && !m_cross))
        return {};
    const torch::nn::ModuleList& combiners = pathCombiners(which);
    const auto& combiner = *combiners->ptr(pick(block, m_side.shareLayerNorm))->as<PathCombinerImpl>();
    return torch::cat({combiner.alpha, combiner.beta});
}

}  // namespace widelab
