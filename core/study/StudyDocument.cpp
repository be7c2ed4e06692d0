#include "StudyDocument.h"

#include "config/ConfigSchema.h"
#include "config/JsonSection.h"
#include "vocab/JsonText.h"
#include "config/ModelConfig.h"
#include "config/Presets.h"
#include "model/ParameterCount.h"
#include "train/RunConfig.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace widelab {
namespace {

constexpr std::int64_t kMaxSeeds = 1000;

std::vector<std::string> schemaKeys()
{
    std::vector<std::string> keys;
    for (const KeySpec& spec : configSchema())
        keys.push_back(spec.key);
    return keys;
}

// A dotted key of a run document's sections that a study may set; empty when it
// may, else the reason it may not.
std::string keyProblem(const std::string& key)
{
    try {
        const KeySpec& spec = keySpec(key);
        if (spec.section().empty())
            return "\"" + key + "\" is not a key of the model, task or train section";
        if (key == "train.seed")
            return "train.seed is what \"seeds\" varies; give the seeds there";
        return {};
    } catch (const std::out_of_range&) {
        std::string reason = "\"" + key + "\" is not a key of a run document";
        if (const std::string guess = closestMatch(key, schemaKeys()); !guess.empty())
            reason += " (did you mean \"" + guess + "\"?)";
        return reason;
    }
}

std::string shortName(const std::string& key)
{
    const auto dot = key.rfind('.');
    return dot == std::string::npos ? key : key.substr(dot + 1);
}

std::string sanitised(const std::string& name)
{
    std::string out;
    for (const char c : name) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.'
                           || c == '_' || c == '=' || c == ',' || c == '+' || c == '-';
        out += plain ? c : '_';
    }
    return out;
}

std::string valueText(const nlohmann::json& value)
{
    if (value.is_string())
        return value.get<std::string>();
    return value.dump();
}

// The base run document: a preset's name or a file's path, or the document itself.
nlohmann::json readBase(const nlohmann::json& base, std::string& baseName, std::vector<ConfigIssue>& issues)
{
    if (base.is_object())
        return base;
    if (!base.is_string()) {
        issues.push_back({"base", "expected a run document (an object) or the name of a preset"});
        return nlohmann::json::object();
    }
    baseName = base.get<std::string>();
    try {
        const std::filesystem::path file = resolveConfigPath(baseName);
        std::ifstream in(file, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        nlohmann::json document = parseJsonText(text.str(), file.string());
        if (!document.is_object()) {
            issues.push_back({"base", file.string() + " does not hold a run document (a JSON object)"});
            return nlohmann::json::object();
        }
        return document;
    } catch (const ConfigError& error) {
        for (const ConfigIssue& issue : error.issues())
            issues.push_back({"base", issue.text()});
        return nlohmann::json::object();
    }
}

void readAxis(const nlohmann::json& axis, const std::string& path, StudyAxis& out, std::vector<ConfigIssue>& issues)
{
    if (!axis.is_object()) {
        issues.push_back({path, "expected an object with \"key\" (or \"keys\") and \"values\""});
        return;
    }
    static const std::vector<std::string> known = {"key", "keys", "values", "label", "names", "solve", "keep"};
    for (auto it = axis.begin(); it != axis.end(); ++it) {
        if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
            std::string reason = "unknown key";
            if (const std::string guess = closestMatch(it.key(), known); !guess.empty())
                reason += " (did you mean \"" + guess + "\"?)";
            issues.push_back({path + "." + it.key(), reason});
        }
    }
    const bool single = axis.contains("key"), several = axis.contains("keys");
    if (single == several) {
        issues.push_back({path, single ? "give \"key\" or \"keys\", not both" : "missing \"key\" (or \"keys\")"});
        return;
    }
    if (single) {
        if (!axis.at("key").is_string()) {
            issues.push_back({path + ".key", "expected a dotted key such as \"model.heads\""});
            return;
        }
        out.keys.push_back(axis.at("key").get<std::string>());
    } else {
        const nlohmann::json& keys = axis.at("keys");
        if (!keys.is_array() || keys.empty()) {
            issues.push_back({path + ".keys", "expected a non-empty array of dotted keys"});
            return;
        }
        for (const auto& key : keys) {
            if (!key.is_string()) {
                issues.push_back({path + ".keys", "expected dotted keys (strings), got " + key.dump()});
                return;
            }
            out.keys.push_back(key.get<std::string>());
        }
    }
    const std::string keyPath = path + (single ? ".key" : ".keys");
    std::set<std::string> seen;
    for (const std::string& key : out.keys) {
        if (const std::string problem = keyProblem(key); !problem.empty())
            issues.push_back({keyPath, problem});
        if (!seen.insert(key).second)
            issues.push_back({keyPath, key + " appears twice"});
    }
    if (!axis.contains("values") || !axis.at("values").is_array() || axis.at("values").empty()) {
        issues.push_back({path + ".values", "expected a non-empty array of values"});
    } else {
        const nlohmann::json& values = axis.at("values");
        for (std::size_t v = 0; v < values.size(); ++v) {
            const nlohmann::json& value = values.at(v);
            if (single) {
                out.values.push_back({value});
            } else if (!value.is_array() || value.size() != out.keys.size()) {
                issues.push_back({path + ".values[" + std::to_string(v) + "]",
                                  "expected an array of " + std::to_string(out.keys.size()) + " values, one per key, got "
                                      + value.dump()});
            } else {
                out.values.emplace_back(value.begin(), value.end());
            }
            if (value.is_object() || (single && value.is_array()) || value.is_null())
                issues.push_back({path + ".values[" + std::to_string(v) + "]", "expected a number, a string or true/false, got " + value.dump()});
        }
        for (std::size_t a = 0; a < out.values.size(); ++a)
            for (std::size_t b = a + 1; b < out.values.size(); ++b)
                if (out.values[a] == out.values[b])
                    issues.push_back({path + ".values", nlohmann::json(out.values[a]).dump() + " appears twice"});
    }
    if (axis.contains("label")) {
        if (axis.at("label").is_string())
            out.label = axis.at("label").get<std::string>();
        else
            issues.push_back({path + ".label", "expected a string"});
    }
    if (axis.contains("names")) {
        const nlohmann::json& names = axis.at("names");
        const bool strings = names.is_array() && std::all_of(names.begin(), names.end(), [](const nlohmann::json& n) {
            return n.is_string() && !n.get<std::string>().empty();
        });
        if (!strings || names.size() != out.values.size())
            issues.push_back({path + ".names", "expected " + std::to_string(out.values.size())
                                                   + " names (non-empty strings), one per value, got " + names.dump()});
        else
            out.names = names.get<std::vector<std::string>>();
    }
    const bool solve = axis.contains("solve"), keep = axis.contains("keep");
    if (solve != keep)
        issues.push_back({path, solve ? "\"solve\" needs \"keep\": \"parameters\"" : "\"keep\" needs \"solve\": a width key"});
    if (keep && axis.at("keep") != "parameters")
        issues.push_back({path + ".keep", "expected \"parameters\" (the stored parameter count), got " + axis.at("keep").dump()});
    if (solve) {
        if (!axis.at("solve").is_string()) {
            issues.push_back({path + ".solve", "expected an integer model key such as \"model.d_model\""});
            return;
        }
        out.solve = axis.at("solve").get<std::string>();
        if (const std::string problem = keyProblem(out.solve); !problem.empty())
            issues.push_back({path + ".solve", problem});
        else if (keySpec(out.solve).section() != "model" || keySpec(out.solve).type != KeyType::Integer)
            issues.push_back({path + ".solve", out.solve + " is not an integer key of the model"});
        else if (std::find(out.keys.begin(), out.keys.end(), out.solve) != out.keys.end())
            issues.push_back({path + ".solve", out.solve + " is the axis's own key; solve for another width"});
    }
}

std::int64_t storedParameters(const nlohmann::json& document, std::vector<ConfigIssue>& issues)
{
    const ModelDocument model = readModelDocument(document, issues, {"task", "train"});
    return issues.empty() ? modelCost(model.model).total.stored : 0;
}

}  // namespace

void setDottedKey(nlohmann::json& document, const std::string& key, const nlohmann::json& value)
{
    const auto dot = key.find('.');
    if (dot == std::string::npos) {
        document[key] = value;
        return;
    }
    const std::string section = key.substr(0, dot);
    if (!document.contains(section) || !document.at(section).is_object())
        document[section] = nlohmann::json::object();
    document[section][key.substr(dot + 1)] = value;
}

std::string settingText(const std::string& key, const nlohmann::json& value)
{
    return shortName(key) + "=" + valueText(value);
}

int axisValueIndex(const StudyAxis& axis, const StudySettings& settings)
{
    for (std::size_t v = 0; v < axis.values.size(); ++v) {
        bool all = true;
        for (std::size_t k = 0; k < axis.keys.size() && all; ++k) {
            const auto setting = std::find_if(settings.begin(), settings.end(),
                                              [&](const auto& s) { return s.first == axis.keys[k]; });
            all = setting != settings.end() && setting->second == axis.values[v][k];
        }
        if (all)
            return static_cast<int>(v);
    }
    return -1;
}

std::string pointLabel(const std::vector<StudyAxis>& axes, const StudySettings& settings)
{
    if (std::none_of(axes.begin(), axes.end(), [](const StudyAxis& axis) { return !axis.names.empty(); }))
        return {};
    std::string label;
    const auto add = [&](const std::string& part) { label += (label.empty() ? "" : ", ") + part; };
    for (const StudyAxis& axis : axes) {
        if (axis.names.empty()) {
            for (const auto& [key, value] : settings)
                if (std::find(axis.keys.begin(), axis.keys.end(), key) != axis.keys.end())
                    add(settingText(key, value));
            continue;
        }
        const int index = axisValueIndex(axis, settings);
        if (index < 0)
            return {};
        add(axis.names[static_cast<std::size_t>(index)]);
    }
    return label;
}

nlohmann::json StudyDocument::toJson() const
{
    nlohmann::json json = source;
    json["base"] = base;
    return json;
}

nlohmann::json StudyOverrides::toJson() const
{
    return {{"steps", steps ? nlohmann::json(*steps) : nlohmann::json()},
            {"seeds", seeds ? nlohmann::json(*seeds) : nlohmann::json()}};
}

nlohmann::json StudyMember::toJson() const
{
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [key, value] : settings)
        list.push_back({{"key", key}, {"value", value}});
    return {{"name", name}, {"point", point}, {"seed", seed}, {"settings", list}};
}

StudyDocument parseStudyDocument(const std::string& text, const std::string& origin)
{
    const nlohmann::json document = parseJsonText(text, origin);
    std::vector<ConfigIssue> issues;
    StudyDocument study;
    study.source = document;
    if (!document.is_object()) {
        throwIfAny({{"", "a study document is a JSON object with \"base\" and \"axes\""}}, origin);
    }
    static const std::vector<std::string> known = {"name", "description", "base", "set", "axes", "combine", "seeds", "report"};
    for (auto it = document.begin(); it != document.end(); ++it) {
        if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
            std::string reason = "unknown key";
            if (const std::string guess = closestMatch(it.key(), known); !guess.empty())
                reason += " (did you mean \"" + guess + "\"?)";
            issues.push_back({it.key(), reason});
        }
    }
    for (const char* key : {"name", "description"}) {
        if (!document.contains(key))
            continue;
        if (!document.at(key).is_string())
            issues.push_back({key, "expected a string"});
        else
            (std::string(key) == "name" ? study.name : study.description) = document.at(key).get<std::string>();
    }
    if (!document.contains("base"))
        issues.push_back({"base", "missing: the run document (or the name of a preset) every member starts from"});
    else
        study.base = readBase(document.at("base"), study.baseName, issues);

    study.set = nlohmann::json::object();
    if (document.contains("set")) {
        const nlohmann::json& set = document.at("set");
        if (!set.is_object()) {
            issues.push_back({"set", "expected an object of dotted keys and values, such as {\"train.steps\": 300}"});
        } else {
            for (auto it = set.begin(); it != set.end(); ++it) {
                if (const std::string problem = keyProblem(it.key()); !problem.empty())
                    issues.push_back({"set." + it.key(), problem});
                study.set[it.key()] = it.value();
            }
        }
    }

    if (!document.contains("axes") || !document.at("axes").is_array() || document.at("axes").empty()) {
        issues.push_back({"axes", "expected a non-empty array of axes"});
    } else {
        const nlohmann::json& axes = document.at("axes");
        std::map<std::string, std::size_t> varied;  // key -> the axis that varies or solves it
        for (std::size_t i = 0; i < axes.size(); ++i) {
            const std::string path = "axes[" + std::to_string(i) + "]";
            StudyAxis axis;
            readAxis(axes.at(i), path, axis, issues);
            std::vector<std::string> keys = axis.keys;
            if (!axis.solve.empty())
                keys.push_back(axis.solve);
            for (const std::string& key : keys) {
                const auto [it, inserted] = varied.emplace(key, i);
                if (!inserted && it->second != i)
                    issues.push_back({path, key + " is already varied by axes[" + std::to_string(it->second) + "]"});
                if (study.set.contains(key))
                    issues.push_back({path, key + " is also given in \"set\""});
            }
            study.axes.push_back(std::move(axis));
        }
    }

    if (document.contains("combine")) {
        const nlohmann::json& combine = document.at("combine");
        if (combine == "paired")
            study.paired = true;
        else if (combine != "grid")
            issues.push_back({"combine", "expected \"grid\" (every combination) or \"paired\" (the axes' values side by "
                                         "side), got " + combine.dump()});
    }
    if (study.paired) {
        for (std::size_t i = 1; i < study.axes.size(); ++i)
            if (study.axes[i].values.size() != study.axes[0].values.size())
                issues.push_back({"axes[" + std::to_string(i) + "].values",
                                  "paired axes need as many values each: axes[0] has "
                                      + std::to_string(study.axes[0].values.size()) + ", axes[" + std::to_string(i)
                                      + "] has " + std::to_string(study.axes[i].values.size())});
    }

    study.seeds = {1};
    if (document.contains("seeds")) {
        const nlohmann::json& seeds = document.at("seeds");
        if (seeds.is_number_integer()) {
            const auto count = seeds.get<std::int64_t>();
            if (count < 1 || count > kMaxSeeds) {
                issues.push_back({"seeds", std::to_string(count) + " is outside 1.." + std::to_string(kMaxSeeds)});
            } else {
                study.seeds.clear();
                for (std::int64_t s = 1; s <= count; ++s)
                    study.seeds.push_back(s);
            }
        } else if (seeds.is_array() && !seeds.empty() && seeds.size() <= static_cast<std::size_t>(kMaxSeeds)) {
            study.seeds.clear();
            const double maxSeed = keySpec("train.seed").max;
            for (const auto& seed : seeds) {
                if (!seed.is_number_integer() || seed.get<std::int64_t>() < 0
                    || static_cast<double>(seed.get<std::int64_t>()) > maxSeed) {
                    issues.push_back({"seeds", seed.dump() + " is not a seed (an integer from 0 to train.seed's maximum)"});
                    continue;
                }
                if (std::find(study.seeds.begin(), study.seeds.end(), seed.get<std::int64_t>()) != study.seeds.end())
                    issues.push_back({"seeds", seed.dump() + " appears twice"});
                study.seeds.push_back(seed.get<std::int64_t>());
            }
        } else {
            issues.push_back({"seeds", "expected a number of seeds (1, 2, ...) or a non-empty array of seeds"});
        }
    }

    if (document.contains("report")) {
        const nlohmann::json& report = document.at("report");
        if (!report.is_object()) {
            issues.push_back({"report", "expected an object such as {\"metric\": \"accuracy\"}"});
        } else {
            for (auto it = report.begin(); it != report.end(); ++it)
                if (it.key() != "metric")
                    issues.push_back({"report." + it.key(), "unknown key"});
            if (report.contains("metric")) {
                const nlohmann::json& metric = report.at("metric");
                if (metric == "accuracy" || metric == "loss" || metric == "bleu")
                    study.metric = metric.get<std::string>();
                else
                    issues.push_back({"report.metric", "expected \"accuracy\", \"loss\" or \"bleu\" (translation), got "
                                                           + metric.dump()});
            }
        }
    }
    throwIfAny(std::move(issues), origin);
    return study;
}

StudyDocument loadStudyDocument(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw ConfigError({{"", file.string() + ": cannot open the file"}});
    std::ostringstream text;
    text << in.rdbuf();
    return parseStudyDocument(text.str(), file.string());
}

std::optional<std::int64_t> solveWidth(const nlohmann::json& document, const std::string& widthKey, std::int64_t target)
{
    const KeySpec& spec = keySpec(widthKey);
    const std::string name = spec.name();
    std::int64_t current = spec.defaultValue.is_number_integer() ? spec.defaultValue.get<std::int64_t>() : 0;
    if (document.contains("model") && document.at("model").contains(name) && document.at("model").at(name).is_number_integer())
        current = document.at("model").at(name).get<std::int64_t>();
    const auto highest = static_cast<std::int64_t>(std::min(spec.max, static_cast<double>(std::max<std::int64_t>(4 * current, 16))));
    const auto lowest = static_cast<std::int64_t>(std::max(spec.min, 1.0));
    nlohmann::json candidate = document;
    std::optional<std::int64_t> best;
    std::int64_t bestDistance = 0;
    for (std::int64_t width = lowest; width <= highest; ++width) {
        setDottedKey(candidate, widthKey, width);
        std::vector<ConfigIssue> issues;
        const std::int64_t stored = storedParameters(candidate, issues);
        if (!issues.empty())
            continue;
        const std::int64_t distance = std::llabs(stored - target);
        if (!best || distance < bestDistance) {
            best = width;
            bestDistance = distance;
        }
    }
    return best;
}

std::vector<StudyMember> expandStudy(const StudyDocument& study, const StudyOverrides& overrides)
{
    std::vector<ConfigIssue> issues;
    nlohmann::json base = study.base;
    for (auto it = study.set.begin(); it != study.set.end(); ++it)
        setDottedKey(base, it.key(), it.value());

    // Names: a key's last part, unless two varied keys share it.
    std::map<std::string, int> shortCount;
    for (const StudyAxis& axis : study.axes)
        for (const std::string& key : axis.keys)
            ++shortCount[shortName(key)];
    auto nameOf = [&](const std::string& key, const nlohmann::json& value) {
        return (shortCount[shortName(key)] > 1 ? key : shortName(key)) + "=" + valueText(value);
    };

    // Axis points: for each, the value index of every axis.
    std::vector<std::vector<std::size_t>> points;
    if (study.paired) {
        const std::size_t count = study.axes.empty() ? 0 : study.axes.front().values.size();
        for (std::size_t v = 0; v < count; ++v)
            points.emplace_back(study.axes.size(), v);
    } else {
        points.emplace_back();
        for (const StudyAxis& axis : study.axes) {
            std::vector<std::vector<std::size_t>> longer;
            for (const auto& point : points)
                for (std::size_t v = 0; v < axis.values.size(); ++v) {
                    longer.push_back(point);
                    longer.back().push_back(v);
                }
            points = std::move(longer);
        }
    }

    std::optional<std::int64_t> target;
    bool solves = false;
    for (const StudyAxis& axis : study.axes)
        solves = solves || !axis.solve.empty();
    if (solves) {
        std::vector<ConfigIssue> baseIssues;
        target = storedParameters(base, baseIssues);
        for (const ConfigIssue& issue : baseIssues)
            issues.push_back({"base", issue.text()});
    }

    std::vector<std::int64_t> seeds = study.seeds;
    if (overrides.seeds) {
        seeds.resize(static_cast<std::size_t>(std::min<std::int64_t>(*overrides.seeds, static_cast<std::int64_t>(seeds.size()))));
        while (static_cast<std::int64_t>(seeds.size()) < *overrides.seeds)
            seeds.push_back(*std::max_element(study.seeds.begin(), study.seeds.end()) + 1
                            + static_cast<std::int64_t>(seeds.size() - study.seeds.size()));
    }

    struct Point {
        std::string name;
        std::vector<std::pair<std::string, nlohmann::json>> settings;
        nlohmann::json document;
    };
    std::vector<Point> expanded;
    std::set<std::string> names;
    for (const auto& indices : points) {
        Point point{"", {}, base};
        std::string where;  // "axes[0] value 8, axes[1] value \"linear\""
        for (std::size_t a = 0; a < study.axes.size(); ++a) {
            const StudyAxis& axis = study.axes[a];
            const std::vector<nlohmann::json>& value = axis.values[indices[a]];
            where += (where.empty() ? "" : ", ") + std::string("axes[") + std::to_string(a) + "] value "
                     + (value.size() == 1 ? value.front().dump() : nlohmann::json(value).dump());
            for (std::size_t k = 0; k < axis.keys.size(); ++k) {
                setDottedKey(point.document, axis.keys[k], value[k]);
                point.settings.emplace_back(axis.keys[k], value[k]);
                if (!point.name.empty())
                    point.name += ',';
                point.name += nameOf(axis.keys[k], value[k]);
            }
        }
        for (std::size_t a = 0; a < study.axes.size(); ++a) {
            const StudyAxis& axis = study.axes[a];
            if (axis.solve.empty() || !target || *target <= 0)
                continue;
            const auto width = solveWidth(point.document, axis.solve, *target);
            if (!width) {
                issues.push_back({where, axis.solve + ": no value makes a valid model"});
                continue;
            }
            setDottedKey(point.document, axis.solve, *width);
            point.settings.emplace_back(axis.solve, *width);
        }
        point.name = sanitised(point.name);
        if (!names.insert(point.name).second)
            issues.push_back({where, "a second member named " + point.name + " (values that name alike)"});
        nlohmann::json check = point.document;
        if (overrides.steps)
            setDottedKey(check, "train.steps", *overrides.steps);
        setDottedKey(check, "train.seed", seeds.front());
        try {
            parseRunDocument(check.dump(), "", /*requireDataFiles=*/false);
        } catch (const ConfigError& error) {
            for (const ConfigIssue& issue : error.issues())
                issues.push_back({where, issue.text()});
        }
        expanded.push_back(std::move(point));
    }
    throwIfAny(std::move(issues), study.name.empty() ? "study" : "study \"" + study.name + "\"");

    std::vector<StudyMember> members;
    for (const std::int64_t seed : seeds) {
        for (const Point& point : expanded) {
            StudyMember member;
            member.point = point.name;
            member.name = point.name + ",seed=" + std::to_string(seed);
            member.seed = seed;
            member.settings = point.settings;
            member.document = point.document;
            setDottedKey(member.document, "train.seed", seed);
            if (overrides.steps)
                setDottedKey(member.document, "train.steps", *overrides.steps);
            // Named by the study, not by its base: a 1x48 member of a study based on the
            // 6x8 preset must not open in the app as "Transformer 6x8".
            const nlohmann::json& base = member.document.contains("name") ? member.document.at("name") : nlohmann::json();
            const std::string title = !study.name.empty() ? study.name : base.is_string() ? base.get<std::string>() : "";
            member.document["name"] = title.empty() ? member.name : title + ": " + member.name;
            if (!study.name.empty() && base.is_string())
                member.document["description"] = "A member of the study \"" + study.name + "\", based on "
                                                 + base.get<std::string>() + ".";
            members.push_back(std::move(member));
        }
    }
    return members;
}

}  // namespace widelab
