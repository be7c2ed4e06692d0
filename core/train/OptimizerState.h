// defines: StateTensor, optimizerStateTensors: the tensors an optimiser keeps for
// one parameter (AdamW's and LAMB's moments, SGD's momentum), by name, to move,
// check or reshape them whatever the optimiser
#pragma once

#include <torch/optim/optimizer.h>

#include <vector>

namespace widelab {

struct StateTensor {
    const char* name;       // as the optimiser's own state calls it: "exp_avg", "momentum_buffer", ...
    torch::Tensor* tensor;  // inside the optimiser's state; undefined where unused (AdamW's max_exp_avg_sq without amsgrad)
};

// `parameter`'s state tensors in `optimizer`, in a fixed order; none before its
// first step. Valid until the optimiser's state changes.
std::vector<StateTensor> optimizerStateTensors(torch::optim::Optimizer& optimizer, const torch::Tensor& parameter);

}  // namespace widelab
