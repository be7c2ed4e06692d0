#include "ModelConfig.h"

#include "ConfigSchema.h"
#include "JsonSection.h"
#include "model/ParameterCount.h"
#include "model/attention/MechanismSpec.h"
#include "vocab/KeyRules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>

namespace widelab {
namespace {

// The model's keys: ranges, choices and defaults live in the schema.
const KeySpec& spec(const char* name) { return keySpec(std::string("model.") + name); }

template <typename Enum>
const std::string& nameOf(const char* key, Enum value)
{
    return spec(key).choices.at(static_cast<std::size_t>(value));
}

std::string number(std::int64_t value) { return std::to_string(value); }

// Keys given in the document that the model as configured never uses
// (vocab/KeyRules): the document reads as if they mattered, so each is a warning
// naming the reason. A key at the value its absence gives (as in a resolved
// document such as a run's config.json) says nothing and is not reported.
void warnUnused(const ModelConfig& c, const nlohmann::json& model, const JsonSection& s,
                std::vector<ConfigIssue>& warnings)
{
    const nlohmann::json resolved = c.toJson();
    // The given value against the one its absence gives, not the resolved one: with
    // image input max_len resolves to the patches whatever is given.
    auto atDefault = [&](const std::string& key) {
        nlohmann::json without = model;
        without.erase(key);
        std::vector<ConfigIssue> ignored;
        return ModelConfig::fromJson(without, ignored).toJson().at(key) == model.at(key);
    };
    const nlohmann::json document = {{"model", resolved}};
    for (const UnusedKey& unused : unusedKeys("model", sectionsLookup(document))) {
        const std::string key = unused.key.substr(std::string("model.").size());
        if (s.has(key) && !atDefault(key))
            warnings.push_back({s.keyPath(key), "has no effect " + unused.reason});
    }
    const std::vector<std::string> heads = headMechanisms(c);
    // A mechanism's own warnings, when every head uses it (in a mixed layer the others reach further).
    if (!heads.empty() && std::count(heads.begin(), heads.end(), heads.front()) == static_cast<std::ptrdiff_t>(heads.size()))
        if (const MechanismSpec* mechanism = findMechanism(heads.front()); mechanism && mechanism->warn)
            mechanism->warn(c, [&](const std::string& key, std::string reason) {
                warnings.push_back({s.keyPath(key), std::move(reason)});
            });
    for (const MechanismSpec* mechanism : attentionMechanisms()) {
        if (std::find(heads.begin(), heads.end(), mechanism->name) != heads.end())
            continue;
        for (const KeySpec& key : mechanism->keys) {
            const std::string name = key.name();
            if (s.has(name) && !atDefault(name))
                warnings.push_back({s.keyPath(name), "has no effect: no head uses \"" + mechanism->name + "\" attention"});
        }
    }
}

// model.attention, model.attention_mix and every mechanism's keys.
void readAttention(JsonSection& s, ModelConfig& c)
{
    std::size_t choice = 0;
    const std::vector<std::string> choices = attentionChoices();
    s.readChoice(spec("attention"), choice);
    c.attention = choices.at(choice);
    s.read(spec("attention_mix").name(), c.attentionMix);
    for (const MechanismSpec* mechanism : attentionMechanisms()) {
        for (const KeySpec& key : mechanism->keys) {
            nlohmann::json& value = c.attentionOptions[key.name()];
            if (key.type == KeyType::Integer) {
                std::int64_t v = value.get<std::int64_t>();
                s.read(key, v);
                value = v;
            } else if (key.type == KeyType::Number) {
                double v = value.get<double>();
                s.read(key, v);
                value = v;
            } else if (key.type == KeyType::Boolean) {
                bool v = value.get<bool>();
                s.read(key, v);
                value = v;
            } else if (key.type == KeyType::Choice) {
                const auto at = std::find(key.choices.begin(), key.choices.end(), value.get<std::string>());
                auto index = static_cast<std::size_t>(at - key.choices.begin());
                s.readChoice(key, index);
                value = key.choices.at(index);
            }
        }
    }
}

// The mechanisms' checks: mixed lists, language models, each mechanism's own rules.
void validateAttention(const ModelConfig& c, const std::function<void(const std::string&, std::string)>& report,
                       const std::function<bool(std::initializer_list<const char*>)>& readable)
{
    if (!readable({"attention", "attention_mix", "heads"}))
        return;
    const bool mixed = c.attention == kMixedAttention;
    if (mixed) {
        if (c.attentionMix.empty())
            report("attention_mix", "\"mixed\" attention needs a list of mechanisms, e.g. [\"linear\", \"local\"]");
        else if (c.heads % static_cast<std::int64_t>(c.attentionMix.size()) != 0)
            report("attention_mix", std::to_string(c.attentionMix.size()) + " mechanisms cannot share "
                                        + std::to_string(c.heads) + " heads equally: the list's length must divide model.heads");
        for (std::size_t i = 0; i < c.attentionMix.size(); ++i) {
            const std::string& name = c.attentionMix[i];
            if (!findMechanism(name)) {
                std::vector<std::string> names;
                for (const MechanismSpec* m : attentionMechanisms())
                    names.push_back(m->name);
                const std::string close = closestMatch(name, names);
                report("attention_mix", "entry " + std::to_string(i) + ": \"" + name + "\" is not an attention mechanism"
                                            + (close.empty() ? std::string() : " (did you mean \"" + close + "\"?)"));
            }
        }
    } else if (!c.attentionMix.empty()) {
        report("attention_mix", "only applies with model.attention \"mixed\"");
    }
    std::set<std::string> used;
    for (const std::string& name : headMechanisms(c))
        used.insert(name);
    for (const std::string& name : used) {
        const MechanismSpec* mechanism = findMechanism(name);
        if (!mechanism)
            continue;
        if (c.causal() && !mechanism->causal)
            report(mixed ? "attention_mix" : "attention",
                   "\"" + name + "\" cannot hide future tokens, which a language model needs; use a classification head");
        if (mechanism->validate)
            mechanism->validate(c, report);
    }
}

}  // namespace

nlohmann::json ModelConfig::defaultAttentionOptions()
{
    nlohmann::json options = nlohmann::json::object();
    for (const MechanismSpec* mechanism : attentionMechanisms())
        for (const KeySpec& key : mechanism->keys)
            options[key.name()] = key.defaultValue;
    return options;
}

std::int64_t ModelConfig::attentionInteger(const std::string& name) const
{
    return attentionOptions.at(name).get<std::int64_t>();
}

double ModelConfig::attentionNumber(const std::string& name) const { return attentionOptions.at(name).get<double>(); }

std::string ModelConfig::attentionText(const std::string& name) const
{
    return attentionOptions.at(name).get<std::string>();
}

bool ModelConfig::attentionFlag(const std::string& name) const { return attentionOptions.at(name).get<bool>(); }

std::string toString(Activation activation) { return nameOf("activation", activation); }

ModelConfig ModelConfig::fromJson(const nlohmann::json& model, std::vector<ConfigIssue>& issues,
                                  const std::string& path, std::vector<ConfigIssue>* warnings)
{
    ModelConfig c;
    const std::size_t issuesBefore = issues.size();
    JsonSection s(model, path, issues);

    s.read(spec("vocab_size"), c.vocabSize);
    s.read(spec("max_len"), c.maxLen);
    s.readChoice(spec("input"), c.input);
    s.read(spec("image_size"), c.imageSize);
    s.read(spec("patch_size"), c.patchSize);
    s.read(spec("channels"), c.channels);
    if (c.imageInput() && c.imageSize % c.patchSize == 0)
        c.maxLen = c.patches();  // the sequence is the patches, whatever max_len says
    s.read(spec("d_model"), c.dModel);
    s.read(spec("embedding_dim"), c.embeddingDim);
    s.read(spec("layers"), c.layers);
    s.read(spec("heads"), c.heads);
    const bool explicitHeadDim = s.has("head_dim");
    if (!explicitHeadDim && c.dModel % c.heads != 0)
        s.addIssue("head_dim", "not given, and " + s.keyPath("d_model") + " (" + number(c.dModel)
                                   + ") is not divisible by " + s.keyPath("heads") + " (" + number(c.heads)
                                   + "): give head_dim explicitly");
    c.headDim = c.dModel / c.heads;
    s.read(spec("head_dim"), c.headDim);
    c.ffnDim = 4 * c.dModel;
    s.read(spec("ffn_dim"), c.ffnDim);
    s.readChoice(spec("activation"), c.activation);
    s.read(spec("dropout"), c.dropout);
    readAttention(s, c);

    s.readChoice(spec("head"), c.head);
    c.decoderLayers = c.layers;
    s.read(spec("decoder_layers"), c.decoderLayers);
    s.readChoice(spec("pooling"), c.pooling);
    s.read(spec("pooler"), c.pooler);
    s.read(spec("num_classes"), c.numClasses);
    s.read(spec("segments"), c.segments);

    s.read(spec("experts"), c.experts);
    c.topK = std::min<std::int64_t>(2, c.experts);
    s.read(spec("top_k"), c.topK);
    s.read(spec("capacity_factor"), c.capacityFactor);
    // A language model never drops in evaluation unless asked to: capacity grows
    // with the tokens routed, so dropping would let later tokens change earlier
    // predictions (docs/model.md, "causal-safe").
    c.evalCapacityFactor = c.head == HeadKind::Classification ? 2.0 : 0.0;
    s.read(spec("eval_capacity_factor"), c.evalCapacityFactor);
    c.routerNoiseStd = c.experts > 1 ? 1.0 / static_cast<double>(c.experts) : 0.0;
    s.read(spec("router_noise_std"), c.routerNoiseStd);
    s.read(spec("balance_loss_weight"), c.balanceLossWeight);
    s.read(spec("router_z_loss_weight"), c.routerZLossWeight);
    c.routingGroups = c.layers;
    s.read(spec("routing_groups"), c.routingGroups);
    s.readChoice(spec("routing_priority"), c.routingPriority);
    s.readChoice(spec("balance_count"), c.balanceCount);
    s.read(spec("renormalize_gates"), c.renormalizeGates);
    s.read(spec("share_router"), c.shareRouter);

    s.read(spec("share_attention"), c.shareAttention);
    s.read(spec("share_ffn"), c.shareFfn);
    s.read(spec("share_layernorm"), c.shareLayerNorm);

    s.read(spec("paths"), c.paths);
    s.read(spec("path_norm"), c.pathNorm);
    s.read(spec("learnable_path_weights"), c.learnablePathWeights);
    s.readChoice(spec("path_weight"), c.pathWeight);
    s.read(spec("path_extra_features"), c.pathExtraFeatures);
    c.decoderPaths = c.paths;
    s.read(spec("decoder_paths"), c.decoderPaths);

    s.rejectUnknownKeys();
    // Cross-key checks run too, except those involving a key that did not read:
    // its value is still the default, and a check on it would mislead.
    std::set<std::string> unreadable;
    for (std::size_t i = issuesBefore; i < issues.size(); ++i)
        unreadable.insert(issues[i].key);
    c.validate(issues, path, unreadable);
    if (issues.size() != issuesBefore)
        return c;

    // The size as a whole. Each key's bound keeps every count below 2^60 (the
    // largest, L * E * 2 * D * M, is 2^10 * 2^12 * 2 * 2^16 * 2^20 = 2^59), so
    // the accounting itself cannot overflow; what it counts is then bounded.
    const ModelCost cost = modelCost(c);
    if (cost.total.stored > kMaxModelParameters) {
        const CostRow* largest = &cost.parts.front();
        for (const CostRow& row : cost.parts)
            if (row.stored > largest->stored)
                largest = &row;
        const std::string key = largest->part == "embeddings" ? (c.imageInput() ? "patch_size" : "vocab_size")
                                : largest->part == "attention" ? "heads"
                                : largest->part == "experts" || largest->part == "router" ? "experts"
                                : largest->part == "ffn"  ? "ffn_dim"
                                : largest->part == "head" ? (c.head == HeadKind::LanguageModel ? "vocab_size" : "num_classes")
                                : largest->part == "path weights" ? "paths"
                                                                  : "d_model";
        char text[200];
        std::snprintf(text, sizeof text, "the model would have %.3g parameters (%s: %.3g), more than the %.0g WideLab builds",
                      static_cast<double>(cost.total.stored), largest->part.c_str(),
                      static_cast<double>(largest->stored), static_cast<double>(kMaxModelParameters));
        s.addIssue(key, text);
        return c;
    }

    if (warnings)
        warnUnused(c, model, s, *warnings);
    return c;
}

void ModelConfig::validate(std::vector<ConfigIssue>& issues, const std::string& path,
                           const std::set<std::string>& unreadable) const
{
    auto key = [&](const std::string& name) { return path + "." + name; };
    // A rule applies when none of the keys it reads failed to read.
    auto readable = [&](std::initializer_list<const char*> names) {
        for (const char* name : names)
            if (unreadable.count(key(name)))
                return false;
        return true;
    };
    auto report = [&](const std::string& name, std::string reason) {
        issues.push_back({key(name), std::move(reason)});
    };

    if (readable({"top_k", "experts"}) && topK > experts)
        report("top_k", number(topK) + " exceeds " + key("experts") + ": " + number(experts));
    if (readable({"routing_groups", "layers"}) && routingGroups > layers)
        report("routing_groups", number(routingGroups) + " exceeds " + key("layers") + ": " + number(layers));
    if (readable({"paths", "experts"}) && paths > 1 && experts > 1)
        report("paths", "multi-path sublayers with a mixture of experts (" + key("experts") + ": "
                            + number(experts) + ") are not supported; use paths 1 or experts 1");
    if (readable({"path_extra_features", "paths"}) && pathExtraFeatures && paths < 3)
        report("path_extra_features", "needs " + key("paths")
                                          + " >= 3 (with 2 paths the subsets of n-1 paths are the paths themselves)");
    if (readable({"path_extra_features", "decoder_paths", "head"}) && isTranslation() && pathExtraFeatures
        && decoderPaths == 2)
        report("decoder_paths", "2 paths have no extra features (path_extra_features needs 3 or more); use 1 "
                                "(a plain decoder) or at least 3");
    if (readable({"decoder_paths", "experts", "head"}) && isTranslation() && decoderPaths > 1 && experts > 1)
        report("decoder_paths", "multi-path sublayers with a mixture of experts are not supported; use 1");
    if (readable({"head", "routing_priority"}) && (causal() || isTranslation())
        && routingPriority == RoutingPriority::Batch)
        report("routing_priority", "\"batch\" lets later tokens take earlier tokens' expert slots, which a "
                                   + std::string(isTranslation() ? "decoder" : "language model")
                                   + " must not see; use \"position\"");
    if (readable({"head", "input"}) && isTranslation() && imageInput())
        report("head", "\"translation\" reads and writes tokens; use " + key("input") + " \"tokens\"");
    if (readable({"head", "embedding_dim"}) && isTranslation() && embeddingDim > 0)
        report("embedding_dim", "a translation model ties its output to the token embedding, which needs "
                                "embedding_dim 0");
    if (readable({"renormalize_gates", "top_k"}) && renormalizeGates && topK == 1 && experts > 1)
        report("renormalize_gates", "with " + key("top_k") + " 1 every gate becomes 1 and the router learns "
                                    "nothing from the task; use top_k >= 2 or turn renormalisation off");
    if (readable({"input", "image_size", "patch_size"}) && imageInput() && imageSize % patchSize != 0)
        report("image_size", number(imageSize) + " is not a multiple of " + key("patch_size") + " ("
                                 + number(patchSize) + "): the patches must tile the image");
    if (readable({"input", "channels"}) && imageInput() && channels == 2)
        report("channels", "2 is neither grey (1) nor RGB (3)");
    if (readable({"input", "head"}) && imageInput() && (head == HeadKind::LanguageModel || head == HeadKind::MaskedLanguageModel))
        report("head", "\"" + nameOf("head", head) + "\" predicts tokens, which images do not have; use "
                       "\"classification\" with " + key("input") + " \"image\"");
    if (readable({"input", "embedding_dim"}) && imageInput() && embeddingDim > 0)
        report("embedding_dim", "a factorised embedding is for tokens; image input embeds patches straight into d_model");
    if (readable({"head", "pooler"}) && head != HeadKind::Classification && pooler)
        report("pooler", "only applies to a classification head");
    if (readable({"input", "head", "segments"}) && segments > 0 && (imageInput() || head != HeadKind::Classification))
        report("segments", "segment embeddings are for a classifier of text pairs (" + key("head")
                               + " \"classification\", " + key("input") + " \"tokens\")");
    if (readable({"segments"}) && segments == 1)
        report("segments", "1 segment adds the same vector to every token; 2 for text pairs, 0 for none");
    validateAttention(*this, report, readable);
    const auto maxWidth = static_cast<std::int64_t>(spec("d_model").max);
    if (readable({"heads", "head_dim", "paths", "d_model"})
        && (attentionWidth() * paths > maxWidth * 4 || 4 * dModel * attentionWidth() * paths > (std::int64_t{1} << 34)))
        report("heads", "attention width " + number(attentionWidth() * paths) + " (heads x head_dim x paths) is too large");
}

ModelConfig ModelConfig::decoderSide() const
{
    ModelConfig side = *this;
    side.head = HeadKind::LanguageModel;
    side.layers = decoderLayers;
    side.attention = "full";
    side.attentionMix.clear();
    side.routingGroups = std::min(routingGroups, decoderLayers);
    side.paths = decoderPaths;
    if (decoderPaths == 1)
        side.pathNorm = side.learnablePathWeights = side.pathExtraFeatures = false;
    return side;
}

double ModelConfig::pathWeightValue() const
{
    const auto n = static_cast<double>(paths);
    switch (pathWeight) {
    case PathWeight::InverseN:
        return 1.0 / n;
    case PathWeight::InverseSqrtN:
        return 1.0 / std::sqrt(n);
    case PathWeight::InverseSqrt2n:
        break;
    }
    return 1.0 / std::sqrt(2.0 * n);
}

nlohmann::json ModelConfig::toJson() const
{
    nlohmann::json json = {
        {"vocab_size", vocabSize},
        {"max_len", maxLen},
        {"input", nameOf("input", input)},
        {"image_size", imageSize},
        {"patch_size", patchSize},
        {"channels", channels},
        {"d_model", dModel},
        {"embedding_dim", embeddingDim},
        {"layers", layers},
        {"heads", heads},
        {"head_dim", headDim},
        {"ffn_dim", ffnDim},
        {"activation", toString(activation)},
        {"dropout", dropout},
        {"attention", attention},
        {"attention_mix", attentionMix},
        {"head", nameOf("head", head)},
        {"decoder_layers", decoderLayers},
        {"decoder_paths", decoderPaths},
        {"pooling", nameOf("pooling", pooling)},
        {"pooler", pooler},
        {"num_classes", numClasses},
        {"segments", segments},
        {"experts", experts},
        {"top_k", topK},
        {"capacity_factor", capacityFactor},
        {"eval_capacity_factor", evalCapacityFactor},
        {"router_noise_std", routerNoiseStd},
        {"balance_loss_weight", balanceLossWeight},
        {"router_z_loss_weight", routerZLossWeight},
        {"routing_groups", routingGroups},
        {"routing_priority", nameOf("routing_priority", routingPriority)},
        {"balance_count", nameOf("balance_count", balanceCount)},
        {"renormalize_gates", renormalizeGates},
        {"share_router", shareRouter},
        {"share_attention", shareAttention},
        {"share_ffn", shareFfn},
        {"share_layernorm", shareLayerNorm},
        {"paths", paths},
        {"path_norm", pathNorm},
        {"learnable_path_weights", learnablePathWeights},
        {"path_weight", nameOf("path_weight", pathWeight)},
        {"path_extra_features", pathExtraFeatures},
    };
    for (const auto& [name, value] : attentionOptions.items())
        json[name] = value;
    return json;
}

ModelDocument readModelDocument(const nlohmann::json& document, std::vector<ConfigIssue>& issues,
                                const std::vector<std::string>& otherSections)
{
    ModelDocument result;
    JsonSection top(document, "", issues);
    top.read("name", result.name);
    top.read("description", result.description);
    if (!top.has("model") && document.is_object())
        issues.push_back({"model", "missing: the document needs a \"model\" object"});
    else if (document.is_object())
        result.model = ModelConfig::fromJson(document.at("model"), issues, "model", &result.warnings);
    std::vector<std::string> allowed = {"model"};
    allowed.insert(allowed.end(), otherSections.begin(), otherSections.end());
    top.rejectUnknownKeys(allowed);
    return result;
}

void throwIfAny(std::vector<ConfigIssue> issues, const std::string& origin)
{
    if (issues.empty())
        return;
    if (!origin.empty())
        issues.insert(issues.begin(), {"", origin + ": invalid configuration"});
    throw ConfigError(std::move(issues));
}

ModelDocument parseModelDocument(const std::string& text, const std::string& origin)
{
    std::vector<ConfigIssue> issues;
    // "task" and "train" belong to a run document (core/train/RunConfig); a model
    // document tolerates them so that a run's record loads here too.
    ModelDocument result = readModelDocument(parseJsonText(text, origin), issues, {"task", "train"});
    throwIfAny(std::move(issues), origin);
    return result;
}

ModelDocument loadModelDocument(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw ConfigError({{"", file.string() + ": cannot open the file"}});
    std::ostringstream text;
    text << in.rdbuf();
    return parseModelDocument(text.str(), file.string());
}

}  // namespace widelab
