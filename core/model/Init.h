// defines: xavierUniformStacked, Xavier-uniform initialisation of a stack of
// independent [out, in] matrices (experts, paths), each with its own fan-in and fan-out
#pragma once

#include <torch/types.h>

namespace widelab {

// `weights`: [..., out, in]; every trailing [out, in] matrix is initialised on its own.
void xavierUniformStacked(const torch::Tensor& weights);

}  // namespace widelab
