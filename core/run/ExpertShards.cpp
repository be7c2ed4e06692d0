#include "ExpertShards.h"

#include "train/OptimizerState.h"

namespace widelab {

GatheredExperts::GatheredExperts(ExpertParallel& experts, torch::optim::Optimizer& optimizer)
{
    torch::NoGradGuard noGrad;
    std::size_t index = 0;
    for (const torch::Tensor& p : experts.parameters()) {
        const std::string what = "expert parameter " + std::to_string(index++) + " for a checkpoint";
        if (torch::Tensor every = experts.gather(p, what); every.defined()) {
            m_parameters.emplace_back(p, p.data());
            p.set_data(every);
        }
        for (const StateTensor& state : optimizerStateTensors(optimizer, p)) {
            if (!state.tensor->defined())
                continue;
            if (torch::Tensor every = experts.gather(*state.tensor, what + "'s " + state.name); every.defined()) {
                m_state.emplace_back(state.tensor, *state.tensor);
                *state.tensor = every;
            }
        }
    }
}

GatheredExperts::~GatheredExperts()
{
    torch::NoGradGuard noGrad;
    for (auto& [parameter, own] : m_parameters)
        parameter.set_data(own);
    for (auto& [state, own] : m_state)
        *state = own;
}

void widenExperts(ExpertParallel& experts)
{
    torch::NoGradGuard noGrad;
    for (const torch::Tensor& p : experts.parameters()) {
        std::vector<std::int64_t> shape = p.sizes().vec();
        shape.front() = experts.experts();
        p.set_data(torch::zeros(shape, p.options()));
    }
}

void keepOwnExperts(ExpertParallel& experts, torch::optim::Optimizer* optimizer)
{
    torch::NoGradGuard noGrad;
    for (const torch::Tensor& p : experts.parameters()) {
        if (p.size(0) == experts.experts())
            p.set_data(experts.own(p.data()));
        if (!optimizer)
            continue;
        for (const StateTensor& state : optimizerStateTensors(*optimizer, p))
            if (state.tensor->defined() && state.tensor->size(0) == experts.experts())
                *state.tensor = experts.own(*state.tensor);
    }
}

}  // namespace widelab
