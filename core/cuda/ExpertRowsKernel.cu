// A mixture's grouped dispatch and combine on the GPU: one CUDA block per row
// (dispatch, and the combine's backward) or per token (the dispatch's
// backward, and the combine), its threads striding over the columns; the
// arithmetic is ExpertRowsMath.h's. Every output element is written by one
// thread, and the one sum over columns is a fixed tree, so the results do not
// depend on scheduling.
#include "ExpertRowsKernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

namespace widelab::cuda {
namespace {

constexpr int kThreads = 256;

__device__ inline void store(float* at, float value) { *at = value; }
__device__ inline void store(__nv_bfloat16* at, float value) { *at = __float2bfloat16(value); }
__device__ inline void store(__half* at, float value) { *at = __float2half(value); }

template <typename In, typename Out>
__global__ void __launch_bounds__(kThreads) gatherRows(ExpertRowsShape shape, const In* x, Out* rows)
{
    const std::int64_t i = blockIdx.x;
    for (std::int64_t c = threadIdx.x; c < shape.rowWidth; c += kThreads)
        store(rows + i * shape.rowWidth + c, gatherRowValue(shape, x, i, c));
}

template <typename Grad, typename Out>
__global__ void __launch_bounds__(kThreads) tokenGradient(ExpertRowsShape shape, const Grad* gradRows, Out* gradX)
{
    const std::int64_t s = blockIdx.x;
    for (std::int64_t c = threadIdx.x; c < shape.width; c += kThreads)
        store(gradX + s * shape.width + c, tokenGradientValue(shape, gradRows, s, c));
}

template <typename Answer, typename Out>
__global__ void __launch_bounds__(kThreads) combine(ExpertRowsShape shape, const Answer* answers, const float* weight,
                                                    Out* out)
{
    const std::int64_t s = blockIdx.x;
    for (std::int64_t c = threadIdx.x; c < shape.width; c += kThreads)
        store(out + s * shape.width + c, combinedValue(shape, answers, weight, s, c));
}

template <typename Answer, typename Grad>
__global__ void __launch_bounds__(kThreads) combineBackward(ExpertRowsShape shape, const Answer* answers,
                                                            const float* weight, const Grad* gradOut,
                                                            Answer* gradAnswers, float* gradWeight)
{
    __shared__ float partial[kThreads];
    const std::int64_t p = blockIdx.x;
    const std::int64_t r = shape.row[p];
    float term = 0.0f;
    for (std::int64_t c = threadIdx.x; c < shape.width; c += kThreads) {
        store(gradAnswers + r * shape.width + c, answerGradientValue(shape, gradOut, weight, p, c));
        term += gateGradientTerm(shape, answers, gradOut, p, c);
    }
    partial[threadIdx.x] = term;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        gradWeight[p] = partial[0];
}

// Calls `run` with a null pointer of the C++ type `type` stands for.
template <typename Run>
const char* withType(RowType type, Run&& run)
{
    switch (type) {
    case RowType::Float:
        return run(static_cast<float*>(nullptr));
    case RowType::BFloat16:
        return run(static_cast<__nv_bfloat16*>(nullptr));
    case RowType::Half:
        return run(static_cast<__half*>(nullptr));
    }
    return "an unknown row type";
}

// Calls `run` with null pointers of the C++ types `a` and `b` stand for.
template <typename Run>
const char* withTypes(RowType a, RowType b, Run&& run)
{
    return withType(a, [&](auto* first) { return withType(b, [&](auto* second) { return run(first, second); }); });
}

const char* launched()
{
    const cudaError_t error = cudaGetLastError();
    return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

// CUDA grids hold at most 2^31 - 1 blocks in x.
bool fits(std::int64_t blocks) { return blocks < (std::int64_t{1} << 31); }

}  // namespace

const char* launchGatherRows(const ExpertRowsShape& shape, RowType xType, const void* x, RowType rowType, void* rows,
                             void* stream)
{
    const std::int64_t P = shape.tokens * shape.choices;
    if (P == 0)
        return nullptr;
    if (!fits(P))
        return "too many rows for one grid";
    return withTypes(xType, rowType, [&](auto* in, auto* out) {
        using In = std::remove_pointer_t<decltype(in)>;
        using Out = std::remove_pointer_t<decltype(out)>;
        gatherRows<In, Out><<<static_cast<unsigned>(P), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            shape, static_cast<const In*>(x), static_cast<Out*>(rows));
        return launched();
    });
}

const char* launchTokenGradient(const ExpertRowsShape& shape, RowType rowType, const void* gradRows, RowType xType,
                                void* gradX, void* stream)
{
    if (shape.tokens == 0)
        return nullptr;
    if (!fits(shape.tokens))
        return "too many tokens for one grid";
    return withTypes(rowType, xType, [&](auto* grad, auto* out) {
        using Grad = std::remove_pointer_t<decltype(grad)>;
        using Out = std::remove_pointer_t<decltype(out)>;
        tokenGradient<Grad, Out><<<static_cast<unsigned>(shape.tokens), kThreads, 0,
                                   static_cast<cudaStream_t>(stream)>>>(shape, static_cast<const Grad*>(gradRows),
                                                                        static_cast<Out*>(gradX));
        return launched();
    });
}

const char* launchCombine(const ExpertRowsShape& shape, RowType answerType, const void* answers, const float* weight,
                          RowType outType, void* out, void* stream)
{
    if (shape.tokens == 0)
        return nullptr;
    if (!fits(shape.tokens))
        return "too many tokens for one grid";
    return withTypes(answerType, outType, [&](auto* answer, auto* result) {
        using Answer = std::remove_pointer_t<decltype(answer)>;
        using Out = std::remove_pointer_t<decltype(result)>;
        combine<Answer, Out><<<static_cast<unsigned>(shape.tokens), kThreads, 0,
                               static_cast<cudaStream_t>(stream)>>>(shape, static_cast<const Answer*>(answers),
                                                                    weight, static_cast<Out*>(out));
        return launched();
    });
}

const char* launchCombineBackward(const ExpertRowsShape& shape, RowType answerType, const void* answers,
                                  const float* weight, RowType outType, const void* gradOut, void* gradAnswers,
                                  float* gradWeight, void* stream)
{
    const std::int64_t P = shape.tokens * shape.choices;
    if (P == 0)
        return nullptr;
    if (!fits(P))
        return "too many rows for one grid";
    return withTypes(answerType, outType, [&](auto* answer, auto* grad) {
        using Answer = std::remove_pointer_t<decltype(answer)>;
        using Grad = std::remove_pointer_t<decltype(grad)>;
        combineBackward<Answer, Grad><<<static_cast<unsigned>(P), kThreads, 0,
                                        static_cast<cudaStream_t>(stream)>>>(
            shape, static_cast<const Answer*>(answers), weight, static_cast<const Grad*>(gradOut),
            static_cast<Answer*>(gradAnswers), gradWeight);
        return launched();
    });
}

}  // namespace widelab::cuda
