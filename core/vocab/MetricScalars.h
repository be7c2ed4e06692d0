// defines: MetricScalar, metricScalars, metricTagPart, numberedTag: every number a
// line of metrics.jsonl holds, each under the one tag it has everywhere: in
// TensorBoard's events (export-tb, train --tensorboard) and in the app's chart
// chooser (docs/tensorboard.md lists them)
#pragma once

#include "MetricsCodec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

struct MetricScalar {
    std::string tag;  // "train/loss", "routing/block_2/router_entropy", "validation/bleu", ...
    double value = 0;
};

// A train line: "train/<curve>" for each curve it holds (one left out is no
// scalar, not a 0), train/task_loss, time/{wall,step,measurement}_seconds,
// memory/<kind>/{bytes,reserved_bytes,peak_bytes,peak_reserved_bytes}, per
// routing block routing/block_B/{router_entropy,unused_experts,max_violation,
// effective_experts,z_loss,dead_fraction,consistency (from the second routing
// block),dropped_percent/choice_K} and experts/block_B/load_vs_fair/expert_E, the
// LayerNorm divergences divergence/{ffn,attention}/{gamma,beta}_{all_pairs,
// elementwise} (when the model has LayerNorm rows), and per path-weighted
// sublayer paths/block_B/<sublayer>/{alpha/path_P,alpha/extra_F,beta,diversity}.
// An eval line: <split>/{loss,accuracy,examples}, <split>/perplexity (language
// and translation models), <split>/{bleu,chrf} (translations scored). Blocks,
// experts, choices and paths count from 1. Other lines hold none.
std::vector<MetricScalar> metricScalars(const MetricsRecord& record);

// A part of a tag: '/' separates groups, so a name from the file (a split, a
// memory kind) must not carry one; other unusual bytes become '_' too.
std::string metricTagPart(const std::string& text);
// "block_3" for ("block_", 2): tags count from 1.
std::string numberedTag(const char* what, std::int64_t zeroBased);

}  // namespace widelab
