// defines: RowType, ExpertRowsShape and the per-element work of a mixture's
// grouped dispatch and combine (gatherRowValue, tokenGradientValue,
// combinedValue, answerGradientValue, gateGradientTerm): written once, run by
// CUDA threads in ExpertRowsKernel.cu and by host loops in
// model/ExpertRows.cpp, so that the CPU's tests check the arithmetic the GPU
// runs. Includes neither LibTorch nor CUDA; each value type converts to and
// from float (float, c10's or CUDA's bfloat16 and half).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define WIDELAB_HOST_DEVICE __host__ __device__
#else
#define WIDELAB_HOST_DEVICE
#endif

namespace widelab::cuda {

// The types the rows and tokens come in.
enum class RowType { Float, BFloat16, Half };

// P = S * K pairs (pair s * K + k is token s's choice k), the rows sorted by
// expert, one per pair; D = the tokens' width; `width` = the dispatched rows'
// width, D and the columns that carry the first product's bias (a 1, then zeros).
//   token [P]: each row's token, S for a row of zeros (a dropped pair's)
//   row [P]:   each pair's row; every row is exactly one pair's
struct ExpertRowsShape {
    std::int64_t tokens = 0;  // S
    std::int64_t choices = 0; // K
    std::int64_t width = 0;   // D
    std::int64_t rowWidth = 0;  // D plus the bias columns
    const std::int64_t* token = nullptr;
    const std::int64_t* row = nullptr;
};

// Dispatch, forward: column c of row i, from its token's value, the 1 at
// column D, zeros beyond, and a row of zeros for no token.
template <typename In>
WIDELAB_HOST_DEVICE inline float gatherRowValue(const ExpertRowsShape& shape, const In* x, std::int64_t i,
                                                std::int64_t c)
{
    const std::int64_t t = shape.token[i];
    if (t >= shape.tokens)
        return 0.0f;
    if (c < shape.width)
        return static_cast<float>(x[t * shape.width + c]);
    return c == shape.width ? 1.0f : 0.0f;
}

// Dispatch, backward: token s's gradient in column c (< D), the sum over its
// kept pairs' rows, choice 0 first. A dropped pair's row holds no token.
template <typename Grad>
WIDELAB_HOST_DEVICE inline float tokenGradientValue(const ExpertRowsShape& shape, const Grad* gradRows,
                                                    std::int64_t s, std::int64_t c)
{
    float sum = 0.0f;
    for (std::int64_t k = 0; k < shape.choices; ++k) {
        const std::int64_t r = shape.row[s * shape.choices + k];
        if (shape.token[r] == s)
            sum += static_cast<float>(gradRows[r * shape.rowWidth + c]);
    }
    return sum;
}

// Combine, forward: token s's output in column c, the sum over its choices of
// weight times answer, in float, choice 0 first. answers [P, D] by row,
// weight [P] by pair (0 for a dropped pair).
template <typename Answer>
WIDELAB_HOST_DEVICE inline float combinedValue(const ExpertRowsShape& shape, const Answer* answers,
                                               const float* weight, std::int64_t s, std::int64_t c)
{
    float sum = 0.0f;
    for (std::int64_t k = 0; k < shape.choices; ++k) {
        const std::int64_t p = s * shape.choices + k;
        sum += weight[p] * static_cast<float>(answers[shape.row[p] * shape.width + c]);
    }
    return sum;
}

// Combine, backward: the gradient of pair p's answer in column c (written to
// the pair's row), weight times the output's gradient of its token.
template <typename Grad>
WIDELAB_HOST_DEVICE inline float answerGradientValue(const ExpertRowsShape& shape, const Grad* gradOut,
                                                     const float* weight, std::int64_t p, std::int64_t c)
{
    return weight[p] * static_cast<float>(gradOut[(p / shape.choices) * shape.width + c]);
}

// Combine, backward: column c's term of pair p's weight gradient, which sums
// them over the columns: its answer times its token's output gradient.
template <typename Answer, typename Grad>
WIDELAB_HOST_DEVICE inline float gateGradientTerm(const ExpertRowsShape& shape, const Answer* answers,
                                                  const Grad* gradOut, std::int64_t p, std::int64_t c)
{
    return static_cast<float>(answers[shape.row[p] * shape.width + c])
           * static_cast<float>(gradOut[(p / shape.choices) * shape.width + c]);
}

}  // namespace widelab::cuda
