// defines: CheckpointError, CheckpointState, saveCheckpoint, loadCheckpoint: a run's
// state on disk (model, optimiser, step, data position, RNG), written atomically
#pragma once

#include "config/ModelConfig.h"
#include "model/WideTransformer.h"

#include <torch/optim/optimizer.h>

#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace widelab {

class CheckpointError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The file is missing, truncated or not a checkpoint at all (as opposed to a
// whole checkpoint of another architecture): an older checkpoint may serve.
class CheckpointUnreadable : public CheckpointError {
public:
    using CheckpointError::CheckpointError;
};

struct CheckpointState {
    std::int64_t step = 0;                 // optimiser updates done
    std::int64_t samplerPosition = 0;      // training examples handed out so far
    double bestValidationLoss = std::numeric_limits<double>::infinity();
    std::int64_t scheduleSteps = 0;        // the steps the learning-rate schedule spans (0: not recorded)
    // What the trainer has measured since its last metrics line (sums of loss,
    // task loss, balance loss, hits, counted, gradient norm over intervalSteps
    // steps): a run stopped between two lines resumes them, so that it writes the
    // lines an uninterrupted run writes. Empty when no step is pending.
    std::vector<double> intervalSums;
    std::int64_t intervalSteps = 0;
};

// Writes `file` atomically: a temporary file beside it, flushed to disk, then
// renamed over it, so that a kill at any moment leaves the previous file whole.
// Holds the model's parameters and buffers, the optimiser's state, `state`, the
// CPU random generator's state (and the GPU's, for a model on a GPU) and the
// model configuration.
void saveCheckpoint(const std::filesystem::path& file, WideTransformerImpl& model,
                    const torch::optim::Optimizer& optimizer, const CheckpointState& state);

// Restores what saveCheckpoint wrote into `model` (and `optimizer`, when given).
// Throws CheckpointError naming the problem: a missing or unreadable (truncated)
// file, another architecture (the configuration keys that differ), a parameter
// of another shape.
CheckpointState loadCheckpoint(const std::filesystem::path& file, WideTransformerImpl& model,
                               torch::optim::Optimizer* optimizer);

// Writes `bytes` to `file` atomically (temporary file, fsync, rename, fsync of the
// directory). The temporary file's name is unique to the process and the call.
void writeFileAtomically(const std::filesystem::path& file, const std::string& bytes);

}  // namespace widelab
