#include "Router.h"

#include <algorithm>
#include <cmath>

namespace widelab {

RouterImpl::RouterImpl(std::int64_t dModel, std::int64_t experts)
{
    weight = register_parameter("weight", torch::empty({experts, dModel}));
    torch::NoGradGuard noGrad;
    weight.normal_(0.0, 0.02);
}

RoutingOptions RoutingOptions::fromConfig(const ModelConfig& config, bool training)
{
    RoutingOptions options;
    options.topK = config.topK;
    options.capacityFactor = training ? config.capacityFactor : config.evalCapacityFactor;
    options.noiseStd = config.routerNoiseStd;
    options.priority = config.routingPriority;
    options.renormalize = config.renormalizeGates;
    options.training = training;
    return options;
}

std::int64_t expertCapacity(std::int64_t tokens, std::int64_t experts, std::int64_t topK, double capacityFactor)
{
    if (capacityFactor <= 0.0)
        return tokens;
    const double ideal = static_cast<double>(topK) * capacityFactor * static_cast<double>(tokens)
                         / static_cast<double>(experts);
    // Guard the ceiling against 1.2 * 10 / 2 = 6.000000000000001.
    const auto capacity = static_cast<std::int64_t>(std::ceil(ideal - 1e-9));
    return std::clamp<std::int64_t>(capacity, 1, tokens);
}

Routing route(const torch::Tensor& x, const torch::Tensor& routerWeight, const RoutingOptions& options)
{
    // S = tokens, E = experts, K = choices per token
    const std::int64_t S = x.size(0);
    const std::int64_t E = routerWeight.size(0);
    const std::int64_t K = options.topK;

    Routing r;
    r.experts = E;
    torch::Tensor logits = torch::matmul(x.to(torch::kFloat32), routerWeight.to(torch::kFloat32).t());  // [S, E]
    if (options.training && options.noiseStd > 0.0)
        logits = logits + torch::randn_like(logits) * options.noiseStd;
    r.probs = torch::softmax(logits, -1);

    auto [gates, expert] = torch::topk(r.probs, K, -1);  // sorted: choice 0 is the top-1
    const torch::Tensor top1Probability = gates.select(1, 0).detach();
    if (options.renormalize)
        gates = gates / gates.sum(-1, true);
    r.gates = gates;
    r.expert = expert;

    // Balance loss: m_e counts top-1 choices (no gradient), P_e is differentiable.
    const torch::Tensor top1Share =
        torch::bincount(expert.select(1, 0), {}, E).to(torch::kFloat32) / static_cast<double>(S);
    r.balanceLoss = static_cast<double>(E) * (top1Share * r.probs.mean(0)).sum();

    // Slots: every token's choice 0 before any choice 1; within a choice, tokens in
    // position order, or by falling top-1 probability under batch priority. A
    // stable sort by expert turns that order into a rank within each expert.
    torch::Tensor tokenOrder;
    if (options.priority == RoutingPriority::Batch) {
        tokenOrder = std::get<1>(torch::sort(top1Probability, /*stable=*/true, /*dim=*/0,
                                             /*descending=*/true));
    } else {
        tokenOrder = torch::arange(S, expert.options());
    }
    const torch::Tensor queue = expert.index_select(0, tokenOrder).t().reshape({-1});  // [K*S], choice-major
    const auto [sortedExpert, queueIndex] = torch::sort(queue, /*stable=*/true, /*dim=*/0, /*descending=*/false);
    const torch::Tensor perExpert = torch::bincount(queue, {}, E);
    const torch::Tensor firstOfExpert = perExpert.cumsum(0) - perExpert;
    const torch::Tensor rank = torch::arange(K * S, queue.options()) - firstOfExpert.index_select(0, sortedExpert);
    const torch::Tensor queueSlot = torch::empty_like(queue).scatter_(0, queueIndex, rank);
    r.slot = torch::empty_like(expert).index_copy_(0, tokenOrder, queueSlot.view({K, S}).t());

    r.capacity = expertCapacity(S, E, K, options.capacityFactor);
    r.kept = r.slot < r.capacity;
    return r;
}

torch::Tensor dispatchCombine(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts)
{
    // S = tokens, K = choices, E = experts, C = capacity, D = width
    const std::int64_t S = x.size(0), D = x.size(1);
    const std::int64_t K = routing.expert.size(1);
    const std::int64_t E = routing.experts, C = routing.capacity;

    // Every (token, choice) gets a buffer row; dropped ones share a spare last row
    // whose output is weighted by zero. This keeps the step free of host syncs.
    const torch::Tensor spare = torch::full_like(routing.expert, E * C);
    const torch::Tensor row = torch::where(routing.kept, routing.expert * C + routing.slot, spare).reshape({-1});
    const torch::Tensor token = torch::arange(S, routing.expert.options()).repeat_interleave(K);  // [S*K]

    const torch::Tensor buffer = torch::zeros({E * C + 1, D}, x.options()).index_copy(0, row, x.index_select(0, token));
    const torch::Tensor expertOut =
        experts.forwardEach(buffer.narrow(0, 0, E * C).view({E, C, D})).reshape({E * C, D});
    const torch::Tensor withSpare = torch::cat({expertOut, torch::zeros({1, D}, expertOut.options())});

    const torch::Tensor weight = (routing.gates * routing.kept.to(routing.gates.dtype())).reshape({-1, 1});
    const torch::Tensor contribution = withSpare.index_select(0, row) * weight.to(withSpare.dtype());
    return torch::zeros({S, D}, x.options()).index_add(0, token, contribution);
}

}  // namespace widelab
