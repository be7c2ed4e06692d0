// One CUDA block orders a routing call's pairs by key (expert, or E for a
// dropped pair), stably. Each warp takes a contiguous segment of the pairs:
// it counts its keys, the counts are scanned key by key and, within a key,
// warp by warp, into where each warp's pairs of each key start; then each warp
// walks its segment 32 pairs at a time, ranking equal keys among its lanes
// with __match_any_sync and moving its starts past them.
#include "GroupPlanKernel.h"

#include <cuda_runtime.h>

namespace widelab::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

__device__ int keyOf(const GroupPlanArgs& args, std::int64_t p)
{
    return args.kept[p] ? static_cast<int>(args.expert[p]) : args.experts;
}

__global__ void __launch_bounds__(kThreads) planKernel(GroupPlanArgs args)
{
    // P = pairs, E = experts, keys 0 .. E (E: dropped)
    const std::int64_t P = args.tokens * args.choices;
    const int E = args.experts, keys = E + 1;
    // Counts and rows fit an int: P is below 2^31.
    extern __shared__ int shared[];
    int* start = shared;                // [kWarps][keys] a warp's count of a key, then where its pairs of it go
    int* base = shared + kWarps * keys; // [keys] where each key's rows start
    const int thread = threadIdx.x, lane = thread % 32, warp = thread / 32;
    const std::int64_t segment = (P + kWarps - 1) / kWarps;
    const std::int64_t first = warp * segment, last = first + segment < P ? first + segment : P;

    for (int i = thread; i < kWarps * keys; i += kThreads)
        start[i] = 0;
    __syncthreads();
    for (std::int64_t p = first + lane; p < last; p += 32)
        atomicAdd(&start[warp * keys + keyOf(args, p)], 1);
    __syncthreads();
    for (int k = thread; k < keys; k += kThreads) {
        int total = 0;
        for (int w = 0; w < kWarps; ++w)
            total += start[w * keys + k];
        base[k] = total;
    }
    __syncthreads();
    if (thread == 0) {
        int running = 0;
        for (int k = 0; k < keys; ++k) {
            const int count = base[k];
            base[k] = running;
            running += count;
        }
        for (int e = 0; e + 1 < E; ++e)
            args.ends[e] = base[e + 1];
        args.ends[E - 1] = static_cast<int>(P);
    }
    __syncthreads();
    for (int k = thread; k < keys; k += kThreads) {
        int running = base[k];
        for (int w = 0; w < kWarps; ++w) {
            const int count = start[w * keys + k];
            start[w * keys + k] = running;
            running += count;
        }
    }
    __syncthreads();

    const unsigned lanesBelow = (1u << lane) - 1u;
    for (std::int64_t chunk = first; chunk < last; chunk += 32) {
        const std::int64_t p = chunk + lane;
        const bool live = p < last;
        const int key = live ? keyOf(args, p) : -1;  // lanes past the segment match only each other
        const unsigned peers = __match_any_sync(0xffffffffu, key);
        int row = 0;
        if (live)
            row = start[warp * keys + key] + __popc(peers & lanesBelow);
        __syncwarp();
        if (live && (peers & lanesBelow) == 0)  // the lowest lane of its key moves the key's start
            start[warp * keys + key] += __popc(peers);
        __syncwarp();
        if (live) {
            args.row[p] = row;
            args.token[row] = key < E ? p / args.choices : args.tokens;
            args.rowKey[row] = key;
        }
    }
}

}  // namespace

const char* launchGroupPlan(const GroupPlanArgs& args)
{
    const std::size_t sharedBytes = sizeof(int) * static_cast<std::size_t>(kWarps + 1) * (args.experts + 1);
    planKernel<<<1, kThreads, sharedBytes, static_cast<cudaStream_t>(args.stream)>>>(args);
    const cudaError_t error = cudaGetLastError();
    return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

}  // namespace widelab::cuda
