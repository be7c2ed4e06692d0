#include "OptimizerState.h"

#include "Lamb.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace widelab {

std::vector<StateTensor> optimizerStateTensors(torch::optim::Optimizer& optimizer, const torch::Tensor& parameter)
{
    auto& states = optimizer.state();
    const auto it = states.find(optimizerStateKey(states, parameter));
    if (it == states.end())
        return {};
    torch::optim::OptimizerParamState* state = it->second.get();
    if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(state))
        return {{"exp_avg", &adamw->exp_avg()}, {"exp_avg_sq", &adamw->exp_avg_sq()},
                {"max_exp_avg_sq", &adamw->max_exp_avg_sq()}};
    if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(state))
        return {{"momentum_buffer", &sgd->momentum_buffer()}};
    if (auto* lamb = dynamic_cast<LambParamState*>(state))
        return {{"exp_avg", &lamb->exp_avg()}, {"exp_avg_sq", &lamb->exp_avg_sq()}};
    return {};
}

}  // namespace widelab
