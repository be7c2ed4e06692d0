#include "MetricScalars.h"

namespace widelab {
namespace {

void addTraining(const MetricsRecord& record, std::vector<MetricScalar>& out)
{
    const TrainingSnapshot& s = record.train;
    const auto add = [&out](std::string tag, double value) { out.push_back({std::move(tag), value}); };
    for (const auto& [name, value] : record.values)
        add("train/" + name, value);
    add("train/task_loss", s.taskLoss);
    add("time/wall_seconds", s.wallSeconds);
    add("time/step_seconds", s.stepSeconds);
    add("time/data_seconds", s.dataSeconds);
    add("time/measurement_seconds", s.measurementSeconds);
    const std::string memory = "memory/" + metricTagPart(s.memoryKind) + "/";
    add(memory + "bytes", static_cast<double>(s.memoryBytes));
    add(memory + "reserved_bytes", static_cast<double>(s.memoryReservedBytes));
    add(memory + "peak_bytes", static_cast<double>(s.memoryPeakBytes));
    add(memory + "peak_reserved_bytes", static_cast<double>(s.memoryPeakReservedBytes));

    for (const RoutingStats& r : s.routing) {
        const std::string block = numberedTag("block_", r.block);
        const std::string routing = "routing/" + block + "/";
        add(routing + "router_entropy", r.routerEntropy);
        add(routing + "unused_experts", static_cast<double>(r.unusedExperts));
        add(routing + "max_violation", r.maxViolation);
        add(routing + "effective_experts", r.effectiveExperts);
        add(routing + "z_loss", r.zLoss);
        add(routing + "dead_fraction", r.deadFraction);
        if (r.consistency >= 0.0)
            add(routing + "consistency", r.consistency);
        for (std::size_t k = 0; k < r.droppedPercentPerChoice.size(); ++k)
            add(routing + numberedTag("dropped_percent/choice_", static_cast<std::int64_t>(k)), r.droppedPercentPerChoice[k]);
        const std::string experts = "experts/" + block + "/";
        for (std::size_t e = 0; e < r.loadVsFair.size(); ++e)
            add(experts + numberedTag("load_vs_fair/expert_", static_cast<std::int64_t>(e)), r.loadVsFair[e]);
    }

    // Divergences are all 0 for a model without LayerNorm rows to compare.
    if (!s.ffnGamma.empty()) {
        const std::pair<const char*, const LayerNormDivergence*> divergences[] = {{"ffn", &s.divergence},
                                                                                  {"attention", &s.attentionDivergence}};
        for (const auto& [where, d] : divergences) {
            const std::string prefix = std::string("divergence/") + where + "/";
            add(prefix + "gamma_all_pairs", d->gammaAllPairs);
            add(prefix + "beta_all_pairs", d->betaAllPairs);
            add(prefix + "gamma_elementwise", d->gammaElementwise);
            add(prefix + "beta_elementwise", d->betaElementwise);
        }
    }

    for (const PathWeights& p : s.paths) {
        const std::string prefix = "paths/" + numberedTag("block_", p.block) + "/" + metricTagPart(p.sublayer) + "/";
        for (std::size_t i = 0; i < p.alpha.size(); ++i) {
            const auto index = static_cast<std::int64_t>(i);
            add(prefix + (index < p.paths ? numberedTag("alpha/path_", index) : numberedTag("alpha/extra_", index - p.paths)),
                p.alpha[i]);
        }
        add(prefix + "beta", p.beta);
        add(prefix + "diversity", p.diversity);
    }
}

void addEvaluation(const EvaluationResult& r, std::vector<MetricScalar>& out)
{
    const std::string split = metricTagPart(r.split) + "/";
    out.push_back({split + "loss", r.loss});
    out.push_back({split + "accuracy", r.accuracy});
    if (r.perplexity > 0.0)  // language and translation models
        out.push_back({split + "perplexity", r.perplexity});
    if (r.translated > 0) {  // translation models
        out.push_back({split + "bleu", r.bleu});
        out.push_back({split + "chrf", r.chrf});
    }
    out.push_back({split + "examples", static_cast<double>(r.examples)});
}

}  // namespace

std::vector<MetricScalar> metricScalars(const MetricsRecord& record)
{
    std::vector<MetricScalar> out;
    if (record.type == MetricsRecord::Type::Train)
        addTraining(record, out);
    else if (record.type == MetricsRecord::Type::Eval)
        addEvaluation(record.eval, out);
    return out;
}

std::string metricTagPart(const std::string& text)
{
    std::string out;
    for (const char c : text)
        out += (c > ' ' && c < 0x7f && c != '/') ? c : '_';
    return out.empty() ? "_" : out;
}

std::string numberedTag(const char* what, std::int64_t zeroBased) { return what + std::to_string(zeroBased + 1); }

}  // namespace widelab
