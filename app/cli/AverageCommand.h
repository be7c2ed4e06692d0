// defines: AverageArguments, averageCommand: `widelab-cli average RUN_DIR --last N`,
// the mean of the weights of a run's last N step checkpoints written as
// checkpoints/average-last-N.pt (core/run/CheckpointAverage.h)
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace widelab {

struct AverageArguments {
    std::vector<std::string> positional;  // RUN_DIR
    std::int64_t last = 5;                // --last N
};

// Says which step files were averaged and the file written on `out`. Throws
// RunUsageError for wrong arguments, and averageCheckpoints' errors (too few
// checkpoints, a damaged one, another architecture, no run there).
int averageCommand(const AverageArguments& a, std::ostream& out);

}  // namespace widelab
