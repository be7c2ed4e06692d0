// defines: TaskSetup, TaskData, TaskSpec, SetupCancelled and the task registry
// (taskKinds, findTask, prepareTaskData): a run's data, prepared from its
// document by the task kind it names
//
// A task kind turns `task.*` into a tokenizer, class names and the three splits;
// the trainer only trains on what it gets. Adding one is a new file in this
// folder defining a `const TaskSpec& xxxTask()`, plus one line in Registry.cpp
// (and its name among task.kind's choices in the schema).
#pragma once

#include "data/Batch.h"
#include "data/Datasets.h"
#include "data/Images.h"
#include "data/Tokenizer.h"
#include "train/RunConfig.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace widelab {

// Construction abandoned because TaskSetup::cancelled said so.
class SetupCancelled : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// What preparing a task may read and tell, besides the document.
struct TaskSetup {
    const RunDocument& run;
    // The run directory: its saved tokenizer, labels and normalisation when
    // resuming, and its token cache.
    std::filesystem::path directory;
    bool resume = false;
    // A new run that starts from another run's weights (train.init_from): that
    // run's folder, whose tokenizer a text task takes instead of building one, so
    // that every token id means what it meant in pretraining. Empty: none.
    std::filesystem::path tokenizerFrom;
    // The run's probes, checked where the run trains (an image task refuses an
    // entry it cannot read, naming it); null when not checked.
    const std::vector<std::string>* probes = nullptr;
    // Progress of long preparation (generating a large ListOps set), as lines for the log.
    std::function<void(const std::string&)> progress;
    // What the run should know about its data (inputs left out, counted), as warnings.
    std::function<void(const std::string&)> warn;
    // Asked between chunks of long preparation: true throws SetupCancelled.
    std::function<bool()> cancelled;
};

struct TaskData {
    Tokenizer tokenizer;                      // the byte tokenizer where tokens play no part (images)
    std::vector<std::string> labels;          // class names, in class order (empty for a language model)
    std::unique_ptr<Dataset> train, validation, test;
    std::optional<ImageStats> imageStats;     // image tasks: the normalisation every image goes through
    // Masked language models: how batches hide tokens (its seed and first
    // example are the trainer's to set, batch by batch).
    std::optional<TokenMasking> masking;
};

struct TaskSpec {
    TaskKind kind;
    // The tokenizer, labels and splits (which may be empty: prepareTaskData checks).
    // Throws ConfigError naming a key, DataError naming a file, SetupCancelled.
    std::function<TaskData(const TaskSetup&)> prepare;
};

const std::vector<const TaskSpec*>& taskKinds();
const TaskSpec& findTask(TaskKind kind);  // std::invalid_argument for a kind without a registration

// The task's data, checked against the model: a vocabulary larger than
// model.vocab_size is a ConfigError, an empty training or validation split a
// DataError naming the data.
TaskData prepareTaskData(const TaskSetup& setup);

// The tokenizer of a task read from text files: the run's own when resuming,
// TaskSetup::tokenizerFrom's when starting from another run (ConfigError on
// task.tokenizer when that run's is of another kind), else task.tokenizer's, a character or word vocabulary built from the texts
// that `streamTexts` gives the builder (capped at task.vocab_limit).
Tokenizer textTokenizer(const TaskSetup& setup, const std::function<void(VocabularyBuilder&)>& streamTexts);

}  // namespace widelab
