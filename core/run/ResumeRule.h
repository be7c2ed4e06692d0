// defines: ResumeKind, ResumeDecision, decideResume, resumeIgnoredKeys,
// ScheduleChange, scheduleChange: the one rule deciding whether a start continues
// the run in a directory or is another run, used by the trainer, the CLI and the app
#pragma once

#include "train/RunConfig.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace widelab {

enum class ResumeKind {
    NewRun,    // nothing to continue: no config.json, or no checkpoints/step-*.pt
    Continue,  // the document is the run's own, but for the keys resumeIgnoredKeys names
    Refused,   // the directory holds a run, configured otherwise (see `differences`)
};

struct ResumeDecision {
    ResumeKind kind = ResumeKind::NewRun;
    std::string reason;                    // NewRun: why there is nothing to continue
    std::vector<ConfigIssue> differences;  // Refused: each differing key, with the run's value and the document's
    std::int64_t checkpointStep = -1;      // Continue, Refused: the step of the newest step file (by its name)
    RunDocument saved;                     // Continue, Refused: RUN_DIR/config.json
};

// The keys a run may change and stay the same run (dotted, as differingKeys names them):
//   name, description        words about the run, not the run;
//   train.steps              its length (a cosine or linear schedule then spans the new length: scheduleChange);
//   train.device, .threads   where and how fast it runs, not what it computes;
//   train.collective_timeout_s, .processes, .expert_parallel  how many processes share a batch and how long
//                            they wait for each other, not what they compute (docs/distributed.md);
//   train.probes, .probe_every  what is inspected along the way (the run keeps its
//                            probes and gains the document's new ones).
// Everything else (model, task, optimiser, schedule, seeds, batch, intervals) shapes
// the weights or the data a checkpoint was trained on, so another value is another run.
const std::vector<std::string>& resumeIgnoredKeys();

// Whether training `given` into `directory` continues the run there. Both documents
// are compared resolved, with their paths made absolute against the working directory
// (RunDocument::withAbsolutePaths). Throws DataError or ConfigError naming config.json when the directory
// has checkpoints but its config.json cannot be read.
ResumeDecision decideResume(const std::filesystem::path& directory, const RunDocument& given);

// How continuing a run at `step` moves its learning rate when its length changes from
// `savedSteps` to given.train.steps: only a cosine or linear schedule depends on the length.
struct ScheduleChange {
    std::int64_t step = 0;
    std::int64_t savedSteps = 0, steps = 0;
    double savedRate = 0.0, rate = 0.0;  // the rate at `step` over the old span and over the new one
    std::string text() const;            // "the learning-rate schedule now spans ..."
};
std::optional<ScheduleChange> scheduleChange(const TrainConfig& train, std::int64_t step, std::int64_t savedSteps);

}  // namespace widelab
