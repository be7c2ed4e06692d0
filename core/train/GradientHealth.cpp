#include "GradientHealth.h"

#include <torch/version.h>

namespace widelab {

void clearGradients(const std::vector<torch::Tensor>& parameters)
{
    for (const torch::Tensor& p : parameters)
        p.mutable_grad().reset();
}

GradientNorms clipGradients(const std::vector<torch::Tensor>& parameters, double maxNorm, const ShardedNorms* sharded)
{
    std::vector<torch::Tensor> grads;
    for (const auto& p : parameters)
        if (p.grad().defined())
            grads.push_back(p.grad().detach());
    const torch::TensorOptions floats = torch::TensorOptions().dtype(torch::kFloat32).device(
        parameters.empty() ? torch::Device(torch::kCPU) : parameters.front().device());
    GradientNorms norms;
    if (grads.empty()) {
        norms.each = torch::zeros({static_cast<std::int64_t>(parameters.size())}, floats);
        norms.total = torch::zeros({}, floats.dtype(torch::kFloat64));
        if (sharded) {  // the other ranks' parts still count, and they wait for this one
            torch::Tensor none = torch::zeros({1}, floats.device(torch::kCPU));
            sharded->sumOverRanks(none);
            norms.total = none.sum().sqrt().to(norms.total.options());
        }
        return norms;
    }
    // One fused kernel per dtype and device for all the norms; a parameter
    // without a gradient gets 0 (built on the device: no copy from the host).
    const std::vector<torch::Tensor> computed = at::_foreach_norm(grads, 2);
    std::vector<torch::Tensor> each;
    std::size_t next = 0;
    for (const auto& p : parameters)
        each.push_back(p.grad().defined() ? computed[next++].to(torch::kFloat32) : torch::zeros({}, floats));
    norms.each = torch::stack(each);  // [P]
    torch::Tensor total;
    if (sharded) {
        // This rank's part of the split parameters' squares, summed over the ranks,
        // plus the squares of the others, which every rank holds alike.
        std::vector<float> held;
        for (const auto& p : parameters)
            held.push_back(sharded->holds(p) ? 1.0F : 0.0F);
        const torch::Tensor split = torch::tensor(held).to(norms.each.device());
        const torch::Tensor squares = norms.each.pow(2);
        torch::Tensor parts = (squares * split).sum().view({1}).cpu();
        sharded->sumOverRanks(parts);
        total = ((squares * (1.0 - split)).sum() + parts.to(squares.device()).squeeze()).sqrt();
    } else {
        total = norms.each.pow(2).sum().sqrt();
    }
    if (maxNorm > 0.0) {
        const torch::Tensor scale = (maxNorm / (total + 1e-6)).clamp_max(1.0);
#if TORCH_VERSION_MAJOR >= 2
        // One fused kernel for all the gradients (by a tensor: no host
        // synchronisation), by the fp32 factor whatever their dtypes.
        at::_foreach_mul_(grads, scale);
#else
        for (auto& grad : grads)
            grad.mul_(scale.to(grad.dtype()));
#endif
    }
    norms.total = total.to(torch::kFloat64);
    return norms;
}

NonFiniteWatch::NonFiniteWatch(std::vector<std::string> parameterNames) : m_names(std::move(parameterNames)) {}

void NonFiniteWatch::observe(std::int64_t step, const torch::Tensor& loss, const GradientNorms& norms)
{
    // [1 + P]: true where the loss, or a parameter's gradient, is NaN or Inf.
    const torch::Tensor bad =
        torch::cat({torch::isfinite(loss.detach().to(torch::kFloat32)).view({1}), torch::isfinite(norms.each)})
            .logical_not();
    const torch::Tensor first = bad.to(torch::kInt32).argmax().to(torch::kInt64);  // the first true, when any
    const torch::TensorOptions longs = torch::TensorOptions().dtype(torch::kInt64).device(bad.device());
    const torch::Tensor none = torch::full({2}, -1, longs);
    const torch::Tensor found = torch::stack({torch::full({}, step, longs), first});
    const torch::Tensor verdict = torch::where(bad.any(), found, none);
    // The earliest step stays: a later bad step does not overwrite it.
    m_first = m_first.defined() ? torch::where(m_first[0].ge(0), m_first, verdict) : verdict;
}

std::optional<std::string> NonFiniteWatch::firstProblem() const
{
    if (!m_first.defined())
        return std::nullopt;
    const torch::Tensor host = m_first.to(torch::kCPU);
    const std::int64_t step = host[0].item<std::int64_t>(), tensor = host[1].item<std::int64_t>();
    if (step < 0)
        return std::nullopt;
    const std::string what = tensor == 0 ? std::string("the loss")
                             : tensor - 1 < static_cast<std::int64_t>(m_names.size())
                                 ? "the gradient of " + m_names[static_cast<std::size_t>(tensor - 1)]
                                 : std::string("a gradient");
    return "step " + std::to_string(step) + ": " + what + " is not finite (NaN or Inf)";
}

}  // namespace widelab
