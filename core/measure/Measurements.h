// defines: routingStats, layerNormDivergence, pathWeights: the measurements of a
// snapshot, computed from a ForwardTrace and the model's parameters
#pragma once

#include "vocab/Snapshot.h"
#include "model/ForwardTrace.h"
#include "model/WideTransformer.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace widelab {

// Statistics of every routing call recorded in `trace`, router health included
// (Snapshot.h: RoutingStats).
std::vector<RoutingStats> routingStats(const ForwardTrace& trace, std::int64_t experts);
// Eq. 9 of WideNet, both readings, for gamma and beta of the given per-block vectors ([N, M] each).
LayerNormDivergence layerNormDivergence(const torch::Tensor& gamma, const torch::Tensor& beta);
// Every multi-path sublayer's weights: the encoder's, then a translation model's decoder's
// (self-attention, cross-attention and FFN; blocks numbered after the encoder's).
std::vector<PathWeights> pathWeights(const WideTransformerImpl& model);
std::vector<float> toFloats(const torch::Tensor& tensor);


}  // namespace widelab
