#include "ResumeRule.h"

#include "RunDirectory.h"
#include "RunLayout.h"
#include "train/RunSchedule.h"

#include <algorithm>
#include <cstdio>
#include <regex>

namespace widelab {
namespace {

// The document as compared: resolved, its paths absolute, the ignored keys gone.
nlohmann::json comparable(const RunDocument& document)
{
    nlohmann::json json = document.withAbsolutePaths().toJson();
    for (const std::string& key : resumeIgnoredKeys()) {
        const std::size_t dot = key.find('.');
        if (dot == std::string::npos)
            json.erase(key);
        else if (json.contains(key.substr(0, dot)) && json[key.substr(0, dot)].is_object())
            json[key.substr(0, dot)].erase(key.substr(dot + 1));
    }
    return json;
}

std::string shown(const nlohmann::json& json, const std::string& dottedKey)
{
    std::string path = "/";  // appended, not "/" + ...: GCC 12 warns falsely on that (bug 105329)
    path += std::regex_replace(dottedKey, std::regex("\\."), "/");
    const nlohmann::json::json_pointer pointer(path);
    return json.contains(pointer) ? json.at(pointer).dump() : std::string("absent");
}

}  // namespace

const std::vector<std::string>& resumeIgnoredKeys()
{
    static const std::vector<std::string> keys{"name",         "description",  "train.steps", "train.device",
                                               "train.threads", "train.probes", "train.probe_every",
                                               "train.alarm_expert_share", "train.collective_timeout_s", "train.processes",
                                               "train.expert_parallel", "train.cuda_graph"};
    return keys;
}

ResumeDecision decideResume(const std::filesystem::path& directory, const RunDocument& given)
{
    ResumeDecision decision;
    std::optional<std::int64_t> newest;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(runlayout::checkpointsDirectory(directory), error))
        if (const auto step = runlayout::stepOfCheckpoint(entry.path().filename().string()))
            newest = std::max(newest.value_or(*step), *step);
    if (!newest) {
        decision.reason = directory.string() + " has no checkpoint to continue from";
        return decision;
    }
    if (!std::filesystem::exists(runlayout::configFile(directory))) {
        decision.reason = directory.string() + " has checkpoints but no " + std::string(runlayout::kConfig);
        return decision;
    }
    decision.checkpointStep = *newest;
    decision.saved = readRunDocument(directory);
    const nlohmann::json saved = comparable(decision.saved), mine = comparable(given);
    for (const std::string& key : differingKeys(saved, mine))
        decision.differences.push_back(
            {key, "the run was configured with " + shown(saved, key) + ", this document has " + shown(mine, key)});
    decision.kind = decision.differences.empty() ? ResumeKind::Continue : ResumeKind::Refused;
    return decision;
}

std::optional<ScheduleChange> scheduleChange(const TrainConfig& train, std::int64_t step, std::int64_t savedSteps)
{
    // Only the cosine and the linear decay over the run's length; the other kinds do not see it.
    const bool spansTheRun = train.schedule == ScheduleChoice::WarmupCosine || train.schedule == ScheduleChoice::WarmupLinear;
    if (!spansTheRun || savedSteps <= 0 || savedSteps == train.steps || step < 0)
        return std::nullopt;
    ScheduleChange change;
    change.step = step;
    change.savedSteps = savedSteps;
    change.steps = train.steps;
    change.savedRate = learningRate(scheduleOptions(train, savedSteps), step);
    change.rate = learningRate(scheduleOptions(train, train.steps), step);
    return change;
}

std::string ScheduleChange::text() const
{
    char line[240];
    std::snprintf(line, sizeof line,
                  "the learning-rate schedule now spans %lld steps instead of %lld: at step %lld the rate changes "
                  "from %.4g to %.4g",
                  static_cast<long long>(steps), static_cast<long long>(savedSteps), static_cast<long long>(step),
                  savedRate, rate);
    return line;
}

ScheduleOptions scheduleOptions(const TrainConfig& train, std::int64_t span)
{
    ScheduleKind kind = ScheduleKind::WarmupCosine;
    switch (train.schedule) {
    case ScheduleChoice::Constant: kind = ScheduleKind::Constant; break;
    case ScheduleChoice::InverseSqrt: kind = ScheduleKind::InverseSqrt; break;
    case ScheduleChoice::WarmupRsqrt: kind = ScheduleKind::WarmupRsqrt; break;
    case ScheduleChoice::WarmupLinear: kind = ScheduleKind::WarmupLinear; break;
    case ScheduleChoice::WarmupCosine: break;
    }
    return ScheduleOptions{kind, train.learningRate, train.warmupSteps, span, train.minLearningRateRatio};
}

}  // namespace widelab
