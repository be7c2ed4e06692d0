#include "StudyComparisons.h"

#include "StudyDocument.h"
#include "vocab/ConfigError.h"
#include "config/ConfigSchema.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

namespace widelab {
namespace {

const nlohmann::json* dottedValue(const nlohmann::json& document, const std::string& key)
{
    if (!document.is_object())
        return nullptr;
    const std::size_t dot = key.find('.');
    if (dot == std::string::npos)
        return document.contains(key) ? &document.at(key) : nullptr;
    const std::string section = key.substr(0, dot);
    const std::string name = key.substr(dot + 1);
    if (!document.contains(section) || !document.at(section).is_object() || !document.at(section).contains(name))
        return nullptr;
    return &document.at(section).at(name);
}

const MemberResult* firstMemberOf(const std::vector<MemberResult>& members, const std::string& point)
{
    for (const MemberResult& member : members)
        if (member.point == point)
            return &member;
    return nullptr;
}

bool matches(const StudyRecord& record, const MemberResult& member, const nlohmann::json& settings)
{
    for (const auto& [key, value] : settings.items())
        if (memberSetting(record, member, key) != value)
            return false;
    return true;
}

// The keys of the axis that sets model.layers, and the width it solves for; empty without one.
std::vector<std::string> depthAxisKeys(const nlohmann::json& document)
{
    if (!document.contains("axes") || !document.at("axes").is_array())
        return {};
    for (const nlohmann::json& axis : document.at("axes")) {
        if (!axis.is_object())
            continue;
        std::vector<std::string> keys;
        if (axis.contains("key") && axis.at("key").is_string())
            keys.push_back(axis.at("key").get<std::string>());
        if (axis.contains("keys") && axis.at("keys").is_array())
            for (const nlohmann::json& key : axis.at("keys"))
                if (key.is_string())
                    keys.push_back(key.get<std::string>());
        if (std::find(keys.begin(), keys.end(), "model.layers") == keys.end())
            continue;
        if (axis.contains("solve") && axis.at("solve").is_string())
            keys.push_back(axis.at("solve").get<std::string>());
        return keys;
    }
    return {};
}

std::string fixed(double value, int decimals)
{
    std::ostringstream text;
    text << std::fixed << std::setprecision(decimals) << value;
    return text.str();
}

}  // namespace

nlohmann::json memberSetting(const StudyRecord& record, const MemberResult& member, const std::string& key)
{
    for (const auto& [name, value] : member.settings)
        if (name == key)
            return value;
    if (record.document.contains("set") && record.document.at("set").is_object()
        && record.document.at("set").contains(key))
        return record.document.at("set").at(key);
    if (record.document.contains("base"))
        if (const nlohmann::json* value = dottedValue(record.document.at("base"), key))
            return *value;
    try {
        const KeySpec& spec = keySpec(key);
        return spec.derived() ? nlohmann::json() : spec.defaultValue;
    } catch (const std::out_of_range&) {
        return nlohmann::json();
    }
}

std::vector<PaperComparison> paperComparisons(const StudyRecord& record, const std::vector<PaperFigure>& figures)
{
    std::vector<PaperComparison> comparisons;
    const std::vector<std::string> points = studyPoints(record.members);
    for (const PaperFigure& figure : figures) {
        PaperComparison comparison{figure.paper, figure.source, figure.measure, figure.note, {}};
        for (const std::string& point : points) {
            const MemberResult* member = firstMemberOf(record.members, point);
            for (const PaperEntry& entry : figure.entries) {
                if (matches(record, *member, entry.settings)) {
                    comparison.points.push_back({point, entry.label, entry.value, entry.spread});
                    break;
                }
            }
        }
        if (!comparison.points.empty())
            comparisons.push_back(std::move(comparison));
    }
    return comparisons;
}

std::vector<LatencyRatio> latencyRatios(const StudyRecord& record, const std::vector<MemberResult>& members,
                                        const std::vector<PaperComparison>& papers)
{
    const std::vector<std::string> depthKeys = depthAxisKeys(record.document);
    if (depthKeys.empty())
        return {};
    struct Shape {
        std::string point;
        std::int64_t layers = 0;
        double ms = 0.0;
    };
    std::vector<std::string> groupOrder;
    std::map<std::string, std::vector<Shape>> groups;
    for (const std::string& point : studyPoints(members)) {
        const MemberResult* member = firstMemberOf(members, point);
        const nlohmann::json layers = memberSetting(record, *member, "model.layers");
        const double ms = pointMeasure(members, point, "latency_ms").first;
        if (!layers.is_number_integer() || !std::isfinite(ms) || ms <= 0.0)
            continue;
        std::string group;
        for (const auto& [key, value] : member->settings)
            if (std::find(depthKeys.begin(), depthKeys.end(), key) == depthKeys.end())
                group += (group.empty() ? "" : ",") + settingText(key, value);
        if (!groups.count(group))
            groupOrder.push_back(group);
        groups[group].push_back({point, layers.get<std::int64_t>(), ms});
    }
    std::vector<LatencyRatio> ratios;
    for (const std::string& group : groupOrder) {
        const std::vector<Shape>& shapes = groups.at(group);
        const auto byLayers = [](const Shape& a, const Shape& b) { return a.layers < b.layers; };
        const Shape& deep = *std::max_element(shapes.begin(), shapes.end(), byLayers);
        const Shape& wide = *std::min_element(shapes.begin(), shapes.end(), byLayers);
        if (deep.layers == wide.layers)
            continue;
        LatencyRatio ratio;
        ratio.group = group;
        ratio.deep = deep.point;
        ratio.wide = wide.point;
        ratio.deepMs = deep.ms;
        ratio.wideMs = wide.ms;
        for (const PaperComparison& paper : papers) {
            if (paper.measure != "latency_ms")
                continue;
            const auto at = [&](const std::string& point) -> const PaperPoint* {
                for (const PaperPoint& p : paper.points)
                    if (p.point == point)
                        return &p;
                return nullptr;
            };
            if (const PaperPoint *d = at(deep.point), *w = at(wide.point); d != nullptr && w != nullptr && w->value > 0) {
                ratio.paperRatio = d->value / w->value;
                ratio.paperSource = paper.paper + ", " + paper.source;
                break;
            }
        }
        ratios.push_back(std::move(ratio));
    }
    return ratios;
}

std::string studyReport(const StudyRecord& record, const std::vector<MemberResult>& members)
{
    // The axes, for the names of their values; a document that no longer reads (a preset it named is gone)
    // keeps the settings' own text.
    std::vector<StudyAxis> axes;
    try {
        axes = parseStudyDocument(record.document.dump()).axes;
    } catch (const std::exception&) {
    }
    const auto labelOf = [&](const std::string& point) {
        const MemberResult* member = firstMemberOf(members, point);
        const std::string label = member ? pointLabel(axes, member->settings) : std::string();
        return label.empty() ? point : label;
    };
    std::string md = resultsMarkdown(record.title(), record.metric(), members, axes);
    std::vector<PaperComparison> papers;
    std::string paperProblem;
    try {
        StudyRecord current = record;
        current.members = members;
        papers = paperComparisons(current, loadPaperFigures());
    } catch (const ConfigError& error) {
        paperProblem = error.what();
    }

    const std::vector<LatencyRatio> ratios = latencyRatios(record, members, papers);
    if (!ratios.empty()) {
        md += "\n## Inference latency, deepest against widest\n\n"
              "Batch 1 at the task's length, on each member's device (the latency column above), every "
              "token's row computed, as the papers timed their models.\n\n"
              "| setting | deep | wide | deep ms | wide ms | deep / wide | the paper's deep / wide |\n"
              "|---|---|---|---|---|---|---|\n";
        // A group is called by its names on the axes other than depth's.
        std::vector<StudyAxis> otherAxes;
        std::copy_if(axes.begin(), axes.end(), std::back_inserter(otherAxes), [](const StudyAxis& axis) {
            return std::find(axis.keys.begin(), axis.keys.end(), "model.layers") == axis.keys.end();
        });
        const auto groupLabel = [&](const LatencyRatio& ratio) {
            const MemberResult* member = firstMemberOf(members, ratio.deep);
            const std::string label = member ? pointLabel(otherAxes, member->settings) : std::string();
            return !label.empty() ? label : ratio.group.empty() ? std::string("–") : ratio.group;
        };
        for (const LatencyRatio& ratio : ratios)
            md += "| " + groupLabel(ratio) + " | " + labelOf(ratio.deep) + " | "
                  + labelOf(ratio.wide)
                  + " | " + fixed(ratio.deepMs, 2) + " | " + fixed(ratio.wideMs, 2) + " | " + fixed(ratio.ratio(), 2)
                  + "x | "
                  + (std::isfinite(ratio.paperRatio) ? fixed(ratio.paperRatio, 2) + "x (" + ratio.paperSource + ")"
                                                     : std::string("–"))
                  + " |\n";
    }

    if (!papers.empty() || !paperProblem.empty()) {
        md += "\n## Beside the papers\n\n"
              "The papers' numbers come from the papers' own scale (their data, widths and training): "
              "compare the direction along the axis, not the values.\n";
        if (!paperProblem.empty())
            md += "\nThe papers' figures could not be read: " + paperProblem + "\n";
    }
    for (const PaperComparison& paper : papers) {
        const MeasureSpec* measure = findMeasure(paper.measure);
        md += "\n### " + paper.paper + ": " + paper.source + "\n\n";
        if (!paper.note.empty())
            md += paper.note + "\n\n";
        md += "| point | the paper's cell | the paper's " + measure->title + " | this study's |\n|---|---|---|---|\n";
        for (const PaperPoint& point : paper.points) {
            const auto [mean, spread] = pointMeasure(members, point.point, paper.measure);
            md += "| " + labelOf(point.point) + " | " + point.label + " | " + measureText(*measure, point.value, point.spread)
                  + " | " + measureText(*measure, mean, spread) + " |\n";
        }
    }
    return md;
}

}  // namespace widelab
