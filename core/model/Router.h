// defines: RouterImpl / Router (the gate f: D -> E, no bias), RoutingOptions,
// Routing (one routing call's decisions), RoutingDecisions, decideByOperators,
// servingSlots, route(), ExpertPlacement and dispatchCombine()
#pragma once

#include "Ablation.h"
#include "FeedForward.h"
#include "config/ModelConfig.h"

#include <torch/nn/module.h>

#include <functional>

namespace widelab {

struct RouterImpl : torch::nn::Module {
    RouterImpl(std::int64_t dModel, std::int64_t experts);
    torch::Tensor weight;  // [E, D], used in fp32
};
TORCH_MODULE(Router);

struct RoutingOptions {
    std::int64_t topK = 2;
    double capacityFactor = 1.2;  // <= 0: no token is dropped
    double noiseStd = 0.0;        // applied only when `training`
    RoutingPriority priority = RoutingPriority::Position;
    bool balanceEveryChoice = false;  // the balance loss's m counts all top_k choices, not the top-1 only
    bool renormalize = false;
    bool training = false;
    bool causal = false;          // serve slots token by token (language models)
    bool zLoss = true;            // compute Routing::zLoss (training with router_z_loss_weight > 0)
    // A distributed step (data parallel): sums a tensor over the ranks in place.
    // The balance and z-losses are then this rank's part of the global batch's:
    // counted over every rank's tokens, so that the ranks' parts and their
    // gradients add up to one process's. Routing and capacity stay per rank.
    std::function<void(torch::Tensor&)> sumOverRanks;

    static RoutingOptions fromConfig(const ModelConfig& config, bool training);
};

// The decisions of one routing call over S tokens. Everything here but `expert`,
// `slot` and `kept` stays in the autograd graph.
struct Routing {
    torch::Tensor logits;       // [S, E] fp32 router logits (noisy while training)
    torch::Tensor probs;        // [S, E] fp32 router probabilities (noisy while training)
    torch::Tensor expert;       // [S, K] int64, choice 0 is the top-1 expert
    torch::Tensor gates;        // [S, K] fp32 combine weights
    torch::Tensor slot;         // [S, K] int64 position in the expert's buffer
    torch::Tensor kept;         // [S, K] bool, false where the expert was full
    torch::Tensor balanceLoss;  // [] E * sum_e m_e * P_e
    torch::Tensor zLoss;        // [] router z-loss: mean over tokens of logsumexp_e(logits)^2; undefined unless asked for
    std::int64_t capacity = 0;  // slots per expert
    std::int64_t experts = 0;
};

// The discrete part of a routing call and the gates: which experts each token
// chose, where each choice sits in its expert's buffer, whether it fits, and
// how many choices each expert got (what the balance loss counts).
struct RoutingDecisions {
    torch::Tensor expert;  // [S, K] int64, choice 0 the most probable
    torch::Tensor gates;   // [S, K] the chosen probabilities, in the autograd graph
    torch::Tensor slot;    // [S, K] int64
    torch::Tensor kept;    // [S, K] bool: slot < capacity
    torch::Tensor chosen;  // [E] int64: the top-1 choices per expert, or all K with balanceEveryChoice
};

// The decisions by LibTorch operators, on any device: the top K of probs
// ([S, E]), then servingSlots. What the CPU always runs, and what the fused
// kernel (FusedRouting.h) is held to.
RoutingDecisions decideByOperators(const torch::Tensor& probs, std::int64_t capacity, const RoutingOptions& options);

// Each (token, choice)'s slot, [S, K] int64: how many choices of the same expert
// come before it in the serving queue. The queue lists every (token, choice):
// choice-major (every token's choice 0 before any choice 1), tokens in position
// order or, under batch priority, by falling top-1 probability
// (top1Probability, [S]; unused otherwise). A causal model serves token-major
// instead, so that no later token can take an earlier token's slot.
torch::Tensor servingSlots(const torch::Tensor& expert, const torch::Tensor& top1Probability, std::int64_t experts,
                           const RoutingOptions& options);

// Where the experts run when several processes hold them (expert parallelism:
// core/dist/ExpertParallel.h). Given this process's buffer of tokens for every
// expert, [E, C, D], it returns every expert's answers in the same layout,
// computed wherever each expert is held; `localExperts` holds this process's.
class ExpertPlacement {
public:
    virtual ~ExpertPlacement() = default;
    virtual torch::Tensor run(const torch::Tensor& buffer, FeedForwardImpl& localExperts) = 0;
};

// Expert capacity for S tokens: ceil(K * C * S / E), at most S; S when C <= 0;
// at least 1.
std::int64_t expertCapacity(std::int64_t tokens, std::int64_t experts, std::int64_t topK, double capacityFactor);

// x: [S, D] tokens to route; routerWeight: [E, D].
Routing route(const torch::Tensor& x, const torch::Tensor& routerWeight, const RoutingOptions& options);

// Sends each token to its kept experts and sums their outputs weighted by the
// gates: [S, D], in x's dtype. Builds no token x expert x capacity tensor. The
// experts multiply the (token, choice) pairs sorted by expert, as grouped
// products (GroupedExperts.h), on the CPU and on a GPU whose LibTorch has
// them; an ablated expert, experts placed over processes, a GPU without
// grouped products and WIDELAB_DISABLE=grouped_experts take the capacity
// buffer (bufferedExpertAnswers).
// `ablated`: an expert (Ablation::index) whose output is replaced (Ablation.h:
// by zeros, or by its mean over the tokens it received).
// `placement`: the experts are spread over processes and `experts` holds this
// one's (null: `experts` holds all E).
torch::Tensor dispatchCombine(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts,
                              const Ablation* ablated = nullptr, ExpertPlacement* placement = nullptr);

// Every (token, choice) pair's expert answer, [S * K, D] in pair order, by way
// of one [E, capacity, D] buffer: the kept pairs are copied to their slots,
// the experts multiply the whole buffer as batched products, and the answers
// are gathered back by index. A dropped pair's row is not zero: the combine
// weighs it zero. x [S, D] holds the tokens.
torch::Tensor bufferedExpertAnswers(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts,
                                    const Ablation* ablated = nullptr, ExpertPlacement* placement = nullptr);

}  // namespace widelab
