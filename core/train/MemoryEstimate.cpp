#include "MemoryEstimate.h"

#include "model/ParameterCount.h"
#include "model/GroupedExperts.h"
#include "model/attention/MechanismSpec.h"
#include "model/Router.h"
#include "runtime/DeviceMemory.h"
#include "runtime/FastPaths.h"
#include "vocab/Format.h"

#include <algorithm>

namespace widelab {
namespace {

// Bytes as a count; an absurd configuration's figure saturates instead of overflowing.
std::int64_t bytes(double value)
{
    constexpr double kMax = 9.0e18;
    return static_cast<std::int64_t>(std::min(value, kMax));
}

// What one element of a kind of tensor takes. Under bf16 autocast the matrix
// products run in bf16 and save a bf16 copy of each fp32 input they are given;
// LayerNorm, softmax and the residual stream stay fp32. Without it (the CPU,
// or train.bf16 off) everything is fp32 and a product saves its input itself.
struct Widths {
    double product = 4.0;    // a product's output, and the input it saves
    bool castCopies = false;  // a product fed an fp32 tensor saves a bf16 copy of it
    static constexpr double fp32 = 4.0;
    static constexpr double mask = 1.0;  // a dropout mask: one byte per element (bool or uint8)

    // A product's saved input made from an fp32 tensor that nothing else keeps
    // (`kept`: something else already saves that tensor).
    double productInputFrom(bool kept) const { return castCopies ? product : (kept ? 0.0 : fp32); }
};

// Per token of one block's attention sublayer, for `heads` heads of width A
// (every path's), what the backward pass keeps beyond the q, k, v projections:
// the [T, T] probabilities of a mechanism that forms them, scaled queries, and
// the context the output projection reads.
double attentionCore(const MechanismSpec& spec, double heads, double A, double T, double dropout, bool cuda,
                     const Widths& w)
{
    const double width = heads * A;
    const bool dropping = dropout > 0.0;
    if (spec.name == "full" && fusedAttentionRuns(!cuda, dropout)) {  // the one mechanism with a fused kernel
        // The output (which the projection reads in place) and the fp32 log-sum-exp per head.
        return width * w.product + heads * Widths::fp32;
    }
    if (spec.linearCost) {
        // Linear-cost mechanisms keep O(T) per head: counted as the context alone.
        return 2.0 * width * w.product;
    }
    // Own softmax attention (and the quadratic mechanisms, as an upper bound):
    // scaled q, fp32 probabilities, with dropout its mask and the dropped copy
    // the second product reads, and the context copied for the projection.
    const double probabilities = Widths::fp32 + (dropping ? Widths::mask + w.productInputFrom(false)
                                                          : w.productInputFrom(true));
    return 2.0 * width * w.product + heads * T * probabilities;
}

// Positions of the longest example the task makes (CLS included): a batch is
// padded to its longest example, and ListOps draws none longer than
// task.max_length, however long the model's max_len.
std::int64_t longestExample(const RunDocument& run)
{
    const ModelConfig& m = run.model;
    std::int64_t length = m.imageInput() ? m.patches() : run.sequenceLength();
    if (run.task.kind == TaskKind::ListOps)
        length = std::min(length, run.task.maxLength);
    return length + (m.usesClsToken() ? 1 : 0);
}

}  // namespace

MemoryEstimate estimateTrainingMemory(const RunDocument& run, std::int64_t storedParameters, bool cuda)
{
    const ModelConfig& m = run.model;
    const TrainConfig& t = run.train;
    const bool bf16 = cuda && t.bf16;
    Widths w;
    w.product = bf16 ? 2.0 : 4.0;
    w.castCopies = bf16;

    // B = batch, T = positions of the longest example (CLS included), D = width, n = paths,
    // W = attention width per path (heads x head_dim), M = FFN hidden, V = vocabulary
    const double B = static_cast<double>(t.batchSize);
    const double T = static_cast<double>(longestExample(run));
    const double tokens = B * T;
    const double D = static_cast<double>(m.dModel), n = static_cast<double>(m.paths);
    const double W = static_cast<double>(m.attentionWidth()), M = static_cast<double>(m.ffnDim);
    const double dropout = m.dropout;
    const double droppedMask = dropout > 0.0 ? Widths::mask : 0.0;
    const double fp32 = Widths::fp32;

    // Every byte below is per token, counted from what each operation of the
    // forward pass saves for the backward pass (model/WideTransformer.cpp and
    // the modules it calls), at the peak: when the backward pass begins.

    // Attention sublayer: the LayerNorm's fp32 input, the QKV product's input,
    // q, k and v for every path, the mechanism's own, and the output's dropout mask.
    double attention = fp32 * D + w.productInputFrom(false) * D + 3.0 * n * W * w.product + n * D * droppedMask;
    for (const MechanismUse& use : mechanismUses(m))
        attention += attentionCore(*use.spec, static_cast<double>(use.heads.size()),
                                   static_cast<double>(m.headDim), T, dropout, cuda, w);

    // FFN sublayer: the LayerNorm's input and the first product's input, then
    // the hidden layer before and after its activation (ReLU saves its output,
    // which the second product reads: one tensor), and the output's dropout mask.
    const double hiddenCopies = m.activation == Activation::Relu ? 1.0 : 2.0;
    double ffn = fp32 * D + n * D * droppedMask;
    if (m.isMoe()) {
        // Per token of the expert buffers: E x capacity rows over the S tokens
        // routed. Where the experts multiply only their kept pairs (the CPU,
        // GroupedExperts.h), at most K; a GPU is counted with the buffer, as
        // where its LibTorch has no grouped products.
        const double S = tokens;
        const std::int64_t capacity =
            expertCapacity(static_cast<std::int64_t>(S), m.experts, m.topK, m.capacityFactor);
        const double bufferRows = static_cast<double>(m.experts * capacity) / std::max(S, 1.0);
        const bool grouped = !cuda && groupedExpertsRun(torch::empty({0, m.dModel}), m.ffnDim);
        const double rows = grouped ? std::min(bufferRows, static_cast<double>(m.topK)) : bufferRows;
        const double routes = static_cast<double>(m.routingCalls()) / static_cast<double>(m.layers);
        // The router reads the LayerNorm's fp32 output (saved by its fp32 product)
        // and keeps its probabilities; the experts save their buffer's rows and
        // hidden layers; the combine keeps each chosen expert's output.
        ffn += routes * (fp32 * D + 2.0 * fp32 * static_cast<double>(m.experts))
               + rows * (w.productInputFrom(false) * D + hiddenCopies * M * w.product)
               + static_cast<double>(m.topK) * D * w.product;
    } else {
        ffn += w.productInputFrom(false) * D + hiddenCopies * n * M * w.product;
    }

    // Multi-path fusion (model/PathCombiner.cpp), per sublayer: the weighted
    // sum saves its m features (n paths, and n leave-one-out means with extra
    // features); with PathNorm, those are the affine's fp32 output, and the
    // norm keeps its fp32 input and output besides. The residual that beta
    // scales is the sublayer's LayerNorm input, counted above.
    double combine = 0.0;
    if (m.isMultiPath()) {
        const double features = static_cast<double>(m.pathFeatures()) * D;
        combine = m.pathNorm ? features * (2.0 * fp32 + w.productInputFrom(false)) : features * w.product;
    }
    const double perBlock = attention + ffn + 2.0 * combine;

    // Embedding: the dropout mask on its output, a factorised embedding's
    // projection input, an image's patches (as the convolution reads them).
    double embedding = D * droppedMask;
    if (m.factorisedEmbedding())
        embedding += static_cast<double>(m.tokenEmbeddingDim()) * w.productInputFrom(false);
    if (m.imageInput())
        embedding += static_cast<double>(m.patchInputs()) * (fp32 + (bf16 ? w.product : 0.0));
    // The final LayerNorm's input and the head's product input.
    const double final = fp32 * D + w.productInputFrom(false) * D;

    // The loss: a language model's log-softmax output over the vocabulary, kept
    // fp32, and, at the start of the backward pass, the loss's gradient and the
    // log-softmax's (label smoothing adds one more); a classifier's, per sequence.
    const double gradients = t.labelSmoothing > 0.0 ? 3.0 : 2.0;
    const double logits = m.predictsTokens() && !m.isTranslation() ? tokens * static_cast<double>(m.vocabSize)
                                                            : B * static_cast<double>(m.numClasses);

    // Weights, gradients, and two moments (AdamW, LAMB) or one momentum (SGD),
    // fp32; under autocast the bf16 copies of the weights the products saved.
    const double parameterCopies = (t.optimizer == OptimizerKind::Sgd ? 3.0 : 4.0) + (bf16 ? 0.5 : 0.0);

    // train.cuda_graph: the graphs' memory pool keeps a step's activations and
    // logits for its replays, and the measured steps, which run ordinarily,
    // need their own beside it.
    const double steps = t.cudaGraph && cuda ? 2.0 : 1.0;

    MemoryEstimate estimate;
    estimate.parameterBytes = bytes(4.0 * parameterCopies * static_cast<double>(storedParameters));
    estimate.activationBytes =
        bytes(steps * tokens * (static_cast<double>(m.layers) * perBlock + embedding + final));
    estimate.headBytes = bytes(steps * (1.0 + gradients) * fp32 * logits);
    return estimate;
}

std::string memoryShortfall(const RunDocument& run, const c10::Device& device)
{
    const MemoryEstimate need = estimateTrainingMemory(run, modelCost(run.model).total.stored, device.is_cuda());
    return memoryShortfall(run, need, availableMemory(device), device.str());
}

std::string memoryShortfall(const RunDocument& run, const MemoryEstimate& need, std::int64_t available,
                            const std::string& device)
{
    if (available <= 0 || need.totalBytes() <= available)
        return {};
    return "the run needs about " + formatBytes(need.totalBytes()) + " on " + device + " (weights, gradients and "
           "optimizer state " + formatBytes(need.parameterBytes) + ", activations " + formatBytes(need.activationBytes)
           + ", logits " + formatBytes(need.headBytes) + " for a batch of " + std::to_string(run.train.batchSize)
           + " x " + std::to_string(run.sequenceLength()) + " tokens), more than the " + formatBytes(available)
           + " available there; lower train.batch_size, task.sequence_length or the model's size";
}

}  // namespace widelab
