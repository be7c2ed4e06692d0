#include "WideTransformer.h"

#include "BatchedMatmul.h"
#include "Dropout.h"
#include "Init.h"
#include "runtime/PhaseTimer.h"

#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace widelab {
namespace {

// Added to the score of a key a query must not see. Finite, so that a query
// with no visible key (a row of padding) gets a uniform row instead of NaN;
// the mask is fp32 and Attention narrows it safely to the scores' dtype.
constexpr double kMasked = -1.0e9;

// The modules of the task's head, by the names they are registered under.
constexpr const char* kHeadModules[] = {"pooler", "classifier", "lm_head"};
constexpr const char* kPooler = kHeadModules[0];
constexpr const char* kClassifier = kHeadModules[1];
constexpr const char* kLanguageModelHead = kHeadModules[2];

}  // namespace

bool WideTransformerImpl::isTaskHead(const std::string& parameterName)
{
    for (const char* module : kHeadModules)
        if (parameterName.rfind(std::string(module) + ".", 0) == 0)
            return true;
    return false;
}

WideTransformerImpl::WideTransformerImpl(const ModelConfig& config) : m_config(config)
{
    const ModelConfig& c = m_config;
    m_embed = register_module("embed", Embedding(c));
    m_encoder = std::make_unique<BlockStack>(c, false, *this);
    m_finalNorm = register_module("final_ln", makeLayerNorm(c.dModel));
    if (c.isTranslation()) {
        // The output is tied to the token embedding (the Multi-Path paper's baseline): no head of its own.
        auto decoder = register_module("decoder", std::make_shared<torch::nn::Module>());
        m_decoder = std::make_unique<BlockStack>(c.decoderSide(), true, *decoder);
        m_decoderNorm = decoder->register_module("final_ln", makeLayerNorm(c.dModel));
        return;
    }
    if (c.head == HeadKind::Classification && c.pooler)
        m_pooler = register_module(kPooler, torch::nn::Linear(c.dModel, c.dModel));
    m_output = register_module(c.head == HeadKind::Classification ? kClassifier : kLanguageModelHead,
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
    m_encoder->keepExperts(first, count);
    if (m_decoder)
        m_decoder->keepExperts(first, count);
    m_placement = std::move(placement);
}

std::vector<torch::Tensor> WideTransformerImpl::expertParameters() const
{
    std::vector<torch::Tensor> parameters = m_encoder->expertParameters();
    if (m_decoder)
        for (const torch::Tensor& p : m_decoder->expertParameters())
            parameters.push_back(p);
    return parameters;
}

ModelOutput WideTransformerImpl::forward(const torch::Tensor& input, const torch::Tensor& mask,
                                         const TargetInput& target, const torch::Tensor& routed)
{
    return run(input, mask, target, routed, nullptr);
}

ModelOutput WideTransformerImpl::inspect(const torch::Tensor& input, const torch::Tensor& mask, ForwardTrace& trace,
                                         const TargetInput& target, const torch::Tensor& routed)
{
    trace.blocks.clear();
    return run(input, mask, target, routed, &trace);
}

namespace {

// Token ids [B, T], T <= max_len, ids inside the vocabulary (checked on the CPU).
// `what` names them in messages.
void checkTokens(const ModelConfig& c, const torch::Tensor& ids, const torch::Tensor& mask,
                 const std::string& what = "model input")
{
    if (ids.dim() != 2)
        throw std::invalid_argument(what + ": expected token ids of shape [batch, length], got "
                                    + std::to_string(ids.dim()) + " dimensions");
    if (ids.scalar_type() != torch::kLong && ids.scalar_type() != torch::kInt)
        throw std::invalid_argument(what + ": expected int64 token ids of shape [batch, length], got "
                                    + std::string(c10::toString(ids.scalar_type())));
    if (ids.size(0) < 1 || ids.size(1) < 1)
        throw std::invalid_argument(what + ": empty batch (" + std::to_string(ids.size(0)) + " sequences of "
                                    + std::to_string(ids.size(1)) + " tokens)");
    if (ids.size(1) > c.maxLen)
        throw std::invalid_argument(what + ": " + std::to_string(ids.size(1)) + " tokens exceed model.max_len ("
                                    + std::to_string(c.maxLen) + ")");
    if (mask.defined() && mask.sizes() != ids.sizes())
        throw std::invalid_argument(what + ": the mask's shape differs from the ids' shape");
    if (ids.is_cpu()) {
        // Cheap on the CPU; on a GPU the check would stall the step, and an id out
        // of range there is a device assert, so data must be checked before upload.
        // The two values are read in place, not through item(): on the CPU nothing
        // waits, and a step's operators read nothing back (tst_nosync).
        const auto [low, high] = torch::aminmax(ids.to(torch::kLong));
        const std::int64_t lowest = *low.data_ptr<std::int64_t>(), highest = *high.data_ptr<std::int64_t>();
        if (lowest < 0 || highest >= c.vocabSize)
            throw std::invalid_argument(what + ": token id " + std::to_string(lowest < 0 ? lowest : highest)
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

// The masks of a token sequence: `valid` [B, T] (undefined: every token real)
// as an additive bias on the keys, plus the causal rule when `causal`.
torch::Tensor attentionBias(const torch::Tensor& valid, std::int64_t B, std::int64_t T, bool causal,
                            const torch::TensorOptions& options)
{
    torch::Tensor bias;  // broadcastable to [B, 1, T, T]
    if (valid.defined())
        bias = torch::zeros({B, 1, 1, T}, options.dtype(torch::kFloat32))
                   .masked_fill(valid.logical_not().view({B, 1, 1, T}), kMasked);
    if (causal) {
        const torch::Tensor future = torch::ones({T, T}, options.dtype(torch::kBool)).triu(1);
        const torch::Tensor rule = torch::zeros({1, 1, T, T}, options.dtype(torch::kFloat32))
                                       .masked_fill(future.view({1, 1, T, T}), kMasked);
        bias = bias.defined() ? bias + rule : rule;
    }
    return bias;
}

// A mask as the blocks see it: bool, with a CLS token's place (real) first.
torch::Tensor validTokens(const ModelConfig& c, const torch::Tensor& mask)
{
    const torch::Tensor valid = mask.to(torch::kBool);
    if (!c.usesClsToken())
        return valid;
    return torch::cat({torch::ones({valid.size(0), 1}, valid.options()), valid}, 1);
}

// Only real tokens are routed to experts: their flat positions, or undefined for all.
torch::Tensor routedTokens(const ModelConfig& c, const torch::Tensor& valid)
{
    if (c.isMoe() && valid.defined())
        return torch::nonzero(valid.reshape({-1})).squeeze(1);
    return {};
}

}  // namespace

ModelOutput WideTransformerImpl::run(const torch::Tensor& input, const torch::Tensor& mask, const TargetInput& target,
                                     const torch::Tensor& routed, ForwardTrace* trace)
{
    const ModelConfig& c = m_config;
    if (c.imageInput())
        checkPixels(c, input, mask);
    else
        checkTokens(c, input, mask);
    if (c.isTranslation() != target.ids.defined())
        throw std::invalid_argument(c.isTranslation() ? "translation model input: the decoder's target ids are missing"
                                                      : "model input: only a translation model takes target ids");
    StackPass pass;
    pass.tokenIndex = routed;
    pass.readsFirstRowOnly = c.usesClsToken() && !m_everyRow;  // head() reads the CLS token's row alone
    const torch::Tensor h = encode(input, mask, pass, trace);
    if (c.isTranslation())
        return {decode(h, pass.valid, target, pass), pass.balanceLoss, pass.zLoss};
    return {head(h, pass.valid), pass.balanceLoss, pass.zLoss};
}

torch::Tensor WideTransformerImpl::encode(const torch::Tensor& input, const torch::Tensor& mask, StackPass& pass,
                                          ForwardTrace* trace)
{
    const ModelConfig& c = m_config;
    // B = batch, T = sequence (with CLS)
    torch::Tensor h = m_embed(input.is_floating_point() ? input.to(m_embed->position->weight.dtype()) : input);
    const std::int64_t B = h.size(0), T = h.size(1);
    if (mask.defined())
        pass.valid = validTokens(c, mask);
    pass.bias = attentionBias(pass.valid, B, T, c.causal(), h.options());
    // Given by the caller (routedPositions on the host), or found here.
    pass.tokenIndex = pass.tokenIndex.defined() && c.isMoe() && pass.valid.defined() ? pass.tokenIndex.to(h.device())
                                                                                     : routedTokens(c, pass.valid);
    if (trace) {
        trace->tokenIndex = pass.tokenIndex.defined()
                                ? pass.tokenIndex
                                : torch::arange(B * T, torch::TensorOptions(torch::kLong).device(h.device()));
        trace->lens.clear();
    }
    pass.training = is_training();
    pass.trace = trace;
    pass.sumOverRanks = m_sumOverRanks;
    pass.placement = m_placement.get();
    pass.balanceLoss = torch::zeros({}, h.options().dtype(torch::kFloat32));
    pass.zLoss = torch::zeros({}, h.options().dtype(torch::kFloat32));
    // Logit lens: what the model's head makes of the residual stream at this point
    // (a translation model's head reads the decoder only).
    if (trace && trace->captureLens && !c.isTranslation())
        pass.afterSublayer = [&](const torch::Tensor& now) {
            trace->lens.push_back(head(m_finalNorm(now), pass.valid).detach());
        };

    h = applyDropout(h, c.dropout, is_training());
    return m_finalNorm(m_encoder->forward(h, pass));
}

DecoderState WideTransformerImpl::beginDecoding(const torch::Tensor& source, const torch::Tensor& mask,
                                                std::int64_t capacity)
{
    const ModelConfig& c = m_config;
    if (!m_decoder)
        throw std::invalid_argument("decoding: the model is not a translation model (model.head \"translation\")");
    checkTokens(c, source, mask);
    StackPass pass;
    const torch::Tensor memory = encode(source, mask, pass, nullptr);
    const torch::Tensor memoryBias = attentionBias(pass.valid, memory.size(0), memory.size(1), false, memory.options());
    return m_decoder->beginDecoding(memory, memoryBias, pass.valid, std::clamp<std::int64_t>(capacity, 1, c.maxLen));
}

torch::Tensor WideTransformerImpl::decodeStep(DecoderState& state, const torch::Tensor& tokens)
{
    if (!m_decoder)
        throw std::invalid_argument("decoding: the model is not a translation model (model.head \"translation\")");
    if (state.length >= state.capacity)
        throw std::invalid_argument("decoding: step " + std::to_string(state.length + 1) + " is past the "
                                    + std::to_string(state.capacity) + " positions the decoder's caches hold");
    const torch::Tensor ids = tokens.reshape({-1, 1});
    checkTokens(m_config, ids, {}, "decoding step");
    const torch::Tensor h = m_decoderNorm(m_decoder->step(m_embed->forward(ids, state.length), state));
    ++state.length;
    return head(h, {}).squeeze(1);
}

torch::Tensor WideTransformerImpl::decode(const torch::Tensor& memory, const torch::Tensor& sourceValid,
                                          const TargetInput& target, StackPass& encoded)
{
    const ModelConfig& c = m_config;
    checkTokens(c, target.ids, target.mask, "translation target");
    if (target.ids.size(0) != memory.size(0))
        throw std::invalid_argument("translation model input: " + std::to_string(target.ids.size(0))
                                    + " targets for " + std::to_string(memory.size(0)) + " sources");
    // B = batch, T = target length, S = source length
    torch::Tensor h = m_embed(target.ids);
    const std::int64_t B = h.size(0), T = h.size(1), S = memory.size(1);

    StackPass pass;
    if (target.mask.defined())
        pass.valid = target.mask.to(torch::kBool);
    pass.bias = attentionBias(pass.valid, B, T, true, h.options());
    pass.tokenIndex = routedTokens(c, pass.valid);
    pass.memory = memory;
    pass.memoryValid = sourceValid;
    pass.memoryBias = attentionBias(sourceValid, B, S, false, h.options());
    pass.training = encoded.training;
    pass.trace = encoded.trace;
    pass.firstBlock = c.layers;
    pass.sumOverRanks = encoded.sumOverRanks;
    pass.placement = encoded.placement;
    pass.balanceLoss = encoded.balanceLoss;
    pass.zLoss = encoded.zLoss;
    if (ForwardTrace* trace = encoded.trace; trace && trace->captureLens)
        pass.afterSublayer = [this, trace](const torch::Tensor& now) {
            trace->lens.push_back(head(m_decoderNorm(now), {}).detach());
        };

    h = applyDropout(h, c.dropout, is_training());
    h = m_decoderNorm(m_decoder->forward(h, pass));
    encoded.balanceLoss = pass.balanceLoss;
    encoded.zLoss = pass.zLoss;
    return head(h, pass.valid);
}

torch::Tensor WideTransformerImpl::head(const torch::Tensor& h, const torch::Tensor& valid)
{
    const ModelConfig& c = m_config;
    if (c.isTranslation())
        return torch::matmul(h, m_embed->token->weight.t());  // tied to the token embedding
    if (c.predictsTokens())
        return linearLayer(m_output, h);

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
        pooled = torch::tanh(linearLayer(m_pooler, pooled));
    return linearLayer(m_output, pooled);
}

void WideTransformerImpl::beginStep(std::int64_t step)
{
    m_encoder->beginStep(step);
    if (m_decoder)
        m_decoder->beginStep(step);
}

torch::Tensor WideTransformerImpl::routedPositions(const torch::Tensor& mask) const
{
    // A dense model routes nothing: no copy of the mask either.
    return mask.defined() && m_config.isMoe() ? routedTokens(m_config, validTokens(m_config, mask)) : torch::Tensor();
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
