// defines: TensorBoardArguments, exportTensorBoardCommand: `widelab-cli export-tb`,
// a run's metrics.jsonl as TensorBoard event files (export/TensorBoardExport.h)
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace widelab {

struct TensorBoardArguments {
    std::vector<std::string> positional;
    std::string out;       // --out LOGDIR
    bool replace = false;  // --replace: delete the run's earlier events in LOGDIR first
};

// Lines skipped (malformed) on `err`; what was written on `out`. Throws
// RunUsageError for wrong arguments.
int exportTensorBoardCommand(const TensorBoardArguments& a, std::ostream& out, std::ostream& err);

}  // namespace widelab
