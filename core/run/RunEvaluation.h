// defines: RunEvaluation, evaluateRun: a saved run's checkpoint evaluated on a
// split, read-only (`widelab-cli eval` and a study's test measure)
#pragma once

#include "vocab/Snapshot.h"
#include "data/Datasets.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace widelab {

struct RunEvaluation {
    EvaluationResult result;
    std::string device;  // where it ran: "cpu", "cuda:0", ...
};

// Checks the run's files as openRun does (ConfigError, DataError or
// CheckpointError naming the piece), then evaluates `checkpoint` ("latest",
// "best" or a file name in checkpoints/) on the whole split with the run's own
// data, changing nothing in the directory. `observers` hear what the trainer
// says (a checkpoint passed over). A translation run's translations are found
// by beam search of `beamSize` with `lengthPenalty` (1: greedy).
RunEvaluation evaluateRun(const std::filesystem::path& directory, Split split, const std::string& checkpoint = "latest",
                          const std::optional<std::string>& device = std::nullopt,
                          const std::optional<std::int64_t>& threads = std::nullopt,
                          const std::vector<TrainingObserver*>& observers = {}, std::int64_t beamSize = 1,
                          double lengthPenalty = 0.0);

}  // namespace widelab
