// defines: RoutingKernelArgs, launchRoutingKernel, kRoutingKernelMaxExperts,
// kRoutingKernelMaxTopK: a mixture's routing decisions in one CUDA kernel
// (compiled by nvcc where the build has a CUDA compiler; this header includes
// neither LibTorch nor CUDA, so that both compilers read it)
#pragma once

#include <cstdint>

namespace widelab::cuda {

// What one kernel launch can decide: the experts' counters live in the
// block's shared memory, and each token's best choices in its thread's registers.
inline constexpr int kRoutingKernelMaxExperts = 256;
inline constexpr int kRoutingKernelMaxTopK = 8;

// S tokens, E experts, K choices per token; every pointer is device memory.
struct RoutingKernelArgs {
    const float* probs = nullptr;  // [S, E] router probabilities, rows contiguous
    std::int64_t tokens = 0;       // S; S * K below 2^31
    int experts = 0;               // E, 1 .. kRoutingKernelMaxExperts
    int topK = 0;                  // K, 1 .. min(E, kRoutingKernelMaxTopK)
    std::int64_t capacity = 0;     // slots per expert
    bool causal = false;           // serve token by token (else every token's choice 0 first)
    bool countEveryChoice = false; // `chosen` counts all K choices (else choice 0 only)
    std::int64_t* expert = nullptr;  // out [S, K]: the K most probable experts, most probable first;
                                     // NaN above every number and, among equals, the lower index first
    std::int64_t* slot = nullptr;    // out [S, K]: how many earlier choices in serving order took that expert
    bool* kept = nullptr;            // out [S, K]: slot < capacity
    std::int64_t* chosen = nullptr;  // out [E]: how many (counted) choices took each expert
    void* stream = nullptr;          // the cudaStream_t to queue on
};

// Queues the kernel (one block) on args.stream; nothing waits for it. Returns
// the CUDA runtime's error for the launch, or nullptr.
const char* launchRoutingKernel(const RoutingKernelArgs& args);

}  // namespace widelab::cuda
