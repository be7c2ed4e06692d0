// defines: RunState, RunStatus, readRunStatus, writeRunStatus, parseRunStatus:
// RUN_DIR/status.json, who is training a run and how far it got, for a window
// following the run from another machine
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace widelab {

enum class RunState { Training, Paused, Finished, Stopped, Failed };

std::string toString(RunState state);  // "training", "paused", "finished", "stopped", "failed"
std::optional<RunState> runStateFromString(const std::string& text);
// Finished, stopped and failed: no trainer writes the run any more.
inline bool hasEnded(RunState state) { return state != RunState::Training && state != RunState::Paused; }

// What status.json holds. The trainer rewrites it atomically on every change of
// state, and while training at most every few seconds (see RunStatusWriter), so
// `updated` ages only when the trainer is stuck or gone.
struct RunStatus {
    std::string host;              // the machine training (gethostname)
    std::int64_t pid = 0;          // the trainer's process on that machine
    RunState state = RunState::Training;
    std::int64_t step = 0;         // optimiser updates done
    std::int64_t totalSteps = 0;   // the run's length (train.steps)
    std::int64_t updated = 0;      // unix seconds, the trainer's clock
    std::string message;           // failed: why; stopped/finished: the summary
};

nlohmann::json toJson(const RunStatus& status);

// The status in `text`, or std::nullopt with `error` saying what is wrong.
std::optional<RunStatus> parseRunStatus(const std::string& text, std::string* error = nullptr);

// RUN_DIR/status.json. std::nullopt when it is missing (runs from before it
// existed have none; `error` stays empty) or damaged (`error` names the file and
// the reason). Never throws.
std::optional<RunStatus> readRunStatus(const std::filesystem::path& directory, std::string* error = nullptr);

// Writes RUN_DIR/status.json atomically (a reader never sees half of it).
// Throws CheckpointError when the directory cannot be written.
void writeRunStatus(const std::filesystem::path& directory, const RunStatus& status);

// This machine's name, as RunStatus::host records it.
std::string localHostName();

// Whether a process with this id exists on this machine (false for pid <= 0).
bool processExists(std::int64_t pid);

}  // namespace widelab
