#include "MetricsCodec.h"

#include "ByteText.h"
#include "Curves.h"
#include "JsonText.h"
#include "Utf8.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <cstdio>
#include <limits>

// metrics.jsonl's reader: each line checked field by field, a damaged one
// refused with the reason; the writer is MetricsCodec.cpp.

namespace widelab {

namespace {

using Json = nlohmann::json;

// Bounds far beyond any model WideLab trains, so that a damaged number cannot
// make a view build millions of rows, combo entries or colour categories.
constexpr std::int64_t kMaxBlocks = 4096;
constexpr std::int64_t kMaxExpertsRead = 65536;
constexpr std::int64_t kMaxPathsRead = 1024;
constexpr std::int64_t kMaxTokens = 100000;
constexpr std::int64_t kMaxImageSide = 1024;
// Attention weights and predictions are probabilities; float rounding may pass 1 by a hair.
constexpr double kProbabilitySlack = 1e-3;

// Thrown inside this file only, caught by decodeMetricsLine: the reason a line is refused.
struct Refused {
    std::string reason;
};

[[noreturn]] void refuse(std::string reason) { throw Refused{std::move(reason)}; }

// A value as a message shows it: numbers as written, strings quoted and shortened.
std::string shown(const Json* value)
{
    if (value == nullptr)
        return "missing";
    if (value->is_array())
        return "an array";
    if (value->is_object())
        return "an object";
    if (value->is_string()) {
        const std::string& text = value->get_ref<const std::string&>();
        std::size_t cut = 0, characters = 0;  // 40 characters, not cut inside one
        while (cut < text.size() && characters < 40) {
            ++cut;
            while (cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
                ++cut;
            ++characters;
        }
        return "\"" + text.substr(0, cut) + (cut < text.size() ? "…" : "") + "\"";
    }
    return value->dump();  // null, true, false, a number as JSON writes it
}

std::string quoted(const std::string& where) { return "\"" + where + "\""; }
std::string at(const std::string& where, std::size_t index) { return where + "[" + std::to_string(index) + "]"; }
std::string field(const std::string& where, const char* key) { return where + "." + key; }

const Json* member(const Json& object, const char* key)
{
    const auto found = object.find(key);
    return found == object.end() ? nullptr : &*found;
}

// A finite number; null (how the trainer writes NaN and infinities) is NaN where allowed.
double number(const Json* value, const std::string& where, bool nullAllowed = true)
{
    if (value != nullptr && value->is_null() && nullAllowed)
        return std::numeric_limits<double>::quiet_NaN();
    if (value == nullptr || !value->is_number())
        refuse(quoted(where) + " is " + shown(value) + ", not a number");
    const double v = value->get<double>();
    if (!std::isfinite(v))
        refuse(quoted(where) + " is not a finite number");
    return v;
}

// A number of an attention map (or null): a probability for exact and sparse
// maps, but an implied map (a kernel's or a low-rank projection's, see
// model/attention/MechanismSpec.h: MapKind) may leave [0, 1]; only a value no
// mechanism gives is refused.
constexpr double kMapWeightBound = 1e3;
double mapWeight(const Json* value, const std::string& where)
{
    const double v = number(value, where);
    if (v < -kMapWeightBound || v > kMapWeightBound)
        refuse(quoted(where) + " is " + shown(value) + ", not an attention weight (from -1000 to 1000)");
    return v;
}

// A number that is a probability (or null).
double probability(const Json* value, const std::string& where)
{
    const double v = number(value, where);
    if (v < -kProbabilitySlack || v > 1 + kProbabilitySlack)
        refuse(quoted(where) + " is " + shown(value) + ", not a weight from 0 to 1");
    return v;
}

std::int64_t integer(const Json* value, const std::string& where, std::int64_t lowest, std::int64_t highest,
                     const std::string& bounds)
{
    bool whole = false;
    std::int64_t v = 0;
    if (value != nullptr && value->is_number_unsigned()) {
        const auto u = value->get<std::uint64_t>();
        whole = u <= static_cast<std::uint64_t>(highest) && static_cast<std::int64_t>(u) >= lowest;
        v = whole ? static_cast<std::int64_t>(u) : 0;
    } else if (value != nullptr && value->is_number_integer()) {
        v = value->get<std::int64_t>();
        whole = v >= lowest && v <= highest;
    } else if (value != nullptr && value->is_number_float()) {
        const double d = value->get<double>();
        whole = std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(lowest)
                && d <= static_cast<double>(highest);
        v = whole ? static_cast<std::int64_t>(d) : 0;
    }
    if (!whole)
        refuse(quoted(where) + " is " + shown(value) + ", not a whole number " + bounds);
    return v;
}

const Json& array(const Json* value, const std::string& where)
{
    if (value == nullptr || !value->is_array())
        refuse(quoted(where) + " is " + shown(value) + ", not an array");
    return *value;
}

// An array that may be left out (an older trainer, a dense model): empty then.
const Json& optionalArray(const Json& object, const char* key, const std::string& where)
{
    static const Json empty = Json::array();
    const Json* value = member(object, key);
    return value == nullptr ? empty : array(value, where);
}

const Json& object(const Json* value, const std::string& where)
{
    if (value == nullptr || !value->is_object())
        refuse(quoted(where) + " is " + shown(value) + ", not an object");
    return *value;
}

std::string string(const Json* value, const std::string& where)
{
    if (value == nullptr || !value->is_string())
        refuse(quoted(where) + " is " + shown(value) + ", not a text");
    return value->get<std::string>();
}

template <typename T, typename Read>
std::vector<T> listOf(const Json& values, const std::string& where, Read read)
{
    std::vector<T> out;
    out.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
        out.push_back(static_cast<T>(read(&values[i], at(where, i))));
    return out;
}

std::vector<float> floatsOf(const Json* value, const std::string& where)
{
    return listOf<float>(array(value, where), where, [](const Json* v, const std::string& w) { return number(v, w); });
}

std::vector<double> doublesOf(const Json* value, const std::string& where)
{
    return listOf<double>(array(value, where), where, [](const Json* v, const std::string& w) { return number(v, w); });
}

// The step every line carries: a whole number from 0 to 2^53.
std::int64_t stepOf(const Json& line)
{
    const Json* step = member(line, "step");
    if (step == nullptr)
        refuse("it has no \"step\"");
    return integer(step, "step", 0, kMaxMetricsStep, "from 0 to 2^53");
}

// [block][channel], every row of one length.
std::vector<std::vector<float>> normRows(const Json& norms, const char* key)
{
    const std::string where = field("layernorm", key);
    const Json& rows = optionalArray(norms, key, where);
    if (static_cast<std::int64_t>(rows.size()) > kMaxBlocks)
        refuse(quoted(where) + " has " + std::to_string(rows.size()) + " rows, more than " + std::to_string(kMaxBlocks)
               + " blocks");
    std::vector<std::vector<float>> out;
    for (std::size_t b = 0; b < rows.size(); ++b) {
        out.push_back(floatsOf(&rows[b], at(where, b)));
        if (out.back().size() != out.front().size())
            refuse(quoted(at(where, b)) + " has " + std::to_string(out.back().size()) + " channels but "
                   + quoted(at(where, 0)) + " has " + std::to_string(out.front().size()));
    }
    return out;
}

void sameShape(const std::vector<std::vector<float>>& gamma, const std::vector<std::vector<float>>& beta,
               const char* gammaKey, const char* betaKey)
{
    const auto width = [](const std::vector<std::vector<float>>& rows) { return rows.empty() ? 0 : rows.front().size(); };
    if (gamma.size() != beta.size() || width(gamma) != width(beta))
        refuse("\"layernorm." + std::string(gammaKey) + "\" is " + std::to_string(gamma.size()) + " x "
               + std::to_string(width(gamma)) + " but \"layernorm." + betaKey + "\" is " + std::to_string(beta.size())
               + " x " + std::to_string(width(beta)));
}

LayerNormDivergence divergenceOf(const Json& line, const char* key)
{
    const Json* value = member(line, key);
    if (value == nullptr)
        return {};
    const Json& d = object(value, key);
    auto read = [&](const char* name) {
        const Json* v = member(d, name);
        return v == nullptr ? 0.0 : number(v, field(key, name));
    };
    return {read("gamma_all_pairs"), read("beta_all_pairs"), read("gamma_elementwise"), read("beta_elementwise")};
}

RoutingStats decodeRouting(const Json& value, const std::string& where, const std::vector<RoutingStats>& before)
{
    const Json& r = object(&value, where);
    RoutingStats load;
    load.block = integer(member(r, "block"), field(where, "block"), 0, kMaxBlocks - 1,
                         "from 0 to " + std::to_string(kMaxBlocks - 1));
    const std::string tokensWhere = field(where, "tokens_per_expert");
    const Json& tokens = array(member(r, "tokens_per_expert"), tokensWhere);
    if (tokens.empty() || static_cast<std::int64_t>(tokens.size()) > kMaxExpertsRead)
        refuse(quoted(tokensWhere) + " has " + std::to_string(tokens.size()) + " experts, not 1 to "
               + std::to_string(kMaxExpertsRead));
    load.tokensPerExpert = listOf<std::int64_t>(tokens, tokensWhere, [](const Json* v, const std::string& w) {
        return integer(v, w, 0, kMaxMetricsStep, "from 0 to 2^53");
    });
    const std::size_t experts = load.tokensPerExpert.size();
    if (!before.empty() && experts != before.front().tokensPerExpert.size())
        refuse(quoted(where) + " has " + std::to_string(experts) + " experts but \"routing[0]\" has "
               + std::to_string(before.front().tokensPerExpert.size()));
    if (const Json* dropped = member(r, "dropped_percent_per_choice")) {
        const std::string droppedWhere = field(where, "dropped_percent_per_choice");
        load.droppedPercentPerChoice = doublesOf(dropped, droppedWhere);
        if (load.droppedPercentPerChoice.size() > experts)
            refuse(quoted(droppedWhere) + " has " + std::to_string(load.droppedPercentPerChoice.size())
                   + " choices for " + std::to_string(experts) + " experts");
    }
    if (const Json* unused = member(r, "unused_experts"))
        load.unusedExperts = integer(unused, field(where, "unused_experts"), 0, static_cast<std::int64_t>(experts),
                                     "from 0 to " + std::to_string(experts) + " (the experts)");
    if (const Json* entropy = member(r, "router_entropy"))
        load.routerEntropy = number(entropy, field(where, "router_entropy"));
    auto optionalNumber = [&](const char* key, double& out) {
        if (const Json* v = member(r, key))
            out = number(v, field(where, key));
    };
    optionalNumber("max_violation", load.maxViolation);
    optionalNumber("effective_experts", load.effectiveExperts);
    optionalNumber("z_loss", load.zLoss);
    optionalNumber("dead_fraction", load.deadFraction);
    if (const Json* consistency = member(r, "consistency"))
        load.consistency = probability(consistency, field(where, "consistency"));
    if (const Json* fair = member(r, "load_vs_fair")) {
        const std::string fairWhere = field(where, "load_vs_fair");
        load.loadVsFair = doublesOf(fair, fairWhere);
        if (load.loadVsFair.size() != experts)
            refuse(quoted(fairWhere) + " has " + std::to_string(load.loadVsFair.size()) + " values for "
                   + std::to_string(experts) + " experts");
    }
    return load;
}

PathWeights decodePath(const Json& value, const std::string& where)
{
    const Json& p = object(&value, where);
    PathWeights path;
    path.block = integer(member(p, "block"), field(where, "block"), 0, kMaxBlocks - 1,
                         "from 0 to " + std::to_string(kMaxBlocks - 1));
    path.sublayer = string(member(p, "sublayer"), field(where, "sublayer"));
    if (path.sublayer != "attention" && path.sublayer != "ffn" && path.sublayer != "cross_attention")
        refuse(quoted(field(where, "sublayer")) + " is " + shown(member(p, "sublayer"))
               + ", not \"attention\", \"ffn\" or \"cross_attention\"");
    path.alpha = floatsOf(member(p, "alpha"), field(where, "alpha"));
    const Json* paths = member(p, "paths");
    path.paths = paths != nullptr ? integer(paths, field(where, "paths"), 1, kMaxPathsRead, "from 1 to " + std::to_string(kMaxPathsRead))
                                  : static_cast<std::int64_t>(path.alpha.size());
    // alpha: a weight per path, then (extra features on) one per "mean without path i".
    const auto weights = static_cast<std::int64_t>(path.alpha.size());
    if (weights != path.paths && weights != 2 * path.paths)
        refuse(quoted(field(where, "alpha")) + " has " + std::to_string(weights) + " weights for "
               + std::to_string(path.paths) + " paths (it holds one per path, or two with the extra features)");
    if (const Json* beta = member(p, "beta"))
        path.beta = static_cast<float>(number(beta, field(where, "beta")));
    if (const Json* diversity = member(p, "diversity"))
        path.diversity = number(diversity, field(where, "diversity"));
    return path;
}

// "weights" or "gradients": per parameter group, the smallest and largest value
// and the counts of equal buckets between them.
std::vector<ValueHistogram> decodeHistograms(const Json& json, const char* key)
{
    constexpr std::int64_t kMaxBuckets = 1024;
    const Json& groups = optionalArray(json, key, key);
    if (static_cast<std::int64_t>(groups.size()) > 4 * kMaxBlocks)
        refuse(quoted(key) + " has " + std::to_string(groups.size()) + " groups, more than "
               + std::to_string(4 * kMaxBlocks));
    std::vector<ValueHistogram> out;
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const std::string where = at(key, i);
        const Json& g = object(&groups[i], where);
        ValueHistogram h;
        h.group = string(member(g, "group"), field(where, "group"));
        h.low = number(member(g, "low"), field(where, "low"), false);
        h.high = number(member(g, "high"), field(where, "high"), false);
        if (h.high < h.low)
            refuse(quoted(field(where, "high")) + " is " + shown(member(g, "high")) + ", below its \"low\" ("
                   + shown(member(g, "low")) + ")");
        const std::string counts = field(where, "counts");
        const Json& written = array(member(g, "counts"), counts);
        if (written.empty() || static_cast<std::int64_t>(written.size()) > kMaxBuckets)
            refuse(quoted(counts) + " has " + std::to_string(written.size()) + " buckets, not from 1 to "
                   + std::to_string(kMaxBuckets));
        h.counts = listOf<std::int64_t>(written, counts, [](const Json* v, const std::string& w) {
            return integer(v, w, 0, kMaxMetricsStep, "from 0 to 2^53");
        });
        out.push_back(std::move(h));
    }
    return out;
}

void decodeTrain(const Json& json, MetricsRecord& record)
{
    TrainingSnapshot& s = record.train;
    s.step = stepOf(json);
    if (const Json* wall = member(json, "wall_seconds")) {
        s.wallSeconds = number(wall, "wall_seconds", false);
        if (s.wallSeconds < 0)
            refuse("\"wall_seconds\" is " + shown(wall) + ", below 0");
    }
    for (const TrainingCurve& curve : kTrainingCurves)
        if (const Json* value = member(json, curve.name))
            s.*curve.value = record.values[curve.name] = number(value, curve.name);
    auto value = [&](const char* name) {  // not a curve, still checked
        const Json* written = member(json, name);
        return written == nullptr ? 0.0 : number(written, name);
    };
    s.taskLoss = value("task_loss");
    s.stepSeconds = value("step_seconds");
    s.dataSeconds = value("data_seconds");
    s.measurementSeconds = value("measurement_seconds");
    // Memory as deviceMemory() measured it: passed over (left 0) rather than refused
    // when it is not a count of bytes (a non-negative number a double holds exactly,
    // the bound steps have too), since no view draws the line by it.
    if (const Json* kind = member(json, "memory_kind"); kind != nullptr && kind->is_string())
        s.memoryKind = kind->get<std::string>();
    auto bytes = [&](const char* name) -> std::int64_t {
        const Json* written = member(json, name);
        if (written == nullptr || !written->is_number())
            return 0;
        const double v = written->get<double>();
        return std::isfinite(v) && v >= 0 && v <= static_cast<double>(kMaxMetricsStep) ? static_cast<std::int64_t>(v) : 0;
    };
    s.memoryBytes = bytes("memory_bytes");
    s.memoryReservedBytes = bytes("memory_reserved_bytes");
    s.memoryPeakBytes = bytes("memory_peak_bytes");
    s.memoryPeakReservedBytes = bytes("memory_peak_reserved_bytes");

    const Json& routing = optionalArray(json, "routing", "routing");
    if (static_cast<std::int64_t>(routing.size()) > kMaxBlocks)
        refuse("\"routing\" has " + std::to_string(routing.size()) + " blocks, more than " + std::to_string(kMaxBlocks));
    for (std::size_t i = 0; i < routing.size(); ++i)
        s.routing.push_back(decodeRouting(routing[i], at("routing", i), s.routing));

    if (const Json* layernorm = member(json, "layernorm")) {
        const Json& norms = object(layernorm, "layernorm");
        s.attentionGamma = normRows(norms, "attention_gamma");
        s.attentionBeta = normRows(norms, "attention_beta");
        s.ffnGamma = normRows(norms, "ffn_gamma");
        s.ffnBeta = normRows(norms, "ffn_beta");
        sameShape(s.attentionGamma, s.attentionBeta, "attention_gamma", "attention_beta");
        sameShape(s.ffnGamma, s.ffnBeta, "ffn_gamma", "ffn_beta");
    }
    s.divergence = divergenceOf(json, "divergence");
    s.attentionDivergence = divergenceOf(json, "attention_divergence");
    if (const Json* residual = member(json, "residual_norm")) {
        s.residualNorms = doublesOf(residual, "residual_norm");
        if (static_cast<std::int64_t>(s.residualNorms.size()) > kMaxBlocks)
            refuse("\"residual_norm\" has " + std::to_string(s.residualNorms.size()) + " blocks, more than "
                   + std::to_string(kMaxBlocks));
    }

    s.weightHistograms = decodeHistograms(json, "weights");
    s.gradientHistograms = decodeHistograms(json, "gradients");

    if (const Json* world = member(json, "world_size")) {
        constexpr std::int64_t kMaxRanksRead = 1 << 20;
        WorldPace& pace = s.world;
        pace.size = integer(world, "world_size", 1, kMaxRanksRead, "from 1 to 2^20");
        pace.allReduceWaitSeconds = value("all_reduce_wait_seconds");
        if (const Json* compute = member(json, "rank_compute_seconds"))
            pace.computeSeconds = doublesOf(compute, "rank_compute_seconds");
        if (const Json* peaks = member(json, "rank_memory_peak_bytes"))
            pace.peakBytes = listOf<std::int64_t>(array(peaks, "rank_memory_peak_bytes"), "rank_memory_peak_bytes",
                                                  [](const Json* v, const std::string& w) {
                                                      return integer(v, w, 0, kMaxMetricsStep, "from 0 to 2^53");
                                                  });
        if (static_cast<std::int64_t>(pace.computeSeconds.size()) > pace.size
            || static_cast<std::int64_t>(pace.peakBytes.size()) > pace.size)
            refuse("\"rank_compute_seconds\" and \"rank_memory_peak_bytes\" hold at most world_size ("
                   + std::to_string(pace.size) + ") entries");
    }

    const Json& paths = optionalArray(json, "paths", "paths");
    if (static_cast<std::int64_t>(paths.size()) > 2 * kMaxBlocks)
        refuse("\"paths\" has " + std::to_string(paths.size()) + " sublayers, more than "
               + std::to_string(2 * kMaxBlocks));
    for (std::size_t i = 0; i < paths.size(); ++i)
        s.paths.push_back(decodePath(paths[i], at("paths", i)));

    const Json& alarms = optionalArray(json, "alarms", "alarms");
    if (static_cast<std::int64_t>(alarms.size()) > kMaxBlocks * 4)
        refuse("\"alarms\" has " + std::to_string(alarms.size()) + " alarms, more than " + std::to_string(kMaxBlocks * 4));
    for (std::size_t i = 0; i < alarms.size(); ++i) {
        const std::string where = at("alarms", i);
        const Json& a = object(&alarms[i], where);
        HealthEvent alarm;
        alarm.kind = string(member(a, "kind"), field(where, "kind"));
        alarm.level = string(member(a, "level"), field(where, "level"));
        if (alarm.level != "warning" && alarm.level != "info")
            refuse(quoted(field(where, "level")) + " is " + shown(member(a, "level")) + ", not \"warning\" or \"info\"");
        alarm.block = integer(member(a, "block"), field(where, "block"), -1, kMaxBlocks - 1,
                              "from -1 to " + std::to_string(kMaxBlocks - 1));
        alarm.index = integer(member(a, "index"), field(where, "index"), -1, kMaxExpertsRead - 1,
                              "from -1 to " + std::to_string(kMaxExpertsRead - 1));
        if (const Json* sublayer = member(a, "sublayer"))
            alarm.sublayer = string(sublayer, field(where, "sublayer"));
        alarm.text = string(member(a, "text"), field(where, "text"));
        s.alarms.push_back(std::move(alarm));
    }
    record.step = s.step;
}

void decodeEval(const Json& json, MetricsRecord& record)
{
    EvaluationResult& r = record.eval;
    r.step = stepOf(json);
    r.split = string(member(json, "split"), "split");
    r.loss = number(member(json, "loss"), "loss");
    r.accuracy = number(member(json, "accuracy"), "accuracy");
    if (const Json* perplexity = member(json, "perplexity"))
        r.perplexity = number(perplexity, "perplexity");
    if (const Json* examples = member(json, "examples"))
        r.examples = integer(examples, "examples", 0, kMaxMetricsStep, "from 0 to 2^53");
    if (const Json* translated = member(json, "translated")) {
        r.translated = integer(translated, "translated", 0, kMaxMetricsStep, "from 0 to 2^53");
        r.bleu = number(member(json, "bleu"), "bleu");
        r.chrf = number(member(json, "chrf"), "chrf");
    }
    record.step = r.step;
}

// [layer][head][query][key] under `key`: every head `queries` x `keys`, every
// layer as many heads (self-attention: the tokens both ways).
std::vector<std::vector<std::vector<std::vector<float>>>> decodeMaps(const Json& json, const char* key,
                                                                    std::size_t queries, std::size_t keys)
{
    std::vector<std::vector<std::vector<std::vector<float>>>> layers;
    const Json& written = optionalArray(json, key, key);
    const std::string name = key;
    if (static_cast<std::int64_t>(written.size()) > kMaxBlocks)
        refuse(quoted(name) + " has " + std::to_string(written.size()) + " layers, more than " + std::to_string(kMaxBlocks));
    for (std::size_t l = 0; l < written.size(); ++l) {
        const std::string layerWhere = at(name, l);
        const Json& heads = array(&written[l], layerWhere);
        if (heads.empty())
            refuse(quoted(layerWhere) + " has no heads");
        if (l > 0 && heads.size() != layers.front().size())
            refuse(quoted(layerWhere) + " has " + std::to_string(heads.size()) + " heads but " + quoted(at(name, 0))
                   + " has " + std::to_string(layers.front().size()));
        std::vector<std::vector<std::vector<float>>> maps;
        for (std::size_t h = 0; h < heads.size(); ++h) {
            const std::string headWhere = at(layerWhere, h);
            const Json& rows = array(&heads[h], headWhere);
            if (rows.size() != queries)
                refuse(quoted(headWhere) + " has " + std::to_string(rows.size()) + " rows for " + std::to_string(queries)
                       + " tokens");
            std::vector<std::vector<float>> map;
            for (std::size_t q = 0; q < queries; ++q) {
                const std::string rowWhere = at(headWhere, q);
                const Json& row = array(&rows[q], rowWhere);
                if (row.size() != keys)
                    refuse(quoted(rowWhere) + " has " + std::to_string(row.size()) + " weights for " + std::to_string(keys)
                           + " tokens");
                map.push_back(listOf<float>(row, rowWhere, mapWeight));
            }
            maps.push_back(std::move(map));
        }
        layers.push_back(std::move(maps));
    }
    return layers;
}

// [block][token][choice]: one list per token, as many choices for every token of a block.
void decodeExperts(const Json& json, ProbeResult& p)
{
    const std::size_t n = p.tokens.size();
    const Json& blocks = optionalArray(json, "experts", "experts");
    if (static_cast<std::int64_t>(blocks.size()) > kMaxBlocks)
        refuse("\"experts\" has " + std::to_string(blocks.size()) + " blocks, more than " + std::to_string(kMaxBlocks));
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const std::string blockWhere = at("experts", b);
        const Json& perToken = array(&blocks[b], blockWhere);
        if (perToken.size() != n)
            refuse(quoted(blockWhere) + " has " + std::to_string(perToken.size()) + " entries for " + std::to_string(n)
                   + " tokens");
        std::vector<std::vector<std::int64_t>> block;
        for (std::size_t t = 0; t < n; ++t) {
            const std::string tokenWhere = at(blockWhere, t);
            const Json& choices = array(&perToken[t], tokenWhere);
            if (t > 0 && choices.size() != block.front().size())
                refuse(quoted(tokenWhere) + " has " + std::to_string(choices.size()) + " choices but "
                       + quoted(at(blockWhere, 0)) + " has " + std::to_string(block.front().size()));
            block.push_back(listOf<std::int64_t>(choices, tokenWhere, [](const Json* v, const std::string& w) {
                return integer(v, w, -1, kMaxExpertsRead - 1, "from -1 (dropped) to " + std::to_string(kMaxExpertsRead - 1));
            }));
        }
        p.experts.push_back(std::move(block));
    }
}

// The probe's image: sizes consistent with each other, with the pixels and with the tokens.
void decodeProbeImage(const Json& json, ProbeResult& p)
{
    const Json* value = member(json, "image");
    if (value == nullptr)
        return;
    const Json& image = object(value, "image");
    const std::string side = "from 1 to " + std::to_string(kMaxImageSide);
    ProbeImage& out = p.image;
    out.width = integer(member(image, "width"), "image.width", 1, kMaxImageSide, side);
    out.height = integer(member(image, "height"), "image.height", 1, kMaxImageSide, side);
    out.channels = integer(member(image, "channels"), "image.channels", 1, 3, "1 (grey) or 3 (RGB)");
    if (out.channels == 2)
        refuse("\"image.channels\" is 2, not 1 (grey) or 3 (RGB)");
    out.gridRows = integer(member(image, "grid_rows"), "image.grid_rows", 1, out.height, "from 1 to the height");
    out.gridCols = integer(member(image, "grid_cols"), "image.grid_cols", 1, out.width, "from 1 to the width");
    const auto pixels = fromBase64(string(member(image, "pixels"), "image.pixels"));
    if (!pixels)
        refuse("\"image.pixels\" is not base64");
    const std::int64_t expected = out.width * out.height * out.channels;
    if (static_cast<std::int64_t>(pixels->size()) != expected)
        refuse("\"image.pixels\" holds " + std::to_string(pixels->size()) + " bytes for " + std::to_string(out.width)
               + "x" + std::to_string(out.height) + "x" + std::to_string(out.channels) + " (" + std::to_string(expected) + ")");
    out.pixels = *pixels;
    const auto patches = static_cast<std::size_t>(out.gridRows * out.gridCols);
    if (p.tokens.size() != patches && p.tokens.size() != patches + 1)
        refuse("the probe has " + std::to_string(p.tokens.size()) + " tokens for a grid of "
               + std::to_string(out.gridRows) + "x" + std::to_string(out.gridCols) + " patches");
}

// The logit lens: stages in block order, each a distribution over the
// prediction's entries that "logit_lens_columns" names (absent: all of them).
void decodeLens(const Json& json, ProbeResult& p)
{
    const Json& stages = optionalArray(json, "logit_lens", "logit_lens");
    if (stages.empty())
        return;
    // Two sublayers a block, three in a translation model's decoder.
    if (static_cast<std::int64_t>(stages.size()) > 3 * kMaxBlocks)
        refuse("\"logit_lens\" has " + std::to_string(stages.size()) + " stages, more than " + std::to_string(3 * kMaxBlocks));
    const auto last = static_cast<std::int64_t>(p.prediction.size()) - 1;
    const Json& columns = optionalArray(json, "logit_lens_columns", "logit_lens_columns");
    p.lensColumns = listOf<std::int64_t>(columns, "logit_lens_columns", [&](const Json* v, const std::string& w) {
        return integer(v, w, 0, std::max<std::int64_t>(last, 0), "from 0 to " + std::to_string(last) + " (the predictions)");
    });
    const std::size_t width = p.lensColumns.empty() ? p.prediction.size() : p.lensColumns.size();
    for (std::size_t i = 0; i < stages.size(); ++i) {
        const std::string where = at("logit_lens", i);
        const Json& s = object(&stages[i], where);
        LensStage stage;
        stage.block = integer(member(s, "block"), field(where, "block"), 0, kMaxBlocks - 1,
                              "from 0 to " + std::to_string(kMaxBlocks - 1));
        stage.sublayer = string(member(s, "sublayer"), field(where, "sublayer"));
        const std::string distributionWhere = field(where, "distribution");
        stage.distribution = listOf<float>(array(member(s, "distribution"), distributionWhere), distributionWhere, probability);
        if (stage.distribution.size() != width)
            refuse(quoted(distributionWhere) + " has " + std::to_string(stage.distribution.size()) + " values for "
                   + std::to_string(width) + " columns");
        p.logitLens.push_back(std::move(stage));
    }
}

void decodeProbe(const Json& json, MetricsRecord& record)
{
    ProbeResult& p = record.probe;
    p.step = stepOf(json);
    p.text = string(member(json, "text"), "text");
    const Json& tokens = array(member(json, "tokens"), "tokens");
    if (tokens.empty())
        refuse("the probe has no tokens");
    if (static_cast<std::int64_t>(tokens.size()) > kMaxTokens)
        refuse("the probe has " + std::to_string(tokens.size()) + " tokens, more than " + std::to_string(kMaxTokens));
    for (std::size_t i = 0; i < tokens.size(); ++i)
        p.tokens.push_back(string(&tokens[i], at("tokens", i)));
    p.attention = decodeMaps(json, "attention", p.tokens.size(), p.tokens.size());
    decodeExperts(json, p);
    decodeProbeImage(json, p);
    if (const Json* prediction = member(json, "prediction"))
        p.prediction = listOf<float>(array(prediction, "prediction"), "prediction", probability);
    const Json& labels = optionalArray(json, "prediction_labels", "prediction_labels");
    if (!labels.empty() && labels.size() != p.prediction.size())
        refuse("\"prediction_labels\" has " + std::to_string(labels.size()) + " labels for "
               + std::to_string(p.prediction.size()) + " predictions");
    for (std::size_t i = 0; i < labels.size(); ++i)
        p.predictionLabels.push_back(string(&labels[i], at("prediction_labels", i)));
    decodeLens(json, p);
    // Optional: the text's true class, an index into "prediction".
    if (const Json* label = member(json, "label")) {
        if (p.prediction.empty())
            refuse("\"label\" is given but there is no \"prediction\"");
        const auto last = static_cast<std::int64_t>(p.prediction.size()) - 1;
        p.label = integer(label, "label", 0, last, "from 0 to " + std::to_string(last));
    }
    // Optional: tokens of the text past the sequence length, which the model did not see.
    if (const Json* cut = member(json, "cut_tokens"))
        p.cutTokens = integer(cut, "cut_tokens", 1, std::numeric_limits<std::int64_t>::max(), "at least 1");
    // Optional: a translation model's translation of the text.
    if (const Json* translation = member(json, "translation"))
        p.translation = string(translation, "translation");
    // Optional: its decoder's tokens and cross-attention over the text's tokens.
    const Json& targets = optionalArray(json, "target_tokens", "target_tokens");
    if (static_cast<std::int64_t>(targets.size()) > kMaxTokens)
        refuse("\"target_tokens\" has " + std::to_string(targets.size()) + " tokens, more than " + std::to_string(kMaxTokens));
    for (std::size_t i = 0; i < targets.size(); ++i)
        p.targetTokens.push_back(string(&targets[i], at("target_tokens", i)));
    p.crossAttention = decodeMaps(json, "cross_attention", p.targetTokens.size(), p.tokens.size());
    record.step = p.step;
}

// An insights line: head roles (every layer as many heads, every head a score per
// role, dominant roles among them) and expert specialisation.
void decodeInsights(const Json& json, MetricsRecord& record)
{
    ValidationInsights& v = record.insights;
    v.step = stepOf(json);
    if (const Json* examples = member(json, "examples"))
        v.examples = integer(examples, "examples", 0, kMaxMetricsStep, "from 0 to 2^53");
    const Json& classes = optionalArray(json, "classes", "classes");
    for (std::size_t i = 0; i < classes.size(); ++i)
        v.classNames.push_back(string(&classes[i], at("classes", i)));
    if (const Json* heads = member(json, "head_roles")) {
        const Json& h = object(heads, "head_roles");
        const Json& roles = array(member(h, "roles"), "head_roles.roles");
        if (roles.empty() || roles.size() > 64)
            refuse("\"head_roles.roles\" has " + std::to_string(roles.size()) + " roles, not 1 to 64");
        for (std::size_t i = 0; i < roles.size(); ++i)
            v.heads.roles.push_back(string(&roles[i], at("head_roles.roles", i)));
        const Json& layers = array(member(h, "scores"), "head_roles.scores");
        const Json& dominant = array(member(h, "dominant"), "head_roles.dominant");
        if (static_cast<std::int64_t>(layers.size()) > kMaxBlocks || dominant.size() != layers.size())
            refuse("\"head_roles.dominant\" has " + std::to_string(dominant.size()) + " layers for "
                   + std::to_string(layers.size()) + " layers of scores (at most " + std::to_string(kMaxBlocks) + ")");
        const auto lastRole = static_cast<std::int64_t>(roles.size()) - 1;
        for (std::size_t l = 0; l < layers.size(); ++l) {
            const std::string where = at("head_roles.scores", l);
            const Json& heads = array(&layers[l], where);
            const Json& dominantHeads = array(&dominant[l], at("head_roles.dominant", l));
            if (heads.empty() || (l > 0 && heads.size() != v.heads.scores.front().size()) || dominantHeads.size() != heads.size())
                refuse(quoted(where) + " has " + std::to_string(heads.size()) + " heads, not as many as every layer's scores and dominant roles");
            std::vector<std::vector<double>> layer;
            for (std::size_t k = 0; k < heads.size(); ++k) {
                const std::string headWhere = at(where, k);
                layer.push_back(listOf<double>(array(&heads[k], headWhere), headWhere, probability));
                if (layer.back().size() != roles.size())
                    refuse(quoted(headWhere) + " has " + std::to_string(layer.back().size()) + " scores for "
                           + std::to_string(roles.size()) + " roles");
            }
            v.heads.scores.push_back(std::move(layer));
            v.heads.dominant.push_back(listOf<std::int64_t>(dominantHeads, at("head_roles.dominant", l),
                                                            [&](const Json* value, const std::string& w) {
                                                                return integer(value, w, 0, lastRole,
                                                                               "from 0 to " + std::to_string(lastRole));
                                                            }));
        }
    }
    const Json& experts = optionalArray(json, "experts", "experts");
    if (static_cast<std::int64_t>(experts.size()) > kMaxBlocks)
        refuse("\"experts\" has " + std::to_string(experts.size()) + " blocks, more than " + std::to_string(kMaxBlocks));
    for (std::size_t b = 0; b < experts.size(); ++b) {
        const std::string where = at("experts", b);
        const Json& e = object(&experts[b], where);
        ExpertIntake s;
        s.block = integer(member(e, "block"), field(where, "block"), 0, kMaxBlocks - 1,
                          "from 0 to " + std::to_string(kMaxBlocks - 1));
        const std::string topWhere = field(where, "top_tokens");
        const Json& top = array(member(e, "top_tokens"), topWhere);
        if (top.empty() || static_cast<std::int64_t>(top.size()) > kMaxExpertsRead)
            refuse(quoted(topWhere) + " has " + std::to_string(top.size()) + " experts, not 1 to " + std::to_string(kMaxExpertsRead));
        for (std::size_t x = 0; x < top.size(); ++x) {
            const std::string expertWhere = at(topWhere, x);
            const Json& list = array(&top[x], expertWhere);
            std::vector<std::pair<std::string, std::int64_t>> tokens;
            for (std::size_t t = 0; t < list.size(); ++t) {
                const std::string pairWhere = at(expertWhere, t);
                const Json& pair = array(&list[t], pairWhere);
                if (pair.size() != 2)
                    refuse(quoted(pairWhere) + " is not a [token, count] pair");
                tokens.emplace_back(string(&pair[0], at(pairWhere, 0)),
                                    integer(&pair[1], at(pairWhere, 1), 0, kMaxMetricsStep, "from 0 to 2^53"));
            }
            s.topTokens.push_back(std::move(tokens));
        }
        const Json& counts = optionalArray(e, "class_counts", field(where, "class_counts"));
        if (!counts.empty() && counts.size() != top.size())
            refuse(quoted(field(where, "class_counts")) + " has " + std::to_string(counts.size()) + " experts but "
                   + quoted(topWhere) + " has " + std::to_string(top.size()));
        for (std::size_t x = 0; x < counts.size(); ++x) {
            const std::string countsWhere = at(field(where, "class_counts"), x);
            s.classCounts.push_back(listOf<std::int64_t>(array(&counts[x], countsWhere), countsWhere,
                                                         [](const Json* value, const std::string& w) {
                                                             return integer(value, w, 0, kMaxMetricsStep, "from 0 to 2^53");
                                                         }));
            if (!v.classNames.empty() && s.classCounts.back().size() != v.classNames.size())
                refuse(quoted(countsWhere) + " has " + std::to_string(s.classCounts.back().size()) + " counts for "
                       + std::to_string(v.classNames.size()) + " classes");
        }
        v.experts.push_back(std::move(s));
    }
    record.step = v.step;
}

}  // namespace

std::optional<MetricsRecord> decodeMetricsLine(std::string_view bytes, std::string* reason)
{
    try {
        if (const std::size_t bad = findInvalidUtf8(bytes); bad != std::string_view::npos) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(static_cast<unsigned char>(bytes[bad])));
            refuse("not valid UTF-8 (byte " + std::to_string(bad + 1) + " of the line is 0x" + hex + ")");
        }
        std::string error;
        const std::optional<Json> parsed = tryParseJsonText(std::string(bytes), &error);
        if (!parsed)
            refuse("not JSON (" + error + ")");
        if (!parsed->is_object())
            refuse("not a JSON object");
        const Json& json = *parsed;
        MetricsRecord record;
        record.typeName = string(member(json, "type"), "type");
        if (record.typeName == "train") {
            record.type = MetricsRecord::Type::Train;
            decodeTrain(json, record);
        } else if (record.typeName == "eval") {
            record.type = MetricsRecord::Type::Eval;
            decodeEval(json, record);
        } else if (record.typeName == "probe") {
            record.type = MetricsRecord::Type::Probe;
            decodeProbe(json, record);
        } else if (record.typeName == "insights") {
            record.type = MetricsRecord::Type::Insights;
            decodeInsights(json, record);
        }
        return record;
    } catch (const Refused& refused) {
        if (reason)
            *reason = refused.reason;
    } catch (const std::exception& error) {  // not expected: the checks above come first
        if (reason)
            *reason = error.what();
    }
    return std::nullopt;
}

}  // namespace widelab
