// defines: CostRow, ModelCost and modelCost(): parameter counts (stored, active,
// applied) by part and forward FLOPs per token, from the configuration alone
#pragma once

#include "config/ModelConfig.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

// One part of the model. `stored`: trainable parameters that exist (a shared
// module once). `active`: the same with only top_k of the E experts.
// `applied`: parameters a token is processed by, counting a shared module once
// for every block that uses it (the depth a token sees). `flopsPerToken`: the
// part's share of ModelCost::flopsPerToken (LayerNorms and path weights do no
// matrix products and count none).
struct CostRow {
    std::string part;
    std::int64_t stored = 0;
    std::int64_t active = 0;
    std::int64_t applied = 0;
    double flopsPerToken = 0.0;
};

struct ModelCost {
    std::vector<CostRow> parts;  // embeddings, attention, ffn/experts, router, layernorms, path weights, head
    CostRow total;
    // The matrices of the encoder alone (no biases, norms or embeddings): the
    // terms of the Wide Attention paper's 2LE(2AH + M), counted per use.
    std::int64_t encoderMatrixParameters = 0;
    // Forward FLOPs per token (a multiply-add is 2), matrix products only, at a
    // sequence of max_len tokens: with top_k experts, and with the expert
    // buffers filled to capacity (min(K * C, E) slots per token; E when C <= 0).
    double flopsPerToken = 0.0;
    double flopsPerTokenAtCapacity = 0.0;
    // The same in inference, where lastBlockReadsClsRowOnly(): the last block's
    // queries, mixing, output projection and FFN for the CLS token alone, its
    // keys and values for every token. flopsPerToken otherwise.
    double inferenceFlopsPerToken = 0.0;
    std::int64_t sequenceLength = 0;

    const CostRow& part(const std::string& name) const;
    nlohmann::json toJson() const;
};

ModelCost modelCost(const ModelConfig& config);

// Whether inference computes only the CLS token's row in the last block
// (BlockStack::forward): a classifier read at its CLS token (the only row its
// head reads), without experts (whose capacity makes a token's routing depend
// on the others'), whose one mechanism answers queries apart
// (MechanismSpec::queriesApart), unless WIDELAB_DISABLE lists cls_row_only.
bool lastBlockReadsClsRowOnly(const ModelConfig& config);

}  // namespace widelab
