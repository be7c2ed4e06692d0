#include "WideTransformer.h"

#include "Dropout.h"
#include "Init.h"
#include "runtime/PhaseTimer.h"

#include <torch/nn/functional/loss.h>

#include <stdexcept>
#include <string>

namespace widelab {
namespace {

// Added to the score of a key a query must not see. Finite, so that a query
// with no visible key (a row of padding) gets a uniform row instead of NaN;
// the mask is fp32 and Attention narrows it safely to the scores' dtype.
constexpr double kMasked = -1.0e9;

torch::nn::LayerNorm makeLayerNorm(std::int64_t width)
{
    return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(1e-5));
}

}  // namespace

WideTransformerImpl::WideTransformerImpl(const ModelConfig& config) : m_config(config)
{
    const ModelConfig& c = m_config;
    m_embed = register_module("embed", Embedding(c));

    m_attention = register_module("attention", torch::nn::ModuleList());
    for (std::int64_t i = 0; i < c.attentionModules(); ++i)
        m_attention->push_back(Attention(c));

    m_ffn = register_module("ffn", torch::nn::ModuleList());
    const std::int64_t units = c.isMoe() ? c.experts : c.paths;
    for (std::int64_t i = 0; i < c.ffnModules(); ++i)
        m_ffn->push_back(FeedForward(units, c.dModel, c.ffnDim, c.activation));

    m_router = register_module("router", torch::nn::ModuleList());
    for (std::int64_t i = 0; i < c.routerModules(); ++i)
        m_router->push_back(Router(c.dModel, c.experts));

    m_lnAttention = register_module("ln_att", torch::nn::ModuleList());
    m_lnFfn = register_module("ln_ffn", torch::nn::ModuleList());
    m_pathAttention = register_module("path_att", torch::nn::ModuleList());
    m_pathFfn = register_module("path_ffn", torch::nn::ModuleList());
    const PathCombinerOptions paths{c.paths, c.dModel, c.pathNorm, c.learnablePathWeights, c.pathExtraFeatures};
    for (std::int64_t i = 0; i < c.layerNormSets(); ++i) {
        m_lnAttention->push_back(makeLayerNorm(c.dModel));
        m_lnFfn->push_back(makeLayerNorm(c.dModel));
        if (c.isMultiPath()) {
            m_pathAttention->push_back(PathCombiner(paths));
            m_pathFfn->push_back(PathCombiner(paths));
        }
    }

    m_finalNorm = register_module("final_ln", makeLayerNorm(c.dModel));
    if (c.head == HeadKind::Classification && c.pooler)
        m_pooler = register_module("pooler", torch::nn::Linear(c.dModel, c.dModel));
    m_output = register_module(c.head == HeadKind::Classification ? "classifier" : "lm_head",
                               torch::nn::Linear(c.dModel, c.outputSize()));

    torch::NoGradGuard noGrad;
    for (torch::nn::Linear linear : {m_pooler, m_output}) {
        if (!linear)
            continue;
        xavierUniformStacked(linear->weight);
        linear->bias.zero_();
    }
}

void WideTransformerImpl::placeExperts(std::shared_ptr<ExpertPlacement> placement, std::int64_t first,
                                       std::int64_t count)
{
    if (!m_config.isMoe())
        throw std::invalid_argument("placing experts: the model has no experts");
    for (const auto& module : *m_ffn)
        module->as<FeedForwardImpl>()->keepUnits(first, count);
    m_placement = std::move(placement);
}

std::vector<torch::Tensor> WideTransformerImpl::expertParameters() const
{
    std::vector<torch::Tensor> parameters;
    if (!m_config.isMoe())
        return parameters;
    for (const auto& module : *m_ffn)
        for (const torch::Tensor& p : module->parameters())
            parameters.push_back(p);
    return parameters;
}

ModelOutput WideTransformerImpl::forward(const torch::Tensor& input, const torch::Tensor& mask)
{
    return run(input, mask, nullptr);
}

ModelOutput WideTransformerImpl::inspect(const torch::Tensor& input, const torch::Tensor& mask, ForwardTrace& trace)
{
    trace.blocks.clear();
    return run(input, mask, &trace);
}

namespace {

// Token ids [B, T], T <= max_len, ids inside the vocabulary (checked on the CPU).
void checkTokens(const ModelConfig& c, const torch::Tensor& ids, const torch::Tensor& mask)
{
    if (ids.dim() != 2)
        throw std::invalid_argument("model input: expected token ids of shape [batch, length], got "
                                    + std::to_string(ids.dim()) + " dimensions");
    if (ids.scalar_type() != torch::kLong && ids.scalar_type() != torch::kInt)
        throw std::invalid_argument("model input: expected int64 token ids of shape [batch, length], got "
                                    + std::string(c10::toString(ids.scalar_type())));
    if (ids.size(0) < 1 || ids.size(1) < 1)
        throw std::invalid_argument("model input: empty batch (" + std::to_string(ids.size(0)) + " sequences of "
                                    + std::to_string(ids.size(1)) + " tokens)");
    if (ids.size(1) > c.maxLen)
        throw std::invalid_argument("model input: " + std::to_string(ids.size(1)) + " tokens exceed model.max_len ("
                                    + std::to_string(c.maxLen) + ")");
    if (mask.defined() && mask.sizes() != ids.sizes())
        throw std::invalid_argument("model input: the mask's shape differs from the ids' shape");
    if (ids.is_cpu()) {
        // Cheap on the CPU; on a GPU the check would stall the step, and an id out
        // of range there is a device assert, so data must be checked before upload.
        const auto [low, high] = torch::aminmax(ids);
        if (low.item<std::int64_t>() < 0 || high.item<std::int64_t>() >= c.vocabSize)
            throw std::invalid_argument("model input: token id "
                                        + std::to_string(low.item<std::int64_t>() < 0 ? low.item<std::int64_t>()
                                                                                       : high.item<std::int64_t>())
                                        + " is outside the vocabulary 0.." + std::to_string(c.vocabSize - 1)
                                        + " (model.vocab_size)");
    }
}

// Pixels [B, C, H, W] floating point, C = model.channels, H = W = model.image_size; no mask.
void checkPixels(const ModelConfig& c, const torch::Tensor& pixels, const torch::Tensor& mask)
{
    const std::string expected = "[batch, " + std::to_string(c.channels) + ", " + std::to_string(c.imageSize) + ", "
                                 + std::to_string(c.imageSize) + "] (model.channels, model.image_size)";
    if (pixels.dim() != 4)
        throw std::invalid_argument("model input: expected pixels of shape " + expected + ", got "
                                    + std::to_string(pixels.dim()) + " dimensions");
    if (!pixels.is_floating_point())
        throw std::invalid_argument("model input: expected floating-point pixels (normalised), got "
                                    + std::string(c10::toString(pixels.scalar_type())));
    if (pixels.size(0) < 1)
        throw std::invalid_argument("model input: empty batch");
    if (pixels.size(1) != c.channels || pixels.size(2) != c.imageSize || pixels.size(3) != c.imageSize)
        throw std::invalid_argument("model input: expected pixels of shape " + expected + ", got ["
                                    + std::to_string(pixels.size(0)) + ", " + std::to_string(pixels.size(1)) + ", "
                                    + std::to_string(pixels.size(2)) + ", " + std::to_string(pixels.size(3)) + "]");
    if (mask.defined())
        throw std::invalid_argument("model input: image input takes no mask (every patch is real)");
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

}  // namespace

ModelOutput WideTransformerImpl::run(const torch::Tensor& input, const torch::Tensor& mask, ForwardTrace* trace)
{
    const ModelConfig& c = m_config;
    if (c.imageInput())
        checkPixels(c, input, mask);
    else
        checkTokens(c, input, mask);

    // B = batch, T = sequence (with CLS), D = width
    torch::Tensor h = m_embed(input.is_floating_point() ? input.to(m_embed->position->weight.dtype()) : input);
    const std::int64_t B = h.size(0), T = h.size(1), D = h.size(2);

    torch::Tensor valid;  // [B, T] bool, undefined when every token is real
    if (mask.defined()) {
        valid = mask.to(torch::kBool);
        if (c.usesClsToken())
            valid = torch::cat({torch::ones({B, 1}, valid.options()), valid}, 1);
    }
    torch::Tensor bias;  // broadcastable to [B, 1, T, T]
    if (valid.defined())
        bias = torch::zeros({B, 1, 1, T}, h.options().dtype(torch::kFloat32))
                   .masked_fill(valid.logical_not().view({B, 1, 1, T}), kMasked);
    if (c.head == HeadKind::LanguageModel) {
        const torch::Tensor future = torch::ones({T, T}, torch::TensorOptions(torch::kBool).device(h.device())).triu(1);
        const torch::Tensor causal = torch::zeros({1, 1, T, T}, h.options().dtype(torch::kFloat32))
                                         .masked_fill(future.view({1, 1, T, T}), kMasked);
        bias = bias.defined() ? bias + causal : causal;
    }
    // Only real tokens are routed to experts.
    torch::Tensor tokenIndex;
    if (c.isMoe() && valid.defined())
        tokenIndex = torch::nonzero(valid.reshape({-1})).squeeze(1);
    if (trace)
        trace->tokenIndex = tokenIndex.defined() ? tokenIndex : torch::arange(B * T, torch::TensorOptions(torch::kLong).device(h.device()));

    h = applyDropout(h, c.dropout, is_training());

    torch::Tensor balanceLoss = torch::zeros({}, h.options().dtype(torch::kFloat32));
    torch::Tensor zLoss = torch::zeros({}, h.options().dtype(torch::kFloat32));
    Routing groupRouting;
    if (trace)
        trace->lens.clear();
    // Logit lens: what the model's head makes of the residual stream at this point.
    auto lens = [&] {
        if (trace && trace->captureLens)
            trace->lens.push_back(head(m_finalNorm(h), valid).detach());
    };
    for (std::int64_t i = 0; i < c.layers; ++i) {
        BlockTrace* blockTrace = nullptr;
        std::vector<Ablation> ablated;  // this block's
        const Ablation* expertAblated = nullptr;
        if (trace) {
            trace->blocks.emplace_back();
            blockTrace = &trace->blocks.back();
            for (const Ablation& a : trace->ablations)
                if (a.block == i)
                    ablated.push_back(a);
            for (const Ablation& a : ablated)
                if (a.part == AblationPart::Expert)
                    expertAblated = &a;
        }
        auto& attention = *m_attention->ptr(pick(i, c.shareAttention))->as<AttentionImpl>();
        auto& lnAttention = *m_lnAttention->ptr(pick(i, c.shareLayerNorm))->as<torch::nn::LayerNormImpl>();
        torch::Tensor weights;
        const bool wantWeights = blockTrace && trace->captureAttention;
        const torch::Tensor normed = lnAttention.forward(h);
        torch::Tensor attended;
        {
            const PhaseScope timed(Phase::Attention);
            attended = attention.forward(normed, bias, valid, wantWeights ? &weights : nullptr, ablated);
        }
        if (wantWeights)
            blockTrace->attention = weights.detach();
        h = sublayer(h, attended, i, true, ablated, valid);
        lens();

        auto& lnFfn = *m_lnFfn->ptr(pick(i, c.shareLayerNorm))->as<torch::nn::LayerNormImpl>();
        const torch::Tensor x = lnFfn.forward(h);
        torch::Tensor transformed;
        if (c.isMoe()) {
            const torch::Tensor moe = feedForward(x.reshape({B * T, D}), i, tokenIndex, groupRouting, balanceLoss, zLoss,
                                                  blockTrace && trace->captureRouting ? blockTrace : nullptr,
                                                  expertAblated);
            transformed = moe.view({1, B, T, D});
        } else {
            auto& ffn = *m_ffn->ptr(pick(i, c.shareFfn))->as<FeedForwardImpl>();
            const PhaseScope timed(Phase::FeedForward);
            transformed = ffn.forwardShared(x.reshape({B * T, D})).view({c.paths, B, T, D});
        }
        h = sublayer(h, transformed, i, false, ablated, valid);
        lens();
        if (blockTrace && trace->captureResidual)
            blockTrace->residualNorm = meanTokenNorm(h.detach(), valid);
    }
    h = m_finalNorm(h);
    return {head(h, valid), balanceLoss, zLoss};
}

torch::Tensor WideTransformerImpl::sublayer(const torch::Tensor& h, const torch::Tensor& raw, std::int64_t block,
                                           bool attention, const std::vector<Ablation>& ablated,
                                           const torch::Tensor& valid)
{
    const ModelConfig& c = m_config;
    const PhaseScope timed(Phase::Paths);
    torch::Tensor paths = applyDropout(raw, c.dropout, is_training());
    for (const Ablation& a : ablated) {
        if (a.part != AblationPart::Sublayer || a.index != (attention ? 0 : 1))
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
    if (!c.isMultiPath())
        return h + paths[0];
    const auto& combiners = attention ? m_pathAttention : m_pathFfn;
    std::vector<Ablation> pathsAblated;  // this sublayer's, indexed among its own paths
    const std::int64_t first = attention ? 0 : c.paths;
    for (Ablation a : ablated) {
        if (a.part != AblationPart::Path || a.index < first || a.index >= first + c.paths)
            continue;
        a.index -= first;
        pathsAblated.push_back(a);
    }
    return combiners->ptr(pick(block, c.shareLayerNorm))->as<PathCombinerImpl>()->forward(h, paths, pathsAblated, valid);
}

torch::Tensor WideTransformerImpl::feedForward(const torch::Tensor& x, std::int64_t block,
                                              const torch::Tensor& tokenIndex, Routing& groupRouting,
                                              torch::Tensor& balanceLoss, torch::Tensor& zLoss, BlockTrace* trace,
                                              const Ablation* expertAblated)
{
    const ModelConfig& c = m_config;
    torch::Tensor tokens;
    {
        const PhaseScope timed(Phase::Routing);
        tokens = tokenIndex.defined() ? x.index_select(0, tokenIndex) : x;  // [S, D]
        if (c.routesAt(block)) {
            const auto& router = *m_router->ptr(pick(block, c.shareRouter))->as<RouterImpl>();
            RoutingOptions options = RoutingOptions::fromConfig(c, is_training());
            if (is_training())
                options.sumOverRanks = m_sumOverRanks;
            groupRouting = route(tokens, router.weight, options);
            balanceLoss = balanceLoss + groupRouting.balanceLoss;
            if (groupRouting.zLoss.defined())
                zLoss = zLoss + groupRouting.zLoss;
        }
    }
    auto& experts = *m_ffn->ptr(pick(block, c.shareFfn))->as<FeedForwardImpl>();
    const torch::Tensor y = dispatchCombine(tokens, groupRouting, experts, expertAblated, m_placement.get());
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

torch::Tensor WideTransformerImpl::head(const torch::Tensor& h, const torch::Tensor& valid)
{
    const ModelConfig& c = m_config;
    if (c.head == HeadKind::LanguageModel)
        return m_output(h);

    torch::Tensor pooled;
    if (c.pooling == Pooling::Cls) {
        pooled = h.select(1, 0);
    } else if (valid.defined()) {
        const torch::Tensor weight = valid.to(h.dtype()).unsqueeze(-1);  // [B, T, 1]
        pooled = (h * weight).sum(1) / weight.sum(1).clamp_min(1.0);
    } else {
        pooled = h.mean(1);
    }
    if (m_pooler)
        pooled = torch::tanh(m_pooler(pooled));
    return m_output(pooled);
}

void WideTransformerImpl::beginStep(std::int64_t step)
{
    for (std::int64_t i = 0; i < m_config.attentionModules(); ++i)
        m_attention->ptr(i)->as<AttentionImpl>()->beginStep(step);
}

std::vector<BlockNorms> WideTransformerImpl::blockNorms() const
{
    std::vector<BlockNorms> norms;
    for (std::int64_t i = 0; i < m_config.layers; ++i) {
        const std::int64_t at = pick(i, m_config.shareLayerNorm);
        const auto& attention = *m_lnAttention->ptr(at)->as<torch::nn::LayerNormImpl>();
        const auto& ffn = *m_lnFfn->ptr(at)->as<torch::nn::LayerNormImpl>();
        norms.push_back({attention.weight, attention.bias, ffn.weight, ffn.bias});
    }
    return norms;
}

torch::Tensor WideTransformerImpl::attentionPathWeights(std::int64_t block) const
{
    if (!m_config.isMultiPath())
        return {};
    const auto& combiner = *m_pathAttention->ptr(pick(block, m_config.shareLayerNorm))->as<PathCombinerImpl>();
    return torch::cat({combiner.alpha, combiner.beta});
}

torch::Tensor WideTransformerImpl::ffnPathWeights(std::int64_t block) const
{
    if (!m_config.isMultiPath())
        return {};
    const auto& combiner = *m_pathFfn->ptr(pick(block, m_config.shareLayerNorm))->as<PathCombinerImpl>();
    return torch::cat({combiner.alpha, combiner.beta});
}

torch::Tensor taskLoss(const ModelConfig& config, const torch::Tensor& logits, const torch::Tensor& targets,
                       const torch::Tensor& mask, double labelSmoothing)
{
    if (config.head == HeadKind::Classification)
        return torch::cross_entropy_loss(logits.to(torch::kFloat32), targets, {}, at::Reduction::Mean, -100,
                                         labelSmoothing);
    const std::int64_t V = logits.size(-1);
    const torch::Tensor perToken = torch::cross_entropy_loss(logits.reshape({-1, V}).to(torch::kFloat32),
                                                             targets.reshape({-1}), {}, at::Reduction::None, -100,
                                                             labelSmoothing);
    if (!mask.defined())
        return perToken.mean();
    const torch::Tensor weight = mask.reshape({-1}).to(torch::kFloat32);
    return (perToken * weight).sum() / weight.sum().clamp_min(1.0);
}

torch::Tensor trainingLoss(const ModelConfig& config, const torch::Tensor& task, const ModelOutput& output)
{
    torch::Tensor loss = task + config.balanceLossWeight * output.balanceLoss;
    if (config.routerZLossWeight > 0.0)
        loss = loss + config.routerZLossWeight * output.routerZLoss;
    return loss;
}

}  // namespace widelab
