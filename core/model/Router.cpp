#include "Router.h"

#include "ExpertRows.h"
#include "FusedRouting.h"
#include "GroupedExperts.h"
#include "runtime/PhaseTimer.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

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
    options.balanceEveryChoice = config.balanceCount == BalanceCount::TopK;
    options.renormalize = config.renormalizeGates;
    options.training = training;
    options.causal = config.causal();
    // Only the training loss uses it (the health views compute their own from the logits).
    options.zLoss = training && config.routerZLossWeight > 0.0;
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
    return std::min(std::max<std::int64_t>(capacity, 1), std::max<std::int64_t>(tokens, 1));
}

namespace {

// How many entries of `index` (int64, values in [0, bins)) fall in each bin.
// scatter_add rather than bincount: bincount reads the range back to the host.
torch::Tensor countPerBin(const torch::Tensor& index, std::int64_t bins)
{
    return torch::zeros({bins}, index.options()).scatter_add_(0, index, torch::ones_like(index));
}

}  // namespace

RoutingDecisions decideByOperators(const torch::Tensor& probs, std::int64_t capacity, const RoutingOptions& options)
{
    const std::int64_t E = probs.size(1);
    RoutingDecisions d;
    std::tie(d.gates, d.expert) = torch::topk(probs, options.topK, -1);  // sorted: choice 0 is the top-1
    const bool byProbability = options.priority == RoutingPriority::Batch;
    d.slot = servingSlots(d.expert, byProbability ? d.gates.select(1, 0).detach() : torch::Tensor(), E, options);
    d.kept = d.slot < capacity;
    d.chosen = countPerBin(options.balanceEveryChoice ? d.expert.reshape({-1}) : d.expert.select(1, 0), E);
    return d;
}

torch::Tensor servingSlots(const torch::Tensor& expert, const torch::Tensor& top1Probability, std::int64_t experts,
                           const RoutingOptions& options)
{
    // S = tokens, K = choices, E = experts
    const std::int64_t S = expert.size(0), K = expert.size(1), E = experts;
    // A stable sort by expert turns queue order into a rank within each expert.
    // Position order needs no permutation of tokens (each operator here is a
    // kernel launch on a GPU).
    const bool byProbability = options.priority == RoutingPriority::Batch;
    const torch::Tensor tokenOrder =
        byProbability ? std::get<1>(torch::sort(top1Probability, /*stable=*/true, /*dim=*/0, /*descending=*/true))
                      : torch::Tensor();
    const torch::Tensor ordered = byProbability ? expert.index_select(0, tokenOrder) : expert;      // [S, K]
    const torch::Tensor queue = (options.causal ? ordered : ordered.t()).reshape({-1});           // [S*K]
    const auto [sortedExpert, queueIndex] = torch::sort(queue, /*stable=*/true, /*dim=*/0, /*descending=*/false);
    const torch::Tensor perExpert = countPerBin(queue, E);
    const torch::Tensor firstOfExpert = perExpert.cumsum(0) - perExpert;
    const torch::Tensor rank = torch::arange(K * S, queue.options()) - firstOfExpert.index_select(0, sortedExpert);
    const torch::Tensor queueSlot = torch::empty_like(queue).scatter_(0, queueIndex, rank);
    const torch::Tensor orderedSlot = options.causal ? queueSlot.view({S, K}) : queueSlot.view({K, S}).t();
    // Contiguous, as `expert` is: dispatchCombine's row indices are then flat views, not copies.
    return byProbability ? torch::empty_like(expert).index_copy_(0, tokenOrder, orderedSlot)
                         : orderedSlot.contiguous();
}

Routing route(const torch::Tensor& x, const torch::Tensor& routerWeight, const RoutingOptions& options)
{
    // S = tokens, E = experts, K = choices per token
    const std::int64_t S = x.size(0);
    const std::int64_t E = routerWeight.size(0);
    const std::int64_t K = options.topK;

    Routing r;
    r.experts = E;
    r.capacity = expertCapacity(S, E, K, options.capacityFactor);
    {
        // The router decides in fp32 even under mixed precision (autocast would
        // otherwise run this product in bf16/fp16).
        c10::impl::ExcludeDispatchKeyGuard noAutocast(c10::autocast_dispatch_keyset);
        torch::Tensor logits = torch::matmul(x.to(torch::kFloat32), routerWeight.to(torch::kFloat32).t());  // [S, E]
        if (options.training && options.noiseStd > 0.0)
            logits = logits + torch::empty_like(logits).normal_(0.0, options.noiseStd);
        r.probs = torch::softmax(logits, -1);
        r.logits = logits;
    }

    const RoutingDecisions decided = fusedRoutingRuns(r.probs, options)
                                         ? fusedRoutingDecisions(r.probs, r.capacity, options)
                                         : decideByOperators(r.probs, r.capacity, options);
    r.expert = decided.expert;
    r.gates = options.renormalize ? decided.gates / decided.gates.sum(-1, true) : decided.gates;
    r.slot = decided.slot;
    r.kept = decided.kept;

    // Balance loss E * sum_e m_e * P_e: m_e, the share of top-1 choices (no
    // gradient; of all K choices with balanceEveryChoice, so that m sums to K),
    // and P_e, the mean probability (differentiable), both over S tokens:
    // E / S^2 * sum_e count_e * sum_s p_se, in four operators (each a kernel
    // launch on a GPU). With no token to route it is zero, still attached to
    // the graph.
    // Distributed, the counts and S are the global batch's (RoutingOptions::sumOverRanks).
    if (options.sumOverRanks) {
        torch::Tensor counts = torch::cat({decided.chosen.to(torch::kFloat64),
                                           torch::full({1}, static_cast<double>(S), x.options().dtype(torch::kFloat64))});
        options.sumOverRanks(counts);  // every rank takes part, one with no token too
        // The global count stays on the device, not read back to branch on: with
        // no token anywhere it counts as 1, the sums over no token being 0 (and
        // still attached to the graph). Factors in double, then float, as a
        // scalar would be.
        const torch::Tensor tokens = counts.narrow(0, E, 1).clamp_min(1.0);
        const torch::Tensor chosen = counts.narrow(0, 0, E).to(torch::kFloat32);
        r.balanceLoss = torch::dot(chosen, r.probs.sum(0))
                        * (static_cast<double>(E) / tokens.square()).to(torch::kFloat32).squeeze(0);
        if (options.zLoss)
            r.zLoss = torch::logsumexp(r.logits, -1).square().sum() / tokens.to(torch::kFloat32).squeeze(0);
    } else if (S == 0) {
        r.balanceLoss = r.probs.sum() * 0.0;
        if (options.zLoss)
            r.zLoss = r.logits.sum() * 0.0;
    } else {
        const torch::Tensor chosen = decided.chosen.to(torch::kFloat32);
        r.balanceLoss = torch::dot(chosen, r.probs.sum(0)) * (static_cast<double>(E) / (static_cast<double>(S) * S));
        if (options.zLoss)
            r.zLoss = torch::logsumexp(r.logits, -1).square().mean();
    }
    return r;
}

namespace {

// Whether `ablated` names one of the mixture's experts.
bool ablatesAnExpert(const Ablation* ablated, std::int64_t experts)
{
    return ablated != nullptr && ablated->index >= 0 && ablated->index < experts;
}

}  // namespace

torch::Tensor bufferedExpertAnswers(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts,
                                    const Ablation* ablated, ExpertPlacement* placement)
{
    // S = tokens, K = choices, E = experts, C = capacity, D = width
    const std::int64_t S = x.size(0), D = x.size(1);
    const std::int64_t K = routing.expert.size(1);
    const std::int64_t E = routing.experts, C = routing.capacity;
    std::optional<PhaseScope> timed(std::in_place, Phase::Routing);
    // Row s * K + k is token s's choice k: a broadcast copy, whose backward is a
    // sum over the choices, where gathering by token index would scatter back.
    const torch::Tensor perChoice = x.unsqueeze(1).expand({S, K, D}).reshape({S * K, D});
    // Every (token, choice) has a buffer row. Dropped ones are written to a
    // spare row past the experts' rows and read back from row 0, which needs
    // no data-dependent shapes and so no host synchronisation.
    const torch::Tensor slotRow = torch::add(routing.slot, routing.expert, C);                       // [S, K]
    const torch::Tensor writeRow = torch::where(routing.kept, slotRow, E * C).reshape({-1});
    const torch::Tensor readRow = torch::where(routing.kept, slotRow, 0).reshape({-1});
    const torch::Tensor buffer =
        torch::zeros({E * C + 1, D}, perChoice.options()).index_copy_(0, writeRow, perChoice);
    timed.emplace(Phase::FeedForward);
    const torch::Tensor perExpert = buffer.narrow(0, 0, E * C).view({E, C, D});
    torch::Tensor expertOut =
        (placement != nullptr ? placement->run(perExpert, experts) : experts.forwardEach(perExpert)).reshape({E * C, D});
    timed.emplace(Phase::Routing);
    if (ablatesAnExpert(ablated, E)) {
        // The rows of the expert's buffer that hold a token.
        const torch::Tensor filled = torch::zeros({E * C + 1}, perChoice.options()).index_fill_(0, writeRow, 1.0);
        const torch::Tensor rows = expertOut.narrow(0, ablated->index * C, C);
        const torch::Tensor replaced =
            ablatedValue(rows, ablated->mode, filled.narrow(0, ablated->index * C, C));
        expertOut = expertOut.clone();
        expertOut.narrow(0, ablated->index * C, C).copy_(replaced);
    }
    return expertOut.index_select(0, readRow);
}

namespace {

// Each pair's weight in its token's sum, [S * K] by pair: its gate, 0 where dropped.
torch::Tensor pairWeights(const Routing& routing)
{
    return torch::where(routing.kept, routing.gates, 0.0).reshape({-1});
}

// Each token's gate-weighted sum of its pairs' answers [S * K, D] (pair order),
// in `type`. Under autocast the experts answer in bf16/fp16; the sum is kept
// in the tokens' type.
torch::Tensor combinedAnswers(const torch::Tensor& answers, const Routing& routing, c10::ScalarType type)
{
    // S = tokens, K = choices, D = width
    const std::int64_t K = routing.expert.size(1), S = routing.expert.size(0), D = answers.size(1);
    const torch::Tensor contribution = (answers * pairWeights(routing).unsqueeze(1)).to(type);
    return contribution.view({S, K, D}).sum(1);  // not index_add_, which runs serially on the CPU
}

}  // namespace

torch::Tensor dispatchCombine(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts,
                              const Ablation* ablated, ExpertPlacement* placement)
{
    const std::int64_t K = routing.expert.size(1);
    // Each answers under scopes of its own: scopes never nest.
    const bool grouped = placement == nullptr && !ablatesAnExpert(ablated, routing.experts)
                         && groupedExpertsRun(x, experts.hidden);
    if (grouped) {
        const SortedAnswers sorted = sortedExpertAnswers(x, routing, experts, groupedProductsFor(x));
        if (sorted.rowsArePairs) {
            const PhaseScope timed(Phase::Routing);
            return combineRows(sorted.answers, sorted.row, pairWeights(routing), K, x.scalar_type());
        }
        const PhaseScope timed(Phase::Routing);
        return combinedAnswers(sorted.answers.index_select(0, sorted.row), routing, x.scalar_type());
    }
    const torch::Tensor answers = bufferedExpertAnswers(x, routing, experts, ablated, placement);
    const PhaseScope timed(Phase::Routing);
    return combinedAnswers(answers, routing, x.scalar_type());
}

}  // namespace widelab
