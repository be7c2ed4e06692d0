// defines: routingStats, layerNormDivergence, pathWeights, UnusedExpertWatch: the
// measurements of a snapshot, computed from a ForwardTrace and the model's parameters
#pragma once

#include "Snapshot.h"
#include "model/ForwardTrace.h"
#include "model/WideTransformer.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace widelab {

// Statistics of every routing call recorded in `trace`.
std::vector<RoutingStats> routingStats(const ForwardTrace& trace, std::int64_t experts);
// Eq. 9 of WideNet, both readings, for gamma and beta of the given per-block vectors ([N, M] each).
LayerNormDivergence layerNormDivergence(const torch::Tensor& gamma, const torch::Tensor& beta);
std::vector<PathWeights> pathWeights(const WideTransformerImpl& model);
std::vector<float> toFloats(const torch::Tensor& tensor);

// Watches routing for dead experts. An expert that receives no token in one
// measured batch may be chance; one that receives none in `deadAfter`
// measurements in a row is dead: update() says so once (a warning), and again
// when it receives tokens later (info). Returns (level, message) pairs; blocks
// and experts are numbered from 1 in them.
class UnusedExpertWatch {
public:
    explicit UnusedExpertWatch(int deadAfter = 3) : m_deadAfter(deadAfter) {}
    std::vector<std::pair<std::string, std::string>> update(const std::vector<RoutingStats>& routing,
                                                            std::int64_t step);

private:
    int m_deadAfter;
    std::map<std::int64_t, std::vector<int>> m_idle;  // block -> measurements in a row without tokens, per expert
};

}  // namespace widelab
