#include "MetricsCodec.h"

#include "ByteText.h"
#include "Curves.h"

#include <cmath>
#include <cstdint>

// metrics.jsonl's writer: the line of each type (the field names
// docs/run-directory.md lists); the reader is MetricsDecoder.cpp.

namespace widelab {

nlohmann::json toJson(const TrainingSnapshot& s)
{
    nlohmann::json routing = nlohmann::json::array();
    for (const auto& r : s.routing) {
        nlohmann::json block = {{"block", r.block},
                                {"tokens_per_expert", r.tokensPerExpert},
                                {"dropped_percent_per_choice", r.droppedPercentPerChoice},
                                {"unused_experts", r.unusedExperts},
                                {"router_entropy", r.routerEntropy},
                                {"load_vs_fair", r.loadVsFair},
                                {"max_violation", r.maxViolation},
                                {"effective_experts", r.effectiveExperts},
                                {"z_loss", r.zLoss},
                                {"dead_fraction", r.deadFraction}};
        if (r.consistency >= 0)  // not for the first routing block
            block["consistency"] = r.consistency;
        routing.push_back(std::move(block));
    }
    nlohmann::json alarms = nlohmann::json::array();
    for (const auto& a : s.alarms) {
        nlohmann::json alarm = {{"kind", a.kind}, {"level", a.level}, {"block", a.block}, {"index", a.index},
                                {"text", a.text}};
        if (!a.sublayer.empty())
            alarm["sublayer"] = a.sublayer;
        alarms.push_back(std::move(alarm));
    }
    nlohmann::json paths = nlohmann::json::array();
    for (const auto& p : s.paths)
        paths.push_back({{"block", p.block}, {"sublayer", p.sublayer}, {"paths", p.paths}, {"alpha", p.alpha},
                         {"beta", p.beta}, {"diversity", p.diversity}});
    auto divergence = [](const LayerNormDivergence& d) {
        return nlohmann::json{{"gamma_all_pairs", d.gammaAllPairs}, {"beta_all_pairs", d.betaAllPairs},
                              {"gamma_elementwise", d.gammaElementwise}, {"beta_elementwise", d.betaElementwise}};
    };
    nlohmann::json line = {
        {"type", "train"},
        {"step", s.step},
        {"wall_seconds", s.wallSeconds},
        {"task_loss", s.taskLoss},
        {"step_seconds", s.stepSeconds},
        {"data_seconds", s.dataSeconds},
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
        {"residual_norm", s.residualNorms},
        {"alarms", alarms},
    };
    for (const TrainingCurve& curve : kTrainingCurves)
        line[curve.name] = s.*curve.value;
    auto histograms = [](const std::vector<ValueHistogram>& groups) {
        nlohmann::json out = nlohmann::json::array();
        for (const ValueHistogram& h : groups)
            out.push_back({{"group", h.group}, {"low", h.low}, {"high", h.high}, {"counts", h.counts}});
        return out;
    };
    if (!s.weightHistograms.empty())  // only on the lines that hold them (ParameterHistograms.h)
        line["weights"] = histograms(s.weightHistograms);
    if (!s.gradientHistograms.empty())
        line["gradients"] = histograms(s.gradientHistograms);
    if (s.world.size > 1) {  // a distributed run's: a run of one process writes the lines it always wrote
        line["world_size"] = s.world.size;
        line["rank_compute_seconds"] = s.world.computeSeconds;
        line["rank_memory_peak_bytes"] = s.world.peakBytes;
        line["all_reduce_wait_seconds"] = s.world.allReduceWaitSeconds;
    }
    return line;
}

nlohmann::json toJson(const EvaluationResult& r)
{
    nlohmann::json line = {{"type", "eval"},     {"step", r.step},         {"split", r.split},       {"loss", r.loss},
                           {"accuracy", r.accuracy}, {"perplexity", r.perplexity}, {"examples", r.examples}};
    if (r.translated > 0) {  // translation runs: what their greedy translations score
        line["bleu"] = r.bleu;
        line["chrf"] = r.chrf;
        line["translated"] = r.translated;
    }
    return line;
}


nlohmann::json toJson(const ProbeResult& r)
{
    nlohmann::json line = {{"type", "probe"},   {"step", r.step},           {"text", legibleBytes(r.text)},
                           {"tokens", r.tokens}, {"attention", r.attention}, {"experts", r.experts},
                           {"prediction", r.prediction}, {"prediction_labels", r.predictionLabels}};
    if (r.label >= 0)
        line["label"] = r.label;  // only when known
    if (r.cutTokens > 0)
        line["cut_tokens"] = r.cutTokens;  // only when the text was longer than the sequence
    if (!r.translation.empty())
        line["translation"] = legibleBytes(r.translation);  // translation models
    if (!r.targetTokens.empty()) {
        line["target_tokens"] = r.targetTokens;
        line["cross_attention"] = r.crossAttention;
    }
    if (!r.logitLens.empty()) {
        nlohmann::json lens = nlohmann::json::array();
        for (const LensStage& stage : r.logitLens)
            lens.push_back({{"block", stage.block}, {"sublayer", stage.sublayer}, {"distribution", stage.distribution}});
        line["logit_lens"] = std::move(lens);
        if (!r.lensColumns.empty())
            line["logit_lens_columns"] = r.lensColumns;
    }
    if (r.image.width > 0)  // image models only
        line["image"] = {{"width", r.image.width},         {"height", r.image.height},
                         {"channels", r.image.channels},   {"grid_rows", r.image.gridRows},
                         {"grid_cols", r.image.gridCols},  {"pixels", toBase64(r.image.pixels)}};
    return line;
}

nlohmann::json toJson(const ValidationInsights& v)
{
    nlohmann::json experts = nlohmann::json::array();
    for (const ExpertIntake& e : v.experts) {
        nlohmann::json top = nlohmann::json::array();
        for (const auto& tokens : e.topTokens) {
            nlohmann::json list = nlohmann::json::array();
            for (const auto& [token, count] : tokens)
                list.push_back({legibleBytes(token), count});
            top.push_back(std::move(list));
        }
        nlohmann::json block = {{"block", e.block}, {"top_tokens", top}};
        if (!e.classCounts.empty())
            block["class_counts"] = e.classCounts;
        experts.push_back(std::move(block));
    }
    nlohmann::json line = {{"type", "insights"},
                           {"step", v.step},
                           {"examples", v.examples},
                           {"head_roles", {{"roles", v.heads.roles}, {"scores", v.heads.scores}, {"dominant", v.heads.dominant}}},
                           {"experts", experts}};
    if (!v.classNames.empty())
        line["classes"] = v.classNames;
    return line;
}

namespace {

std::string line(const nlohmann::json& json)
{
    // Texts are valid UTF-8 by construction (data/ByteText); should one slip
    // through, the line is still written, with U+FFFD for the bad bytes.
    return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string encodeMetricsLine(const TrainingSnapshot& snapshot) { return line(toJson(snapshot)); }
std::string encodeMetricsLine(const EvaluationResult& result) { return line(toJson(result)); }
std::string encodeMetricsLine(const ProbeResult& result) { return line(toJson(result)); }
std::string encodeMetricsLine(const ValidationInsights& insights) { return line(toJson(insights)); }

}  // namespace widelab
