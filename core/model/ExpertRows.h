// defines: dispatchRows, combineRows (and their ...ByOperators twins),
// fusedExpertRowsRun, fusedExpertRowsRefusal: a mixture's grouped dispatch
// (the tokens gathered into rows sorted by expert) and combine (the rows'
// answers weighted and summed back per token), each one pass forward and one
// backward: on a GPU a CUDA kernel of WideLab's own (cuda/ExpertRowsKernel.cu),
// on the CPU a host loop over the same arithmetic (cuda/ExpertRowsMath.h)
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/types.h>

#include <cstdint>
#include <string>

namespace widelab {

// S tokens, K choices, P = S * K pairs (pair s * K + k is token s's choice k),
// one row per pair, sorted by expert:
//   token [P] (int64): each row's token, S for a row of zeros (a dropped pair's);
//   row [P] (int64): each pair's row, every row exactly one pair's.

// The rows [P, D + biasColumns] in `dtype`: row i holds its token's row of x
// [S, D], a 1, then zeros, or zeros for no token. x's gradient: each token's
// sum over its kept pairs' rows (those holding it), in float, choice 0 first,
// in x's type. Its own gradient does not depend on the order the GPU runs in.
torch::Tensor dispatchRows(const torch::Tensor& x, const torch::Tensor& token, const torch::Tensor& row,
                           std::int64_t choices, std::int64_t biasColumns, c10::ScalarType dtype);

// [S, D] in `dtype`: each token's sum over its choices of weight [P] (fp32,
// by pair; 0 for a dropped pair) times its pair's row of answers [P, D], in
// float, choice 0 first. Gradients to answers (each row its pair's weight times
// its token's gradient) and to weight (each pair's answer against its token's
// gradient).
torch::Tensor combineRows(const torch::Tensor& answers, const torch::Tensor& row, const torch::Tensor& weight,
                          std::int64_t choices, c10::ScalarType dtype);

// The same two by LibTorch's operators (several passes and, for the dispatch's
// gradient, atomic additions on a GPU): what runs where the fused ones do not,
// and what they are checked against.
torch::Tensor dispatchRowsByOperators(const torch::Tensor& x, const torch::Tensor& token, const torch::Tensor& row,
                                      std::int64_t choices, std::int64_t biasColumns, c10::ScalarType dtype);
torch::Tensor combineRowsByOperators(const torch::Tensor& answers, const torch::Tensor& row, const torch::Tensor& weight,
                                     std::int64_t choices, c10::ScalarType dtype);

// Why the fused dispatch and combine cannot run on `device`, or "": off with
// WIDELAB_DISABLE=fused_expert_rows; on a GPU the build must have compiled the
// kernels, and they must give what the operators give, forward and backward,
// on a small problem tried once per device (not while a CUDA graph is being
// recorded there: it refuses then, and tries at the next call).
std::string fusedExpertRowsRefusal(const c10::Device& device);
inline bool fusedExpertRowsRun(const c10::Device& device) { return fusedExpertRowsRefusal(device).empty(); }

}  // namespace widelab
