// defines: FusedAdamW: torch::optim::AdamW whose step runs LibTorch 2.x's fused
// multi-tensor kernel (one launch per parameter group instead of several per
// parameter), with the same state, options and checkpoints as AdamW, and a
// capturable mode whose step reads nothing from the host (train.cuda_graph)
#pragma once

#include <torch/optim/adamw.h>

#include <map>
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

    // Capturable: each parameter's step count and each group's learning rate
    // live in tensors on the parameters' device, so that a step launches the
    // same kernels with the same arguments every time and can be captured in a
    // CUDA graph and replayed. The counts are advanced on the device by the step
    // itself; the rates are copied there by stageLearningRates, which must follow
    // every change of a group's lr (applyLearningRate calls it). The host's
    // AdamWParamState::step is brought up to date when the state is saved.
    // Every parameter's state (zero moments, step 0) is made here, since made
    // during a capture it would be made again at every replay: a parameter
    // without a gradient yet is saved with it. Call it after a checkpoint's state
    // is loaded. Throws std::logic_error when available() is false.
    void makeCapturable();
    bool capturable() const { return m_capturable; }
    void stageLearningRates();

    void save(torch::serialize::OutputArchive& archive) const override;
    void load(torch::serialize::InputArchive& archive) override;

private:
    // A parameter's state, made (zero moments, step 0) when it has none.
    torch::optim::AdamWParamState& stateOf(const torch::Tensor& parameter, const torch::optim::AdamWOptions& options);
    // Capturable mode: the parameter's count on its device, made from `state`'s when it has none.
    torch::Tensor& deviceStep(const torch::Tensor& parameter, const torch::optim::AdamWParamState& state);

    bool m_capturable = false;
    // Capturable mode: per parameter (by its state key), its step count as a
    // float32 scalar on its device; per group, its learning rate there.
    std::map<const void*, torch::Tensor> m_deviceSteps;
    std::vector<torch::Tensor> m_deviceRates;
};

}  // namespace widelab
