#include "HeadRoles.h"

#include <algorithm>
#include <cmath>

namespace widelab {

std::int64_t dominantRole(const std::vector<double>& scores)
{
    constexpr double kPointer = 0.4, kLocal = 0.5;
    std::int64_t best = -1;
    for (const HeadRole role : {HeadRole::PreviousToken, HeadRole::NextToken, HeadRole::FirstToken, HeadRole::Self,
                                HeadRole::DuplicateToken, HeadRole::Induction}) {
        const auto r = static_cast<std::int64_t>(role);
        if (r < static_cast<std::int64_t>(scores.size()) && (best < 0 || scores[static_cast<std::size_t>(r)] > scores[static_cast<std::size_t>(best)]))
            best = r;
    }
    if (best >= 0 && scores[static_cast<std::size_t>(best)] >= kPointer)
        return best;
    const auto local = static_cast<std::size_t>(HeadRole::Local);
    if (local < scores.size() && scores[local] >= kLocal)
        return static_cast<std::int64_t>(local);
    return static_cast<std::int64_t>(HeadRole::Broad);
}

HeadRoleAccumulator::HeadRoleAccumulator(std::int64_t layers, std::int64_t heads, bool languageModel)
    : m_layers(layers), m_heads(heads), m_languageModel(languageModel)
{
    const auto roles = static_cast<std::int64_t>(headRoleNames(languageModel).size());
    m_sum = torch::zeros({layers, heads, roles}, torch::kFloat64);
    m_count = torch::zeros({layers, roles}, torch::kFloat64);
}

// values: [B, H, Q] a score per query; weight: [B, Q] 0/1, which queries count.
void HeadRoleAccumulator::add(std::int64_t layer, HeadRole role, const torch::Tensor& values, const torch::Tensor& weight)
{
    const auto r = static_cast<std::int64_t>(role);
    const torch::Tensor w = weight.to(torch::kFloat64);
    m_sum[layer].select(1, r).add_((values.to(torch::kFloat64) * w.unsqueeze(1)).sum(torch::IntArrayRef{0, 2}));
    m_count[layer][r].add_(w.sum());
}

void HeadRoleAccumulator::addMaps(std::int64_t layer, const torch::Tensor& maps, const torch::Tensor& valid)
{
    // B = batch, H = heads, T = positions
    const torch::Tensor a = maps.detach().to(torch::kCPU, torch::kFloat64);
    const std::int64_t B = a.size(0), T = a.size(2);
    const torch::Tensor real = valid.defined() ? valid.to(torch::kCPU, torch::kBool)
                                               : torch::ones({B, T}, torch::kBool);
    if (T >= 2) {
        const torch::Tensor pair = real.narrow(1, 1, T - 1).logical_and(real.narrow(1, 0, T - 1));  // [B, T-1]
        add(layer, HeadRole::PreviousToken, a.diagonal(-1, 2, 3), pair);  // A[i+1, i]
        add(layer, HeadRole::NextToken, a.diagonal(1, 2, 3), pair);       // A[i, i+1]
        add(layer, HeadRole::FirstToken, a.select(3, 0).narrow(2, 1, T - 1), real.narrow(1, 1, T - 1));
    }
    add(layer, HeadRole::Self, a.diagonal(0, 2, 3), real);
    const torch::Tensor position = torch::arange(T, torch::kLong);
    const torch::Tensor band = (position.unsqueeze(0) - position.unsqueeze(1)).abs().le(kLocalWindow);  // [T, T]
    add(layer, HeadRole::Local, (a * band.to(torch::kFloat64)).sum(-1), real);

    // Broad: the row's entropy over the log of the keys the query may see. Rows
    // are renormalised (implied maps need not sum to 1; a masked row is 0 there).
    const torch::Tensor row = a.clamp_min(0.0) * real.to(torch::kFloat64).view({B, 1, 1, T});
    const torch::Tensor p = row / row.sum(-1, true).clamp_min(1e-300);
    const torch::Tensor entropy = -(p * torch::log(p.clamp_min(1e-300))).sum(-1);  // [B, H, T]
    torch::Tensor keys = real.to(torch::kFloat64).sum(1, true).expand({B, T});      // bidirectional: every real token
    if (m_languageModel)
        keys = torch::minimum(keys, (position + 1).to(torch::kFloat64).unsqueeze(0).expand({B, T}));
    const torch::Tensor seen = keys.ge(2.0).logical_and(real);
    add(layer, HeadRole::Broad, entropy / torch::log(keys.clamp_min(2.0)).unsqueeze(1), seen);
}

void HeadRoleAccumulator::addRepeated(std::int64_t layer, const torch::Tensor& maps, std::int64_t period)
{
    if (!m_languageModel || period < 2)
        return;
    const torch::Tensor a = maps.detach().to(torch::kCPU, torch::kFloat64);
    const std::int64_t B = a.size(0), L = period;
    if (a.size(2) < 2 * L)
        return;
    const torch::Tensor all = torch::ones({B, L}, torch::kBool);
    add(layer, HeadRole::DuplicateToken, a.diagonal(-L, 2, 3).narrow(2, 0, L), all);      // A[L+k, k]
    add(layer, HeadRole::Induction, a.diagonal(-(L - 1), 2, 3).narrow(2, 1, L), all);     // A[L+k, k+1]
}

HeadRoleScores HeadRoleAccumulator::scores() const
{
    HeadRoleScores out;
    out.roles = headRoleNames(m_languageModel);
    const auto roles = static_cast<std::int64_t>(out.roles.size());
    const torch::Tensor mean = m_sum / m_count.clamp_min(1.0).unsqueeze(1);  // [layers, heads, roles]
    for (std::int64_t l = 0; l < m_layers; ++l) {
        std::vector<std::vector<double>> layer;
        std::vector<std::int64_t> dominant;
        for (std::int64_t h = 0; h < m_heads; ++h) {
            std::vector<double> scores;
            for (std::int64_t r = 0; r < roles; ++r)
                scores.push_back(std::clamp(mean[l][h][r].item<double>(), 0.0, 1.0));
            dominant.push_back(dominantRole(scores));
            layer.push_back(std::move(scores));
        }
        out.scores.push_back(std::move(layer));
        out.dominant.push_back(std::move(dominant));
    }
    return out;
}

}  // namespace widelab
