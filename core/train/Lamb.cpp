#include "Lamb.h"

#include <torch/utils.h>

#include <ATen/ATen.h>

#include <cmath>
#include <memory>
#include <utility>

namespace widelab {

namespace {

void checkOptions(const LambOptions& options)
{
    TORCH_CHECK(options.lr() >= 0, "Invalid learning rate: ", options.lr());
    TORCH_CHECK(options.eps() >= 0, "Invalid epsilon value: ", options.eps());
    const auto [beta1, beta2] = options.betas();
    TORCH_CHECK(0 <= beta1 && beta1 < 1.0, "Invalid beta parameter at index 0: ", beta1);
    TORCH_CHECK(0 <= beta2 && beta2 < 1.0, "Invalid beta parameter at index 1: ", beta2);
    TORCH_CHECK(options.weight_decay() >= 0, "Invalid weight_decay value: ", options.weight_decay());
}

}  // namespace

LambOptions::LambOptions(double lr) : lr_(lr) {}

bool operator==(const LambOptions& lhs, const LambOptions& rhs)
{
    return lhs.lr() == rhs.lr() && lhs.betas() == rhs.betas() && lhs.eps() == rhs.eps()
           && lhs.weight_decay() == rhs.weight_decay() && lhs.bias_correction() == rhs.bias_correction();
}

void LambOptions::serialize(torch::serialize::OutputArchive& archive) const
{
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(bias_correction);
}

void LambOptions::serialize(torch::serialize::InputArchive& archive)
{
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, bias_correction);
}

double LambOptions::get_lr() const { return lr(); }

void LambOptions::set_lr(const double lr) { this->lr(lr); }

bool operator==(const LambParamState& lhs, const LambParamState& rhs)
{
    return lhs.step() == rhs.step() && torch::equal(lhs.exp_avg(), rhs.exp_avg())
           && torch::equal(lhs.exp_avg_sq(), rhs.exp_avg_sq());
}

void LambParamState::serialize(torch::serialize::OutputArchive& archive) const
{
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
    _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
}

void LambParamState::serialize(torch::serialize::InputArchive& archive)
{
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(std::int64_t, step);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
    _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
}

Lamb::Lamb(std::vector<torch::optim::OptimizerParamGroup> paramGroups, LambOptions defaults)
    : Optimizer(std::move(paramGroups), std::make_unique<LambOptions>(defaults))
{
    checkOptions(defaults);
    for (const auto& group : param_groups_)
        checkOptions(static_cast<const LambOptions&>(group.options()));
}

Lamb::Lamb(std::vector<torch::Tensor> params, LambOptions defaults)
    : Lamb(std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup(std::move(params))},
           std::move(defaults))
{
}

torch::Tensor Lamb::step(LossClosure closure)
{
    torch::NoGradGuard noGrad;
    torch::Tensor loss;
    if (closure) {
        at::AutoGradMode enableGrad(true);
        loss = closure();
    }
    for (auto& group : param_groups_) {
        const auto& options = static_cast<const LambOptions&>(group.options());
        const auto [beta1, beta2] = options.betas();
        for (auto& p : group.params()) {
            if (!p.grad().defined())
                continue;
            const torch::Tensor& grad = p.grad();
            TORCH_CHECK(!grad.is_sparse(), "Lamb does not support sparse gradients");

            auto& slot = state_[optimizerStateKey(state_, p)];
            if (!slot) {
                auto fresh = std::make_unique<LambParamState>();
                fresh->step(0);
                fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                slot = std::move(fresh);
            }
            auto& state = static_cast<LambParamState&>(*slot);
            state.step(state.step() + 1);
            torch::Tensor& m = state.exp_avg();
            torch::Tensor& v = state.exp_avg_sq();
            m.mul_(beta1).add_(grad, 1 - beta1);
            v.mul_(beta2).addcmul_(grad, grad, 1 - beta2);

            double correction1 = 1.0, correction2 = 1.0;
            if (options.bias_correction()) {
                const auto t = static_cast<double>(state.step());
                correction1 = 1.0 - std::pow(beta1, t);
                correction2 = 1.0 - std::pow(beta2, t);
            }
            // u = m_hat / (sqrt(v_hat) + eps) + wd * w
            torch::Tensor update = (m / correction1).div_((v / correction2).sqrt_().add_(options.eps()));
            if (options.weight_decay() != 0.0)
                update.add_(p, options.weight_decay());

            // r = ||w|| / ||u||, 1 when either is zero; chosen on the device, no host sync.
            torch::Tensor weightNorm, updateNorm;
            if (m_sharded.holds && m_sharded.holds(p)) {
                torch::Tensor squares = torch::stack({p.square().sum(), update.square().sum()}).to(torch::kFloat32).cpu();
                m_sharded.sumOverRanks(squares);
                const torch::Tensor norms = squares.sqrt().to(p.device(), p.scalar_type());
                weightNorm = norms[0];
                updateNorm = norms[1];
            } else {
                weightNorm = p.norm();
                updateNorm = update.norm();
            }
            const torch::Tensor ratio = torch::where(weightNorm.gt(0).logical_and(updateNorm.gt(0)),
                                                     weightNorm / updateNorm, torch::ones_like(weightNorm));
            p.add_(update.mul_(ratio), -options.lr());
        }
    }
    return loss;
}

void Lamb::save(torch::serialize::OutputArchive& archive) const { serialize(*this, archive); }

void Lamb::load(torch::serialize::InputArchive& archive) { serialize(*this, archive); }

}  // namespace widelab
