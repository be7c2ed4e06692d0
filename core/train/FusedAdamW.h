// defines: FusedAdamW: torch::optim::AdamW whose step runs LibTorch 2.x's fused
// multi-tensor kernel (one launch per parameter group instead of several per
// parameter), with the same state, options and checkpoints as AdamW
#pragma once

#include <torch/optim/adamw.h>

#include <vector>

namespace widelab {

// The update is AdamW's, decoupled weight decay and bias correction included
// (torch::optim::AdamW documents it); only the kernels differ, so results match
// AdamW's to rounding. The state stays AdamWParamState (step count, exp_avg,
// exp_avg_sq, max_exp_avg_sq): a checkpoint saved by one loads in the other.
// With LibTorch 1.x, or parameters that the fused kernel does not take
// (not float32, or a group spread over several devices), step() is AdamW's.
class FusedAdamW : public torch::optim::AdamW {
public:
    FusedAdamW(const std::vector<torch::optim::OptimizerParamGroup>& groups, torch::optim::AdamWOptions defaults);

    torch::Tensor step(LossClosure closure = nullptr) override;

    // Whether this build of LibTorch has the fused kernel.
    static bool available();
};

}  // namespace widelab
