// defines: launchGatherRows, launchTokenGradient, launchCombine,
// launchCombineBackward: a mixture's grouped dispatch and combine, forward and
// backward, each one CUDA kernel (compiled by nvcc where the build has a CUDA
// compiler; like ExpertRowsMath.h, this header includes neither LibTorch nor
// CUDA). model/ExpertRows.h says what each computes.
#pragma once

#include "ExpertRowsMath.h"

namespace widelab::cuda {

// Each queues its kernel on `stream` (a cudaStream_t) and returns the CUDA
// runtime's error for the launch, or nullptr; every pointer is device memory.

// rows [P, rowWidth] of `rowType` from x [S, D] of `xType`.
const char* launchGatherRows(const ExpertRowsShape& shape, RowType xType, const void* x, RowType rowType, void* rows,
                             void* stream);
// gradX [S, D] of `xType` from gradRows [P, rowWidth] of `rowType`.
const char* launchTokenGradient(const ExpertRowsShape& shape, RowType rowType, const void* gradRows, RowType xType,
                                void* gradX, void* stream);
// out [S, D] of `outType` from answers [P, D] of `answerType` and weight [P].
const char* launchCombine(const ExpertRowsShape& shape, RowType answerType, const void* answers, const float* weight,
                          RowType outType, void* out, void* stream);
// gradAnswers [P, D] of `answerType` and gradWeight [P] from gradOut [S, D] of
// `outType`, answers and weight.
const char* launchCombineBackward(const ExpertRowsShape& shape, RowType answerType, const void* answers,
                                  const float* weight, RowType outType, const void* gradOut, void* gradAnswers,
                                  float* gradWeight, void* stream);

}  // namespace widelab::cuda
