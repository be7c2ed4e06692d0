#include "MemoryEstimate.h"

#include <torch/version.h>

namespace widelab {

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

    MemoryEstimate estimate;
    estimate.parameterBytes = static_cast<std::int64_t>(4.0 * parameterCopies * static_cast<double>(storedParameters));
    estimate.activationBytes =
        static_cast<std::int64_t>(activationBytes * static_cast<double>(m.layers) * perBlock);
    return estimate;
}

}  // namespace widelab
