#include "PaperFigures.h"

#include "BuiltinStudies.h"
#include "StudyResults.h"
#include "vocab/ConfigError.h"
#include "config/ConfigSchema.h"
#include "config/JsonSection.h"
#include "vocab/JsonText.h"
#include "config/ResourceFolder.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace widelab {
namespace {

// A settings object: dotted run-document keys of the schema with their values.
nlohmann::json readSettings(const nlohmann::json& parent, const std::string& key, const std::string& path,
                            std::vector<ConfigIssue>& issues)
{
    if (!parent.contains(key))
        return nlohmann::json::object();
    const nlohmann::json& settings = parent.at(key);
    if (!settings.is_object()) {
        issues.push_back({path + key, "must be an object of dotted run-document keys and their values"});
        return nlohmann::json::object();
    }
    for (const auto& [name, value] : settings.items()) {
        try {
            (void)keySpec(name);
        } catch (const std::out_of_range&) {
            std::vector<std::string> known;
            for (const KeySpec& spec : configSchema())
                known.push_back(spec.key);
            std::string reason = "not a run-document key";
            if (const std::string guess = closestMatch(name, known); !guess.empty())
                reason += " (did you mean \"" + guess + "\"?)";
            issues.push_back({path + key + "." + name, reason});
        }
        if (value.is_object() || value.is_array() || value.is_null())
            issues.push_back({path + key + "." + name, "must be a number, a boolean or a string"});
    }
    return settings;
}

// `settings` with `more` added; a key in both with different values is a problem.
void merge(nlohmann::json& settings, const nlohmann::json& more, const std::string& path, std::vector<ConfigIssue>& issues)
{
    for (const auto& [key, value] : more.items()) {
        if (settings.contains(key) && settings.at(key) != value)
            issues.push_back({path, key + " is " + settings.at(key).dump() + " and " + value.dump() + " at once"});
        settings[key] = value;
    }
}

}  // namespace

PaperFigure parsePaperFigure(const std::string& text, const std::string& name, const std::string& origin)
{
    std::vector<ConfigIssue> issues;
    const std::string head = origin.empty() ? std::string() : origin + ": ";
    nlohmann::json document;
    try {
        document = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& error) {
        throw ConfigError({{"", head + "not JSON: " + error.what()}});
    }
    PaperFigure figure;
    figure.name = name;
    double scale = 1.0;
    JsonSection top(document, "", issues);
    top.read("paper", figure.paper);
    top.read("source", figure.source);
    top.read("measure", figure.measure);
    top.read("note", figure.note);
    top.read("scale", scale, 1e-12, 1e12);
    top.rejectUnknownKeys({"when", "columns", "rows"});
    if (!document.is_object())
        throw ConfigError(issues);
    if (figure.paper.empty())
        issues.push_back({"paper", "missing: the paper's title and authors"});
    bool knownMeasure = false;
    std::vector<std::string> columns;
    for (const MeasureSpec& measure : studyMeasures()) {
        knownMeasure = knownMeasure || measure.column == figure.measure;
        columns.push_back(measure.column);
    }
    if (figure.measure.empty()) {
        issues.push_back({"measure", "missing: the study measure the paper's numbers are (e.g. \"test_accuracy\")"});
    } else if (!knownMeasure) {
        std::string reason = "\"" + figure.measure + "\" is not a study measure";
        if (const std::string guess = closestMatch(figure.measure, columns); !guess.empty())
            reason += " (did you mean \"" + guess + "\"?)";
        issues.push_back({"measure", reason});
    }
    const nlohmann::json when = readSettings(document, "when", "", issues);

    struct Heading {
        std::string label;
        nlohmann::json settings;
    };
    const auto headings = [&](const std::string& key) {
        std::vector<Heading> list;
        if (!document.contains(key) || !document.at(key).is_array() || document.at(key).empty()) {
            issues.push_back({key, "must be a list of at least one {\"label\", \"settings\"}"});
            return list;
        }
        for (std::size_t i = 0; i < document.at(key).size(); ++i) {
            const nlohmann::json& item = document.at(key).at(i);
            const std::string path = key + "[" + std::to_string(i) + "]";
            Heading heading;
            JsonSection section(item, path, issues);
            section.read("label", heading.label);
            section.rejectUnknownKeys({"settings", "values"});
            if (item.is_object())
                heading.settings = readSettings(item, "settings", path + ".", issues);
            list.push_back(std::move(heading));
        }
        return list;
    };
    const std::vector<Heading> columnHeadings = headings("columns");
    const std::vector<Heading> rowHeadings = headings("rows");

    for (std::size_t r = 0; r < rowHeadings.size(); ++r) {
        const std::string path = "rows[" + std::to_string(r) + "].values";
        const nlohmann::json& row = document.at("rows").at(r);
        if (!row.is_object() || !row.contains("values") || !row.at("values").is_array()
            || row.at("values").size() != columnHeadings.size()) {
            issues.push_back({path, "must list one value per column (" + std::to_string(columnHeadings.size()) + ")"});
            continue;
        }
        for (std::size_t c = 0; c < columnHeadings.size(); ++c) {
            const nlohmann::json& cell = row.at("values").at(c);
            if (cell.is_null())
                continue;
            PaperEntry entry;
            const bool pair = cell.is_array() && cell.size() == 2 && cell.at(0).is_number() && cell.at(1).is_number();
            if (!cell.is_number() && !pair) {
                issues.push_back({path + "[" + std::to_string(c) + "]", "must be a number, [number, spread] or null"});
                continue;
            }
            entry.value = (pair ? cell.at(0).get<double>() : cell.get<double>()) * scale;
            if (pair)
                entry.spread = cell.at(1).get<double>() * scale;
            const std::string& rowLabel = rowHeadings[r].label;
            const std::string& columnLabel = columnHeadings[c].label;
            entry.label = rowLabel.empty() || columnLabel.empty() ? rowLabel + columnLabel : rowLabel + ", " + columnLabel;
            entry.settings = when;
            merge(entry.settings, rowHeadings[r].settings, path, issues);
            merge(entry.settings, columnHeadings[c].settings, path, issues);
            figure.entries.push_back(std::move(entry));
        }
    }
    if (!issues.empty()) {
        if (!origin.empty())
            issues.insert(issues.begin(), ConfigIssue{"", origin + ": invalid paper figure"});
        throw ConfigError(issues);
    }
    return figure;
}

std::vector<std::filesystem::path> paperFigureDirectories()
{
    std::vector<std::filesystem::path> directories;
    for (const std::filesystem::path& studies : studyDirectories())
        directories.push_back(studies / "papers");
    return directories;
}

std::vector<PaperFigure> loadPaperFigures()
{
    std::vector<PaperFigure> figures;
    const std::filesystem::path directory = firstFolderWithJson(paperFigureDirectories());
    if (directory.empty())
        return figures;
    for (const std::string& name : jsonFileNames(directory)) {
        const std::filesystem::path file = directory / (name + ".json");
        figures.push_back(parsePaperFigure(readFileText(file), name, file.string()));
    }
    return figures;
}

}  // namespace widelab
