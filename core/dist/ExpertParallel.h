// defines: ExpertParallel: expert parallelism (train.expert_parallel). The experts
// of every mixture layer are split evenly over the ranks; each rank's tokens
// travel to their expert and the answers back with c10d's all-to-all.
#pragma once

#include "Collective.h"
#include "model/WideTransformer.h"

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace widelab {

class ExpertParallel : public ExpertPlacement {
public:
    // Rank r of W keeps experts [r E/W, (r + 1) E/W) of `model` (which must hold
    // all E, as every rank's model is built from the same seed) and lets the
    // others go. Throws std::invalid_argument when the model has no experts or E
    // is not a multiple of W.
    static std::shared_ptr<ExpertParallel> split(Collective& world, WideTransformerImpl& model);
    // Why a model's experts cannot be split over `processes`, or "" when they can.
    static std::string unsplittableReason(const ModelConfig& model, int processes);

    std::int64_t experts() const { return m_experts; }  // E, in every mixture layer
    std::int64_t first() const { return m_first; }      // this rank's first expert
    std::int64_t count() const { return m_count; }      // E / W

    // The parameters this rank holds alone, its experts' (every mixture layer's, in
    // order); the ranks hold every other parameter alike.
    const std::vector<torch::Tensor>& parameters() const { return m_parameters; }
    bool holds(const torch::Tensor& parameter) const;

    // A tensor of every expert, [E, ...], from each rank's `own` [E/W, ...] (its
    // experts' rows): on rank 0; the other ranks get an undefined tensor. Every
    // rank calls it, in the same order.
    torch::Tensor gather(const torch::Tensor& own, const std::string& what);
    // This rank's rows of a tensor of every expert.
    torch::Tensor own(const torch::Tensor& every) const;
    // Sums `tensor` over the ranks in place (the parts of a norm over every expert).
    void sum(torch::Tensor& tensor, const std::string& what);

    // ExpertPlacement: `buffer` [E, C, D] holds this rank's tokens for every
    // expert, C slots each. Every rank sends expert e's slots to the rank that
    // holds e, which runs them with the slots every other rank sent, and sends the
    // answers back: [E, C, D]. C may differ between ranks: each sends as many slots
    // as the largest C (the extra ones empty). Backward sends the gradients the
    // same ways in reverse.
    torch::Tensor run(const torch::Tensor& buffer, FeedForwardImpl& localExperts) override;

private:
    ExpertParallel(Collective& world, std::int64_t experts);

    Collective& m_world;
    std::int64_t m_experts, m_first, m_count;
    std::vector<torch::Tensor> m_parameters;
    std::unordered_set<const void*> m_held;  // m_parameters' TensorImpls
};

}  // namespace widelab
