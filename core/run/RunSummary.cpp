#include "RunSummary.h"

#include "RunLayout.h"
#include "vocab/JsonText.h"
#include "vocab/MetricsCodec.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>

namespace widelab {
namespace {

// Unix seconds of the file's last change; 0 when it cannot be read.
std::int64_t fileModifiedSeconds(const std::filesystem::path& file)
{
    struct stat info {};
    return ::stat(file.c_str(), &info) == 0 ? static_cast<std::int64_t>(info.st_mtime) : 0;
}

std::optional<double> numberAt(const nlohmann::json& line, const char* key)
{
    const auto it = line.find(key);
    if (it == line.end() || !it->is_number())
        return std::nullopt;
    return it->get<double>();
}

std::string textAt(const nlohmann::json& line, const char* key)
{
    const auto it = line.find(key);
    return it != line.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void keepLowest(std::optional<double>& best, std::optional<double> value)
{
    if (value && (!best || *value < *best))
        best = value;
}

void keepHighest(std::optional<double>& best, std::optional<double> value)
{
    if (value && (!best || *value > *best))
        best = value;
}

// A complete line's JSON object when its type is `type`; the substring test
// spares parsing the probe and insight lines, which are most of the bytes.
std::optional<nlohmann::json> lineOfType(const std::string& line, const char* type)
{
    if (line.find(std::string("\"") + type + "\"") == std::string::npos)
        return std::nullopt;
    std::optional<nlohmann::json> json = tryParseJsonText(line);
    if (!json || !json->is_object() || textAt(*json, "type") != type)
        return std::nullopt;
    return json;
}

// The train and eval lines of metrics.jsonl from `summary.metricsOffset` on, up
// to the last complete line (a line being written is left for the next reading).
void readMetrics(RunSummary& summary)
{
    const std::filesystem::path file = runlayout::metricsFile(summary.directory);
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return;
    in.seekg(static_cast<std::streamoff>(summary.metricsOffset));
    std::string line;
    // The last few lines that may be train lines: only the last train line
    // counts, so only these are parsed (a probe's text may hold the word too).
    std::vector<std::string> trainCandidates;
    std::uint64_t offset = summary.metricsOffset;
    while (std::getline(in, line)) {
        if (in.eof())
            break;  // no '\n' yet: still being written
        offset += line.size() + 1;
        if (line.find("\"train\"") != std::string::npos) {
            if (trainCandidates.size() == 4)
                trainCandidates.erase(trainCandidates.begin());
            trainCandidates.push_back(line);
        } else if (const std::optional<nlohmann::json> eval = lineOfType(line, "eval");
                 eval && textAt(*eval, "split") == "validation") {
            keepLowest(summary.best.loss, numberAt(*eval, "loss"));
            keepHighest(summary.best.accuracy, numberAt(*eval, "accuracy"));
            if (numberAt(*eval, "translated").value_or(0) > 0)
                keepHighest(summary.best.bleu, numberAt(*eval, "bleu"));
        }
    }
    summary.metricsOffset = offset;
    for (auto candidate = trainCandidates.rbegin(); candidate != trainCandidates.rend(); ++candidate) {
        const std::optional<nlohmann::json> train = lineOfType(*candidate, "train");
        if (!train)
            continue;
        const double step = std::clamp(numberAt(*train, "step").value_or(0.0), 0.0, static_cast<double>(kMaxMetricsStep));
        summary.step = std::max(summary.step, static_cast<std::int64_t>(step));
        if (const std::optional<double> speed = numberAt(*train, "tokens_per_second"))
            summary.tokensPerSecond = speed;
        break;
    }
}

}  // namespace

std::string toString(RunActivity activity)
{
    switch (activity) {
    case RunActivity::Unknown: return {};
    case RunActivity::Training: return "training";
    case RunActivity::Paused: return "paused";
    case RunActivity::Stale: return "stale";
    case RunActivity::Gone: return "interrupted";
    case RunActivity::Finished: return "finished";
    case RunActivity::Stopped: return "stopped";
    case RunActivity::Failed: return "failed";
    }
    return {};
}

RunActivity runActivity(const RunStatus& status, const std::string& localHost, std::int64_t secondsSinceUpdate,
                        std::int64_t staleAfterSeconds)
{
    switch (status.state) {
    case RunState::Finished: return RunActivity::Finished;
    case RunState::Stopped: return RunActivity::Stopped;
    case RunState::Failed: return RunActivity::Failed;
    case RunState::Training:
    case RunState::Paused:
        break;
    }
    if (status.host == localHost && !processExists(status.pid))
        return RunActivity::Gone;
    if (status.state == RunState::Training && secondsSinceUpdate > staleAfterSeconds)
        return RunActivity::Stale;
    return status.state == RunState::Paused ? RunActivity::Paused : RunActivity::Training;
}

std::string RunSummary::name() const
{
    return runName(notes, directory);
}

RunSummary summariseRun(const std::filesystem::path& directory, const RunSummary* previous)
{
    RunSummary summary;
    const std::filesystem::path metrics = runlayout::metricsFile(directory);
    struct stat info {};
    const bool hasMetrics = ::stat(metrics.c_str(), &info) == 0;
    const std::uint64_t inode = hasMetrics ? static_cast<std::uint64_t>(info.st_ino) : 0;
    const std::uint64_t size = hasMetrics ? static_cast<std::uint64_t>(info.st_size) : 0;
    if (previous && previous->directory == directory && previous->metricsInode == inode
        && previous->metricsOffset <= size) {
        summary = *previous;  // read on from there
    }
    summary.directory = directory;
    summary.metricsInode = inode;

    summary.config = nullptr;
    summary.configError.clear();
    const std::filesystem::path configFile = runlayout::configFile(directory);
    if (std::optional<nlohmann::json> config = tryParseJsonText(readFileText(configFile), &summary.configError);
        config && config->is_object())
        summary.config = std::move(*config);
    else
        summary.configError = configFile.string() + ": " + (config ? "not a JSON object" : summary.configError);

    summary.statusError.clear();
    summary.status = readRunStatus(directory, &summary.statusError);
    summary.notesError.clear();
    summary.notes = readRunNotes(directory, &summary.notesError);

    if (hasMetrics)
        readMetrics(summary);
    if (summary.status) {
        summary.step = std::max(summary.step, summary.status->step);
        summary.totalSteps = summary.status->totalSteps;
    }
    summary.updated = std::max({fileModifiedSeconds(configFile), hasMetrics ? static_cast<std::int64_t>(info.st_mtime) : 0,
                                fileModifiedSeconds(runlayout::statusFile(directory))});
    return summary;
}

std::vector<std::filesystem::path> runDirectories(const std::filesystem::path& workspace)
{
    std::vector<std::filesystem::path> runs;
    std::error_code error;
    for (std::filesystem::directory_iterator it(workspace, error), end; !error && it != end; it.increment(error)) {
        std::error_code ignored;
        if (it->is_directory(ignored) && std::filesystem::is_regular_file(runlayout::configFile(it->path()), ignored))
            runs.push_back(it->path());
    }
    std::sort(runs.begin(), runs.end());
    return runs;
}

}  // namespace widelab
