// defines: GroupPlanArgs, launchGroupPlan, kGroupPlanMaxExperts: the order of
// a mixture's (token, choice) pairs for its grouped products in one CUDA
// kernel (compiled by nvcc where the build has a CUDA compiler; this header
// includes neither LibTorch nor CUDA)
#pragma once

#include <cstdint>

namespace widelab::cuda {

// The experts' counters (and the dropped pairs') live in the block's shared
// memory, one row per warp (33 KiB at 256 experts).
inline constexpr int kGroupPlanMaxExperts = 256;

// S tokens, K choices, E experts, P = S * K pairs (pair s * K + k is token s's
// choice k); every pointer is device memory. The rows are the pairs sorted by
// key (the pair's expert, E for a dropped pair), pairs of one key in pair
// order: what a stable sort of the keys gives.
struct GroupPlanArgs {
    const std::int64_t* expert = nullptr;  // [P] each pair's expert
    const bool* kept = nullptr;            // [P] whether the capacity kept the pair
    std::int64_t tokens = 0;               // S; S * K below 2^31
    int choices = 0;                       // K >= 1
    int experts = 0;                       // E, 1 .. kGroupPlanMaxExperts
    std::int64_t* row = nullptr;           // out [P]: each pair's row
    std::int64_t* token = nullptr;         // out [P]: each row's token, S for a dropped pair's
    std::int64_t* rowKey = nullptr;        // out [P]: each row's key
    int* ends = nullptr;                   // out [E]: where each expert's group ends; the dropped
                                           // pairs' rows join the last group (ends[E - 1] = P)
    void* stream = nullptr;                // the cudaStream_t to queue on
};

// Queues the kernel (one block) on args.stream; nothing waits for it. Returns
// the CUDA runtime's error for the launch, or nullptr.
const char* launchGroupPlan(const GroupPlanArgs& args);

}  // namespace widelab::cuda
