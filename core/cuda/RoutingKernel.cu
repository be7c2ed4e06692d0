// One CUDA block decides a whole routing call, in the order the operators of
// model/Router.cpp define: first each token's top K (one thread per token),
// then the slots, walking the serving queue in chunks of one entry per thread.
// Within a chunk a warp ranks its equal experts with __match_any_sync, and the
// warps' counts are scanned per expert into where each warp starts.
#include "RoutingKernel.h"

#include <cuda_runtime.h>

namespace widelab::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

// Whether probability a ranks above b: NaN above every number (as LibTorch's
// topk has it), otherwise the larger; equals do not, so the lower index stays first.
__device__ bool ranksAbove(float a, float b) { return (isnan(a) && !isnan(b)) || a > b; }

__global__ void __launch_bounds__(kThreads) routeKernel(RoutingKernelArgs args)
{
    // S = tokens, E = experts, K = choices
    const std::int64_t S = args.tokens;
    const int E = args.experts, K = args.topK;
    extern __shared__ int shared[];
    int* chosen = shared;            // [E]
    int* served = shared + E;        // [E] queue entries given a slot so far
    int* warpStart = shared + 2 * E; // [kWarps][E] a chunk's count per warp, then where each warp starts
    const int thread = threadIdx.x, lane = thread % 32, warp = thread / 32;

    for (int e = thread; e < E; e += kThreads)
        chosen[e] = served[e] = 0;
    __syncthreads();

    // Each token's K best experts, kept sorted by insertion.
    for (std::int64_t s = thread; s < S; s += kThreads) {
        float best[kRoutingKernelMaxTopK];
        int index[kRoutingKernelMaxTopK];
        int filled = 0;
        const float* row = args.probs + s * E;
        for (int e = 0; e < E; ++e) {
            const float p = row[e];
            if (filled == K && !ranksAbove(p, best[K - 1]))
                continue;
            int j = filled < K ? filled++ : K - 1;
            for (; j > 0 && ranksAbove(p, best[j - 1]); --j) {
                best[j] = best[j - 1];
                index[j] = index[j - 1];
            }
            best[j] = p;
            index[j] = e;
        }
        for (int k = 0; k < K; ++k) {
            args.expert[s * K + k] = index[k];
            if (k == 0 || args.countEveryChoice)
                atomicAdd(&chosen[index[k]], 1);
        }
    }
    __syncthreads();  // the block's writes of args.expert are visible to the whole block past this

    // Slots: queue entry q is (token q / K, choice q % K) token by token, else
    // (token q % S, choice q / S), every token's choice 0 first.
    const std::int64_t entries = S * K;
    const unsigned lanesBelow = (1u << lane) - 1u;
    for (std::int64_t first = 0; first < entries; first += kThreads) {
        for (int i = thread; i < kWarps * E; i += kThreads)
            warpStart[i] = 0;
        __syncthreads();
        const std::int64_t q = first + thread;
        const bool live = q < entries;
        std::int64_t pair = 0;
        int e = -1;  // no expert: lanes past the queue's end match only each other
        if (live) {
            const std::int64_t s = args.causal ? q / K : q % S;
            const std::int64_t k = args.causal ? q % K : q / S;
            pair = s * K + k;
            e = static_cast<int>(args.expert[pair]);
        }
        const unsigned peers = __match_any_sync(0xffffffffu, e);
        const int rank = __popc(peers & lanesBelow);  // equal experts earlier in this warp
        if (live && rank == 0)
            warpStart[warp * E + e] = __popc(peers);
        __syncthreads();
        for (int x = thread; x < E; x += kThreads) {
            int start = served[x];
            for (int w = 0; w < kWarps; ++w) {
                const int count = warpStart[w * E + x];
                warpStart[w * E + x] = start;
                start += count;
            }
            served[x] = start;
        }
        __syncthreads();
        if (live) {
            const std::int64_t slot = warpStart[warp * E + e] + rank;
            args.slot[pair] = slot;
            args.kept[pair] = slot < args.capacity;
        }
        __syncthreads();  // every warp has read its start before the next chunk clears them
    }

    for (int e = thread; e < E; e += kThreads)
        args.chosen[e] = chosen[e];
}

}  // namespace

const char* launchRoutingKernel(const RoutingKernelArgs& args)
{
    const std::size_t sharedBytes = sizeof(int) * static_cast<std::size_t>(2 + kWarps) * args.experts;
    routeKernel<<<1, kThreads, sharedBytes, static_cast<cudaStream_t>(args.stream)>>>(args);
    const cudaError_t error = cudaGetLastError();
    return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

}  // namespace widelab::cuda
