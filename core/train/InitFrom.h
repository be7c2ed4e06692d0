// defines: InitFromReport, initialiseFrom: a new run's weights taken from another
// run's checkpoint (train.init_from), the fine-tuning half of pretraining then
// fine-tuning
#pragma once

#include "RunConfig.h"
#include "model/WideTransformer.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

struct InitFromReport {
    std::filesystem::path checkpoint;      // the file read
    std::int64_t step = 0;                 // the step it was saved at
    std::vector<std::string> loaded;       // this run's tensors taken from it, by name
    std::int64_t loadedValues = 0;         // their elements
    std::vector<std::string> initialised;  // this run's tensors started anew: its task's head
    std::vector<std::string> leftOut;      // the source's tensors not taken: its task's head
    std::vector<std::string> warnings;     // newer checkpoints of the source passed over
    bool headKept = false;                 // the source trained the same task: its head was taken too
    std::string text() const;              // what was loaded, started anew and left out, for the log
};

// ConfigError on train.init_from when `from` names no run folder (no config.json):
// said when a run starts, before its data is read with that run's tokenizer.
void checkInitFromFolder(const InitFromSpec& from);

// Copies into `model` (this run's, just built from run.model) every parameter and
// buffer of the checkpoint that run.train.init_from names, matched by name and
// shape. The task's head (WideTransformerImpl::isTaskHead) is taken only when the
// source trained the same task kind and head with the same classes (`labels`,
// this run's); otherwise this run's head keeps its fresh initialisation and the
// source's is left out. Throws ConfigError on train.init_from naming the first
// tensor of the body that one side lacks or holds in another shape, and the model
// keys in which the two runs differ; CheckpointError or DataError, naming the
// file, for a source that cannot be read (as openRun).
InitFromReport initialiseFrom(const RunDocument& run, const std::vector<std::string>& labels, WideTransformerImpl& model);

}  // namespace widelab
