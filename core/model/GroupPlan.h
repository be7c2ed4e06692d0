// defines: GroupPlan, planGroups, planGroupsByOperators, groupPlanRefusal: the
// order a mixture's (token, choice) pairs take through its grouped products,
// by LibTorch's operators (a stable sort and a dozen more) or, on a GPU, one
// CUDA kernel of WideLab's own (cuda/GroupPlanKernel.cu)
#pragma once

#include <c10/core/Device.h>
#include <torch/types.h>

#include <cstdint>
#include <string>

namespace widelab {

// S tokens, K choices, E experts, P = S * K pairs (pair s * K + k is token s's
// choice k). The rows are the pairs sorted by key, the pair's expert or E for
// a dropped pair, pairs of one key in pair order; the dropped pairs' rows join
// the last expert's group, as rows of zeros.
struct GroupPlan {
    torch::Tensor row;     // [P] int64: each pair's row
    torch::Tensor token;   // [P] int64: each row's token, S for a dropped pair's
    torch::Tensor rowKey;  // [P] int64: each row's key
    torch::Tensor ends;    // [E] int32: where each expert's group ends (the last at P)
};

// expert [S, K] (int64, each in 0 .. E - 1) and kept [S, K] (bool), on one
// device. The kernel where groupPlanRefusal is "" for the device, else the
// operators; the same plan either way.
GroupPlan planGroups(const torch::Tensor& expert, const torch::Tensor& kept, std::int64_t experts);
GroupPlan planGroupsByOperators(const torch::Tensor& expert, const torch::Tensor& kept, std::int64_t experts);

// Why the kernel cannot plan on `device` for `experts`, or "": off with
// WIDELAB_DISABLE=fused_routing; the build must have compiled it, for a GPU,
// up to 256 experts; and on its first use on a GPU it must plan as the
// operators do on a few problems (not tried while a CUDA graph is being
// recorded there: it refuses then, and tries at the next call).
std::string groupPlanRefusal(const c10::Device& device, std::int64_t experts);

}  // namespace widelab
