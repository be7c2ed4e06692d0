// defines: InsightInputs, insightChunkSize, measureValidationInsights: what a
// validation measures beyond loss and accuracy (head roles on the validation
// probes, what each expert receives), from inspecting passes over a fixed sample
#pragma once

#include "vocab/Snapshot.h"
#include "data/Batch.h"
#include "model/WideTransformer.h"

#include <functional>
#include <string>
#include <vector>

namespace widelab {

struct InsightInputs {
    // The fixed sample of the validation split, in batches small enough for their
    // attention maps (insightChunkSize); classification targets are the labels.
    std::vector<Batch> sample;
    // The user's probes as the model reads them: ids [1, n] or pixels [1, C, H, W].
    std::vector<torch::Tensor> probes;
    std::function<std::string(std::int64_t)> tokenText;  // token models: an id as text
    std::vector<std::string> classNames;                 // classification; empty for language models
};

// Sequences of `length` positions per batch such that every layer's attention
// maps together stay near 256 MiB.
std::int64_t insightChunkSize(const ModelConfig& config, std::int64_t length);

// Head roles (HeadRoles.h) over the sample and the probes, with, for a language
// model, repeated random sequences drawn from `seed`; and for a mixture of
// experts, per routing block, each expert's most frequent tokens over the sample
// and (classification) the classes of the examples they come from. Evaluation
// mode, no gradient; the model's mode is restored.
ValidationInsights measureValidationInsights(WideTransformerImpl& model, const InsightInputs& inputs,
                                             std::int64_t step, std::uint64_t seed);

}  // namespace widelab
