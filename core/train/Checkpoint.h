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

namespace widelab {

class CheckpointError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct CheckpointState {
    std::int64_t step = 0;                 // optimiser updates done
    std::int64_t samplerPosition = 0;      // training examples handed out so far
    double bestValidationLoss = std::numeric_limits<double>::infinity();
};

// Writes `file` atomically: a temporary file beside it, flushed to disk, then
// renamed over it, so that a kill at any moment leaves the previous file whole.
// Holds the model's parameters and buffers, the optimiser's state, `state`, the
// CPU random generator's state and the model configuration.
void saveCheckpoint(const std::filesystem::path& file, WideTransformerImpl& model,
                    const torch::optim::Optimizer& optimizer, const CheckpointState& state);

// Restores what saveCheckpoint wrote into `model` (and `optimizer`, when given).
// Throws CheckpointError naming the problem: a missing or unreadable (truncated)
// file, another architecture (the configuration keys that differ), a parameter
// of another shape.
CheckpointState loadCheckpoint(const std::filesystem::path& file, WideTransformerImpl& model,
                               torch::optim::Optimizer* optimizer);

// Writes `bytes` to `file` atomically (temporary file, fsync, rename, fsync of the directory).
void writeFileAtomically(const std::filesystem::path& file, const std::string& bytes);

}  // namespace widelab
