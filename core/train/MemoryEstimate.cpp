#include "MemoryEstimate.h"

#include "model/ParameterCount.h"
#include "runtime/DeviceMemory.h"

#include <torch/version.h>

#include <algorithm>

namespace widelab {
namespace {

// Bytes as a count; an absurd configuration's figure saturates instead of overflowing.
std::int64_t bytes(double value)
{
    constexpr double kMax = 9.0e18;
    return static_cast<std::int64_t>(std::min(value, kMax));
}

}  // namespace

MemoryEstimate estimateTrainingMemory(const RunDocument& run, std::int64_t storedParameters, bool cuda)
{
    const ModelConfig& m = run.model;
    const TrainConfig& t = run.train;
    const double batch = static_cast<double>(t.batchSize), sequence = static_cast<double>(run.sequenceLength());
    const double d = static_cast<double>(m.dModel), heads = static_cast<double>(m.heads);
    const double attention = heads * static_cast<double>(m.headDim);
    const double ffn = static_cast<double>(m.ffnDim), paths = static_cast<double>(m.paths);
    const double chosen = m.isMoe() ? static_cast<double>(m.topK) : 1.0;

    // Weights, gradients, and two moments (AdamW, LAMB) or one momentum (SGD).
    const double parameterCopies = t.optimizer == OptimizerKind::Sgd ? 3.0 : 4.0;
    // Per token and block, what the backward pass keeps: LayerNorm inputs and
    // residuals (4 d), queries, keys, values and context (4 A), the FFN's hidden
    // layer before and after its activation (2 M) for each chosen expert; per
    // sequence and head, the scores and the softmax (2 T^2), unless a fused
    // attention kernel recomputes them; all times the paths.
    const bool fusedAttention = TORCH_VERSION_MAJOR >= 2;
    const double tokens = batch * sequence;
    const double scores = fusedAttention ? 0.0 : batch * heads * 2.0 * sequence * sequence;
    const double perBlock = paths * (tokens * (4.0 * d + 4.0 * attention + 2.0 * ffn * chosen) + scores);
    const double activationBytes = cuda && t.bf16 ? 2.0 : 4.0;

    // The loss reads fp32 logits: a language model's, one row of the vocabulary
    // per token; a classifier's, one row of the classes per sequence.
    const double logits = m.head == HeadKind::LanguageModel ? tokens * static_cast<double>(m.vocabSize)
                                                            : batch * static_cast<double>(m.numClasses);

    MemoryEstimate estimate;
    estimate.parameterBytes = bytes(4.0 * parameterCopies * static_cast<double>(storedParameters));
    estimate.activationBytes = bytes(activationBytes * static_cast<double>(m.layers) * perBlock);
    estimate.headBytes = bytes(2.0 * 4.0 * logits);
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
