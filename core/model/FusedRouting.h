// defines: fusedRoutingBuilt, fusedRoutingRefusal, fusedRoutingRuns, fusedRoutingDecisions: a
// mixture's routing decisions (top K, slots, kept, counts) on a GPU in one CUDA
// kernel of WideLab's own (cuda/RoutingKernel.cu), where the operators of
// decideByOperators launch some twenty
#pragma once

#include "Router.h"

#include <c10/core/Device.h>

#include <string>

namespace widelab {

// Whether this build compiled the kernel: a CUDA LibTorch, and a CUDA compiler
// found when it was configured.
bool fusedRoutingBuilt();

// Why the kernel cannot route on `device`, or "" when it can: the build must
// have compiled it (a CUDA LibTorch and a CUDA compiler), the device must be a
// GPU, and on it the kernel, tried once per device, must decide two small
// problems (drops, ties, a NaN row, causal and not) as decideByOperators does.
// The try reads back to the host, so it waits while a CUDA graph is recorded
// on the current stream: the operators route until it has run.
std::string fusedRoutingRefusal(const c10::Device& device);

// Whether route() takes the kernel for these probabilities ([S, E]): on a GPU
// where fusedRoutingRefusal is "", in position priority (batch priority's
// sort by probability stays with the operators), with E and K within
// cuda/RoutingKernel.h's limits, unless WIDELAB_DISABLE lists fused_routing.
bool fusedRoutingRuns(const torch::Tensor& probs, const RoutingOptions& options);

// The kernel's decisions, equal to decideByOperators' (among equal
// probabilities the lower expert first; LibTorch's topk leaves that open); the
// gates are probs gathered at the chosen experts, in the autograd graph.
// Nothing reads back to the host. Throws std::invalid_argument when
// fusedRoutingRuns is false.
RoutingDecisions fusedRoutingDecisions(const torch::Tensor& probs, std::int64_t capacity, const RoutingOptions& options);

}  // namespace widelab
