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
    for (std::size_t g = 0; g < param_groups_.size(); ++g) {
        auto& group = param_groups_[g];
        const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
        std::vector<torch::Tensor> params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, steps;
        // The kernel reads each parameter's step count from a float tensor on its
        // device. Parameters of a group usually share one count: one small fill
        // per distinct count, never a copy from the host.
        std::map<std::int64_t, torch::Tensor> stepTensors;
        for (auto& p : group.params()) {
            if (!p.grad().defined())
                continue;
            auto& state = stateOf(p, options);
            if (m_capturable) {
                steps.push_back(deviceStep(p, state));  // advanced below, on the device
            } else {
                state.step(state.step() + 1);
                torch::Tensor& count = stepTensors[state.step()];
                if (!count.defined())
                    count = torch::full({}, static_cast<double>(state.step()), p.options().dtype(torch::kFloat32));
                steps.push_back(count);
            }
            params.push_back(p);
            grads.push_back(p.grad());
            expAvgs.push_back(state.exp_avg());
            expAvgSqs.push_back(state.exp_avg_sq());
            if (options.amsgrad())
                maxExpAvgSqs.push_back(state.max_exp_avg_sq());
        }
        if (params.empty())
            continue;
        const auto [beta1, beta2] = options.betas();
        if (m_capturable) {
            at::_foreach_add_(steps, 1.0);
            if (m_deviceRates.size() <= g)
                stageLearningRates();
            at::_fused_adamw_(params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, steps, m_deviceRates[g], beta1, beta2,
                              options.weight_decay(), options.eps(), options.amsgrad(), /*maximize=*/false);
            continue;
        }
        at::_fused_adamw_(params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, steps, options.lr(), beta1, beta2,
                          options.weight_decay(), options.eps(), options.amsgrad(), /*maximize=*/false);
    }
    return loss;
#else
    return torch::optim::AdamW::step(std::move(closure));
#endif
}

torch::optim::AdamWParamState& FusedAdamW::stateOf(const torch::Tensor& p, const torch::optim::AdamWOptions& options)
{
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
    return static_cast<torch::optim::AdamWParamState&>(*slot);
}

torch::Tensor& FusedAdamW::deviceStep(const torch::Tensor& p, const torch::optim::AdamWParamState& state)
{
    // From the host's count: a fill, no copy.
    torch::Tensor& count = m_deviceSteps[p.unsafeGetTensorImpl()];
    if (!count.defined())
        count = torch::full({}, static_cast<double>(state.step()), p.options().dtype(torch::kFloat32));
    return count;
}

void FusedAdamW::makeCapturable()
{
    if (!available())
        throw std::logic_error("FusedAdamW::makeCapturable: this LibTorch (or WIDELAB_DISABLE) has no fused AdamW");
    m_capturable = true;
    // Every parameter's state, count and rate made now, outside any capture:
    // made inside one, they would be made again (zeroed) at every replay.
    for (const auto& group : param_groups_)
        for (const auto& p : group.params())
            deviceStep(p, stateOf(p, static_cast<const torch::optim::AdamWOptions&>(group.options())));
    stageLearningRates();
}

void FusedAdamW::stageLearningRates()
{
    if (!m_capturable)
        return;
    for (std::size_t g = 0; g < param_groups_.size(); ++g) {
        const auto& group = param_groups_[g];
        const double lr = static_cast<const torch::optim::AdamWOptions&>(group.options()).lr();
        if (m_deviceRates.size() <= g) {
            const torch::Device device = group.params().empty() ? torch::Device(torch::kCPU) : group.params().front().device();
            m_deviceRates.push_back(torch::full({}, lr, torch::TensorOptions().dtype(torch::kFloat32).device(device)));
        } else {
            m_deviceRates[g].fill_(lr);  // in place: a captured step reads this tensor
        }
    }
}

void FusedAdamW::save(torch::serialize::OutputArchive& archive) const
{
    // In capturable mode the device's counts are the true ones: read back (in
    // one copy, which waits for the device) into the state AdamW saves.
    std::vector<torch::Tensor> counts;
    std::vector<torch::optim::OptimizerParamState*> states;
    for (const auto& group : param_groups_)
        for (const auto& p : group.params()) {
            const auto count = m_deviceSteps.find(p.unsafeGetTensorImpl());
            const auto slot = state_.find(optimizerStateKey(state_, p));
            if (count == m_deviceSteps.end() || slot == state_.end())
                continue;
            counts.push_back(count->second.to(torch::kFloat64));
            states.push_back(slot->second.get());
        }
    if (!counts.empty()) {
        const torch::Tensor host = torch::stack(counts).to(torch::kCPU);
        for (std::size_t i = 0; i < states.size(); ++i)
            static_cast<torch::optim::AdamWParamState&>(*states[i])
                .step(static_cast<std::int64_t>(host[static_cast<std::int64_t>(i)].item<double>()));
    }
    torch::optim::AdamW::save(archive);
}

void FusedAdamW::load(torch::serialize::InputArchive& archive)
{
    torch::optim::AdamW::load(archive);
    m_deviceSteps.clear();
    if (m_capturable)  // made again from the loaded counts, outside any capture
        makeCapturable();
}

}  // namespace widelab
