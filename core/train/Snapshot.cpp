#include "Snapshot.h"

#include "data/ByteText.h"

namespace widelab {

nlohmann::json toJson(const TrainingSnapshot& s)
{
    nlohmann::json routing = nlohmann::json::array();
    for (const auto& r : s.routing)
        routing.push_back({{"block", r.block},
                           {"tokens_per_expert", r.tokensPerExpert},
                           {"dropped_percent_per_choice", r.droppedPercentPerChoice},
                           {"unused_experts", r.unusedExperts},
                           {"router_entropy", r.routerEntropy},
                           {"load_vs_fair", r.loadVsFair}});
    nlohmann::json paths = nlohmann::json::array();
    for (const auto& p : s.paths)
        paths.push_back({{"block", p.block}, {"sublayer", p.sublayer}, {"paths", p.paths}, {"alpha", p.alpha},
                         {"beta", p.beta}, {"diversity", p.diversity}});
    auto divergence = [](const LayerNormDivergence& d) {
        return nlohmann::json{{"gamma_all_pairs", d.gammaAllPairs}, {"beta_all_pairs", d.betaAllPairs},
                              {"gamma_elementwise", d.gammaElementwise}, {"beta_elementwise", d.betaElementwise}};
    };
    return {
        {"type", "train"},
        {"step", s.step},
        {"wall_seconds", s.wallSeconds},
        {"loss", s.loss},
        {"task_loss", s.taskLoss},
        {"balance_loss", s.balanceLoss},
        {"accuracy", s.accuracy},
        {"learning_rate", s.learningRate},
        {"gradient_norm", s.gradientNorm},
        {"tokens_per_second", s.tokensPerSecond},
        {"step_seconds", s.stepSeconds},
        {"memory_kind", s.memoryKind},
        {"memory_bytes", s.memoryBytes},
        {"memory_reserved_bytes", s.memoryReservedBytes},
        {"memory_peak_bytes", s.memoryPeakBytes},
        {"memory_peak_reserved_bytes", s.memoryPeakReservedBytes},
        {"measurement_seconds", s.measurementSeconds},
        {"routing", routing},
        {"layernorm", {{"attention_gamma", s.attentionGamma}, {"attention_beta", s.attentionBeta},
                       {"ffn_gamma", s.ffnGamma}, {"ffn_beta", s.ffnBeta}}},
        {"divergence", divergence(s.divergence)},
        {"attention_divergence", divergence(s.attentionDivergence)},
        {"paths", paths},
    };
}

nlohmann::json toJson(const EvaluationResult& r)
{
    return {{"type", "eval"},     {"step", r.step},         {"split", r.split},       {"loss", r.loss},
            {"accuracy", r.accuracy}, {"perplexity", r.perplexity}, {"examples", r.examples}};
}

nlohmann::json toJson(const ProbeResult& r)
{
    nlohmann::json line = {{"type", "probe"},   {"step", r.step},           {"text", legibleBytes(r.text)},
                           {"tokens", r.tokens}, {"attention", r.attention}, {"experts", r.experts},
                           {"prediction", r.prediction}, {"prediction_labels", r.predictionLabels}};
    if (r.label >= 0)
        line["label"] = r.label;  // only when known
    return line;
}

}  // namespace widelab
