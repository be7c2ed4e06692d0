// defines: RunActivity, runActivity, RunSummary, summariseRun, runDirectories: what
// a list of runs shows of each (who writes it, how far it got, its best validation,
// its speed, the user's notes), read from the run's files without loading a model
#pragma once

#include "RunNotes.h"
#include "RunStatus.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace widelab {

// Whether anything still writes a run, from its status.json.
enum class RunActivity {
    Unknown,   // no status.json (a run from before it existed, or one being created)
    Training,
    Paused,
    Stale,     // training, but no update for longer than the caller allows
    Gone,      // training or paused on this machine, and the process is gone without a last word
    Finished,
    Stopped,
    Failed,
};

// How long a training run may stay silent before a reader calls it stale: the
// trainer rewrites status.json every few seconds while it trains (RunStatusWriter).
inline constexpr std::int64_t kStaleAfterSeconds = 120;

// "", "training", "paused", "stale", "interrupted", "finished", "stopped", "failed"
std::string toString(RunActivity activity);

// The activity of a run whose status is `status`, `secondsSinceUpdate` after its
// last update (by whatever clock the caller trusts), on a machine named
// `localHost`: a trainer on this machine whose process is gone is Gone, one
// silent for more than `staleAfterSeconds` is Stale.
RunActivity runActivity(const RunStatus& status, const std::string& localHost, std::int64_t secondsSinceUpdate,
                        std::int64_t staleAfterSeconds);

// The best of a run's validations.
struct ValidationBest {
    std::optional<double> loss;      // the lowest validation loss
    std::optional<double> accuracy;  // the highest validation accuracy, 0..1
    std::optional<double> bleu;      // translation: the highest validation BLEU, 0..100
};

struct RunSummary {
    std::filesystem::path directory;
    nlohmann::json config;  // config.json as written (not resolved); null when it cannot be read
    std::string configError;
    std::optional<RunStatus> status;
    std::string statusError;
    RunNotes notes;
    std::string notesError;
    std::int64_t step = 0;        // the last train line's step, or status.json's when further
    std::int64_t totalSteps = 0;  // status.json's, when there is one
    ValidationBest best;
    std::optional<double> tokensPerSecond;  // the last train line's
    std::int64_t updated = 0;     // unix seconds: the newest of config.json, metrics.jsonl, status.json

    // How far metrics.jsonl was read, so that the next summary reads on from there.
    std::uint64_t metricsOffset = 0;
    std::uint64_t metricsInode = 0;

    std::string name() const;  // runName: the notes' name, else the directory's
};

// Reads the run in `directory`: config.json, status.json, notes.json, and the
// train and eval lines of metrics.jsonl. With `previous` (this run's last
// summary), metrics.jsonl is read on from where that one stopped, unless the file
// was replaced or shrank (a resumed run rewrites it), when it is read afresh. A
// damaged file or line costs what it holds (the error fields say why), never the
// summary. Never throws.
RunSummary summariseRun(const std::filesystem::path& directory, const RunSummary* previous = nullptr);

// The runs directly inside `workspace` (directories holding a config.json), by
// path; empty when the folder is missing or cannot be read.
std::vector<std::filesystem::path> runDirectories(const std::filesystem::path& workspace);

}  // namespace widelab
