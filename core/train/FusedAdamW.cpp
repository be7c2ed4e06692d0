#include "FusedAdamW.h"

#include "Lamb.h"  // optimizerStateKey
#include "runtime/FastPaths.h"

#include <torch/version.h>

#include <map>

namespace widelab {
#if TORCH_VERSION_MAJOR >= 2
namespace {

// The fused kernel takes one device and float32 parameters with dense gradients.
bool fusable(const std::vector<torch::Tensor>& params)
{
    if (params.empty())
        return false;
    const torch::Device device = params.front().device();
    for (const auto& p : params) {
        if (p.scalar_type() != torch::kFloat32 || p.device() != device)
            return false;
        if (p.grad().defined() && p.grad().is_sparse())
            return false;
    }
    return true;
}

}  // namespace
#endif

FusedAdamW::FusedAdamW(const std::vector<torch::optim::OptimizerParamGroup>& groups,
                       torch::optim::AdamWOptions defaults)
    : torch::optim::AdamW(groups, std::move(defaults))
{
}

bool FusedAdamW::available() { return TORCH_VERSION_MAJOR >= 2 && fastPathEnabled(FastPath::FusedAdamW); }

torch::Tensor FusedAdamW::step(LossClosure closure)
{
#if TORCH_VERSION_MAJOR >= 2
    if (!fastPathEnabled(FastPath::FusedAdamW))
        return torch::optim::AdamW::step(std::move(closure));
    for (const auto& group : param_groups_)
        if (!fusable(group.params()))
            return torch::optim::AdamW::step(std::move(closure));
    torch::NoGradGuard noGrad;
    torch::Tensor loss;
    if (closure) {
        at::AutoGradMode enableGrad(true);
        loss = closure();
    }
    for (auto& group : param_groups_) {
        const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
        std::vector<torch::Tensor> params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, steps;
        // The kernel reads each parameter's step count from a float tensor on its
        // device. Parameters of a group usually share one count: one small fill
        // per distinct count, never a copy from the host.
        std::map<std::int64_t, torch::Tensor> stepTensors;
        for (auto& p : group.params()) {
            if (!p.grad().defined())
                continue;
            auto& slot = state_[optimizerStateKey(state_, p)];
            if (!slot) {
                auto fresh = std::make_unique<torch::optim::AdamWParamState>();
                fresh->step(0);
                fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                if (options.amsgrad())
                    fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                slot = std::move(fresh);
            }
            auto& state = static_cast<torch::optim::AdamWParamState&>(*slot);
            state.step(state.step() + 1);
            torch::Tensor& count = stepTensors[state.step()];
            if (!count.defined())
                count = torch::full({}, static_cast<double>(state.step()), p.options().dtype(torch::kFloat32));
            params.push_back(p);
            grads.push_back(p.grad());
            expAvgs.push_back(state.exp_avg());
            expAvgSqs.push_back(state.exp_avg_sq());
            if (options.amsgrad())
                maxExpAvgSqs.push_back(state.max_exp_avg_sq());
            steps.push_back(count);
        }
        if (params.empty())
            continue;
        const auto [beta1, beta2] = options.betas();
        at::_fused_adamw_(params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, steps, options.lr(), beta1, beta2,
                          options.weight_decay(), options.eps(), options.amsgrad(), /*maximize=*/false);
    }
    return loss;
#else
    return torch::optim::AdamW::step(std::move(closure));
#endif
}

}  // namespace widelab
