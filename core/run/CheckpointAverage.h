// defines: CheckpointAverage, averageCheckpoints: the mean of
// the weights of a run's last N step checkpoints, written as one more checkpoint
// (checkpoints/average-last-N.pt) that every --checkpoint FILE loads
#pragma once

#include "Checkpoint.h"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace widelab {

struct CheckpointAverage {
    std::filesystem::path file;                  // the checkpoint written
    std::vector<std::filesystem::path> averaged;  // the step files, oldest first
    CheckpointState state;                       // the newest's, which the file carries
};

// Averages the floating-point parameters and buffers of the run's last `last`
// step checkpoints (checkpoints/step-*.pt, by step; in double, stored in each
// tensor's own type) and writes them atomically, in saveCheckpoint's format
// with its checksum, to checkpoints/average-last-N.pt
// (runlayout::averageCheckpointFileName), replacing an earlier one. Integer buffers, the optimiser state, the step and the rest of
// the state, and the random generators' state are the newest checkpoint's (the
// process's CPU generator is left holding it). The model and optimiser are
// built from the run's config.json, as eval builds them.
//
// It takes no lock: like eval it only reads the step files, which are written
// whole and never changed, so a run being trained may be averaged; a step file
// that training prunes meanwhile is an error naming it (run it again). The
// trainer never reads, counts or deletes the average (it is no step file); a
// trainer starting while the average is being written removes its temporary
// file with other processes' unfinished writes, and the average then fails
// saying it cannot replace the file.
//
// Throws std::invalid_argument for `last` below 1; CheckpointError when the
// run has fewer than `last` step files (saying how many, and the --last that
// averages them) or a checkpoint of another architecture than config.json
// (naming the file and the keys); CheckpointUnreadable naming a damaged or
// missing checkpoint; DataError / ConfigError for the run's config.json.
CheckpointAverage averageCheckpoints(const std::filesystem::path& runDirectory, std::int64_t last);

}  // namespace widelab
