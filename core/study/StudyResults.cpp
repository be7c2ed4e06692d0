#include "StudyResults.h"

#include "StudyComparisons.h"
#include "StudyLayout.h"
#include "vocab/ConfigError.h"
#include "vocab/Format.h"
#include "vocab/JsonText.h"
#include "run/Checkpoint.h"
#include "run/RunLayout.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace widelab {
namespace {

std::string csvField(const std::string& text)
{
    if (text.find_first_of(",\"\n\r") == std::string::npos)
        return text;
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"')
            quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
}

std::string jsonCell(const nlohmann::json& value)
{
    return value.is_string() ? value.get<std::string>() : value.dump();
}

std::vector<std::pair<std::string, nlohmann::json>> readSettings(const nlohmann::json& list)
{
    std::vector<std::pair<std::string, nlohmann::json>> settings;
    if (!list.is_array())
        return settings;
    for (const auto& item : list)
        if (item.is_object() && item.contains("key") && item.at("key").is_string() && item.contains("value"))
            settings.emplace_back(item.at("key").get<std::string>(), item.at("value"));
    return settings;
}

// The setting keys of all members, in first-seen order.
std::vector<std::string> settingKeys(const std::vector<MemberResult>& members)
{
    std::vector<std::string> keys;
    for (const MemberResult& member : members)
        for (const auto& setting : member.settings)
            if (std::find(keys.begin(), keys.end(), setting.first) == keys.end())
                keys.push_back(setting.first);
    return keys;
}

}  // namespace

const std::vector<MeasureSpec>& studyMeasures()
{
    static const std::vector<MeasureSpec> measures = {
        {"steps", "steps", 0, 1.0},
        {"best_val_accuracy", "best val acc %", 1, 100.0},
        {"best_val_loss", "best val loss", 4, 1.0},
        {"final_val_accuracy", "final val acc %", 1, 100.0},
        {"final_val_loss", "final val loss", 4, 1.0},
        {"test_accuracy", "test acc % (best.pt)", 1, 100.0},
        {"test_loss", "test loss (best.pt)", 4, 1.0},
        {"stored_parameters", "stored params", 0, 1.0},
        {"active_parameters", "active params", 0, 1.0},
        {"flops_per_token", "MFLOPs/token", 2, 1e-6},
        {"train_tokens_per_s", "train tok/s", 0, 1.0},
        {"latency_ms", "latency ms", 2, 1.0},
        {"peak_memory_bytes", "peak MiB", 0, 1.0 / (1024.0 * 1024.0)},
        {"wall_s", "wall s", 1, 1.0},
        {"best_val_bleu", "best val BLEU", 2, 1.0, true},
        {"final_val_bleu", "final val BLEU", 2, 1.0, true},
        {"test_bleu", "test BLEU (best.pt)", 2, 1.0, true},
        {"test_chrf", "test chrF (best.pt)", 2, 1.0, true},
    };
    return measures;
}

std::string toString(MemberStatus status)
{
    switch (status) {
    case MemberStatus::Pending: return "pending";
    case MemberStatus::Stopped: return "stopped";
    case MemberStatus::Completed: return "completed";
    case MemberStatus::Failed: return "failed";
    }
    return "pending";
}

nlohmann::json MemberResult::toJson() const
{
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [key, value] : settings)
        list.push_back({{"key", key}, {"value", value}});
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [key, value] : measures)
        if (std::isfinite(value))
            values[key] = value;
    return {{"name", name}, {"point", point}, {"seed", seed}, {"settings", list}, {"status", toString(status)},
            {"error", error}, {"measures", values}};
}

StudyRecord readStudyRecord(const std::filesystem::path& studyDirectory)
{
    const std::filesystem::path file = studylayout::studyFile(studyDirectory);
    std::error_code error;
    if (!std::filesystem::is_regular_file(file, error))
        throw ConfigError({{"", file.string() + ": no such file; " + studyDirectory.string() + " holds no study"}});
    const nlohmann::json json = parseJsonText(readFileText(file), file.string());
    const auto damaged = [&](const std::string& why) { return ConfigError({{"", file.string() + ": " + why}}); };
    if (!json.is_object() || !json.contains("document") || !json.at("document").is_object() || !json.contains("members")
        || !json.at("members").is_array())
        throw damaged("not a study record (an object with \"document\" and \"members\")");
    StudyRecord record;
    record.document = json.at("document");
    record.overrides = json.contains("overrides") ? json.at("overrides") : nlohmann::json::object();
    for (const auto& item : json.at("members")) {
        if (!item.is_object() || !item.contains("name") || !item.at("name").is_string() || !item.contains("seed")
            || !item.at("seed").is_number_integer())
            throw damaged("a member without a name or seed: " + item.dump());
        MemberResult member;
        member.name = item.at("name").get<std::string>();
        member.point = item.contains("point") && item.at("point").is_string() ? item.at("point").get<std::string>() : member.name;
        member.seed = item.at("seed").get<std::int64_t>();
        member.settings = readSettings(item.contains("settings") ? item.at("settings") : nlohmann::json());
        if (member.name.empty() || member.name.find('/') != std::string::npos || member.name == "." || member.name == "..")
            throw damaged("a member name that is not a directory name: \"" + member.name + "\"");
        record.members.push_back(std::move(member));
    }
    return record;
}

std::vector<MemberResult> readStudyResults(const std::filesystem::path& studyDirectory, const StudyRecord& record)
{
    std::vector<MemberResult> results = record.members;
    for (MemberResult& member : results) {
        std::error_code error;
        const std::filesystem::path file = studylayout::memberFile(studyDirectory, member.name);
        if (std::filesystem::is_regular_file(file, error)) {
            const auto json = tryParseJsonText(readFileText(file));
            if (json && json->is_object() && json->contains("status")) {
                const nlohmann::json& status = json->at("status");
                if (status == "completed" || status == "failed") {
                    member.status = status == "completed" ? MemberStatus::Completed : MemberStatus::Failed;
                    if (json->contains("error") && json->at("error").is_string())
                        member.error = json->at("error").get<std::string>();
                    if (json->contains("measures") && json->at("measures").is_object())
                        for (auto it = json->at("measures").begin(); it != json->at("measures").end(); ++it)
                            if (it.value().is_number())
                                member.measures[it.key()] = it.value().get<double>();
                    continue;
                }
            }
        }
        const std::filesystem::path checkpoints = runlayout::checkpointsDirectory(studylayout::runDirectory(studyDirectory, member.name));
        for (const auto& entry : std::filesystem::directory_iterator(checkpoints, error))
            if (runlayout::stepOfCheckpoint(entry.path().filename().string()))
                member.status = MemberStatus::Stopped;
    }
    return results;
}

std::string resultsCsv(const std::vector<MemberResult>& members)
{
    const std::vector<std::string> keys = settingKeys(members);
    std::string csv = "member,seed,status,error";
    for (const std::string& key : keys) {
        csv += ',';
        csv += csvField(key);
    }
    for (const MeasureSpec& measure : studyMeasures())
        csv += "," + measure.column;
    csv += "\n";
    for (const MemberResult& member : members) {
        csv += csvField(member.name) + "," + std::to_string(member.seed) + "," + toString(member.status) + ","
               + csvField(member.error);
        for (const std::string& key : keys) {
            csv += ",";
            for (const auto& setting : member.settings)
                if (setting.first == key)
                    csv += csvField(jsonCell(setting.second));
        }
        for (const MeasureSpec& measure : studyMeasures()) {
            csv += ",";
            const auto it = member.measures.find(measure.column);
            if (it != member.measures.end() && std::isfinite(it->second)) {
                std::ostringstream value;
                value.precision(10);
                value << it->second;
                csv += value.str();
            }
        }
        csv += "\n";
    }
    return csv;
}

std::pair<double, double> meanAndSpread(const std::vector<double>& values)
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (values.empty())
        return {nan, nan};
    double sum = 0.0;
    for (const double v : values)
        sum += v;
    const double mean = sum / static_cast<double>(values.size());
    if (values.size() < 2)
        return {mean, nan};
    double squares = 0.0;
    for (const double v : values)
        squares += (v - mean) * (v - mean);
    return {mean, std::sqrt(squares / static_cast<double>(values.size() - 1))};
}

std::string resultsMarkdown(const std::string& title, const std::string& metric, const std::vector<MemberResult>& members,
                            const std::vector<StudyAxis>& axes)
{
    std::size_t completed = 0, failed = 0;
    for (const MemberResult& member : members) {
        completed += member.status == MemberStatus::Completed ? 1 : 0;
        failed += member.status == MemberStatus::Failed ? 1 : 0;
    }
    std::string md = "# " + (title.empty() ? std::string("Study") : title) + "\n\n";
    md += std::to_string(completed + failed) + " of " + std::to_string(members.size()) + " members done ("
          + std::to_string(completed) + " completed, " + std::to_string(failed) + " failed). Reported metric: " + metric
          + "; each cell is the mean ± sample standard deviation over the completed seeds.\n\n";

    const std::vector<std::string> points = studyPoints(members);
    const std::vector<std::string> keys = settingKeys(members);
    // The metric's measures first, the rest after; one of some tasks only where a member has it.
    const auto measured = [&](const MeasureSpec& m) {
        return !m.someTasks || std::any_of(members.begin(), members.end(), [&](const MemberResult& member) {
                   return member.measures.count(m.column) > 0;
               });
    };
    std::vector<MeasureSpec> measures;
    for (const MeasureSpec& m : studyMeasures())
        if (m.column.find(metric) != std::string::npos && measured(m))
            measures.push_back(m);
    for (const MeasureSpec& m : studyMeasures())
        if (m.column.find(metric) == std::string::npos && m.column != "steps" && measured(m))
            measures.push_back(m);

    // A column per key, or one per named axis at its first key.
    struct Column {
        std::string title;
        std::string key;                  // a key's own column
        const StudyAxis* axis = nullptr;  // a named axis's column
    };
    std::vector<Column> columns;
    for (const std::string& key : keys) {
        const auto named = std::find_if(axes.begin(), axes.end(), [&](const StudyAxis& axis) {
            return !axis.names.empty() && std::find(axis.keys.begin(), axis.keys.end(), key) != axis.keys.end();
        });
        if (named == axes.end()) {
            columns.push_back({key, key});
        } else if (std::none_of(columns.begin(), columns.end(), [&](const Column& c) { return c.axis == &*named; })) {
            std::string title = named->label;
            for (const std::string& axisKey : named->keys)
                if (named->label.empty())
                    title += (title.empty() ? "" : ", ") + axisKey;
            columns.push_back({title, "", &*named});
        }
    }

    md += "|";
    for (const Column& column : columns)
        md += " " + column.title + " |";
    md += " seeds |";
    for (const MeasureSpec& m : measures)
        md += " " + m.title + " |";
    md += "\n|";
    for (std::size_t i = 0; i < columns.size() + 1 + measures.size(); ++i)
        md += "---|";
    md += "\n";
    for (const std::string& point : points) {
        std::vector<const MemberResult*> group;
        for (const MemberResult& member : members)
            if (member.point == point)
                group.push_back(&member);
        md += "|";
        for (const Column& column : columns) {
            std::string cell;
            if (column.axis) {
                const int index = axisValueIndex(*column.axis, group.front()->settings);
                cell = index >= 0 ? column.axis->names[static_cast<std::size_t>(index)] : "–";
            }
            for (const auto& setting : group.front()->settings)
                if (!column.axis && setting.first == column.key)  // an empty text (train.init_from's none) shown as ""
                    cell = setting.second == "" ? std::string("\"\"") : jsonCell(setting.second);
            md += " " + cell + " |";
        }
        std::size_t done = 0, bad = 0;
        for (const MemberResult* member : group) {
            done += member->status == MemberStatus::Completed ? 1 : 0;
            bad += member->status == MemberStatus::Failed ? 1 : 0;
        }
        md += ' ';
        md += std::to_string(done);
        md += '/';
        md += std::to_string(group.size());
        if (bad > 0) {
            md += " (";
            md += std::to_string(bad);
            md += " failed)";
        }
        md += " |";
        for (const MeasureSpec& m : measures) {
            const auto [mean, spread] = pointMeasure(members, point, m.column);
            md += ' ';
            md += measureText(m, mean, spread);
            md += " |";
        }
        md += "\n";
    }
    bool anyError = false;
    for (const MemberResult& member : members) {
        if (member.status != MemberStatus::Failed)
            continue;
        if (!anyError)
            md += "\nFailed members:\n\n";
        anyError = true;
        std::string error = member.error;
        for (char& c : error)
            if (c == '\n')
                c = ' ';
        md += "- " + member.name + ": " + error + "\n";
    }
    return md;
}

std::string StudyRecord::title() const
{
    return document.contains("name") && document.at("name").is_string() ? document.at("name").get<std::string>()
                                                                        : std::string();
}

std::string StudyRecord::metric() const
{
    if (document.contains("report") && document.at("report").is_object() && document.at("report").contains("metric")
        && document.at("report").at("metric").is_string())
        return document.at("report").at("metric").get<std::string>();
    return "accuracy";
}

const MeasureSpec* findMeasure(const std::string& column)
{
    for (const MeasureSpec& measure : studyMeasures())
        if (measure.column == column)
            return &measure;
    return nullptr;
}

std::vector<std::string> studyPoints(const std::vector<MemberResult>& members)
{
    std::vector<std::string> points;
    for (const MemberResult& member : members)
        if (std::find(points.begin(), points.end(), member.point) == points.end())
            points.push_back(member.point);
    return points;
}

std::pair<double, double> pointMeasure(const std::vector<MemberResult>& members, const std::string& point,
                                       const std::string& column, int* count)
{
    std::vector<double> values;
    for (const MemberResult& member : members) {
        if (member.point != point || member.status != MemberStatus::Completed)
            continue;
        const auto it = member.measures.find(column);
        if (it != member.measures.end() && std::isfinite(it->second))
            values.push_back(it->second);
    }
    if (count)
        *count = static_cast<int>(values.size());
    return meanAndSpread(values);
}

std::string measureText(const MeasureSpec& measure, double mean, double spread)
{
    if (!std::isfinite(mean))
        return "–";
    std::string text = tableNumber(mean * measure.scale, measure.decimals);
    if (std::isfinite(spread))
        text += " ± " + tableNumber(spread * measure.scale, measure.decimals);
    return text;
}

void writeStudyResults(const std::filesystem::path& studyDirectory)
{
    const StudyRecord record = readStudyRecord(studyDirectory);
    const std::vector<MemberResult> results = readStudyResults(studyDirectory, record);
    writeFileAtomically(studylayout::resultsFile(studyDirectory), resultsCsv(results));
    writeFileAtomically(studylayout::reportFile(studyDirectory), studyReport(record, results));
}

}  // namespace widelab
