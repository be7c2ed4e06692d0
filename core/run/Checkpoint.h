// defines: CheckpointError, CheckpointUnreadable, CheckpointState, saveCheckpoint,
// loadCheckpoint, checkpointIntegrity, checkpointHash: a run's state on disk (model,
// optimiser, step, data position, RNG), written atomically and checksummed
#pragma once

#include "config/ModelConfig.h"
#include "model/WideTransformer.h"

#include <torch/optim/optimizer.h>

#include <filesystem>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace widelab {

class CheckpointError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The file is missing, truncated, damaged (its checksum fails), not a checkpoint
// at all, or holds non-finite weights (as opposed to a whole checkpoint of
// another architecture): an older checkpoint may serve.
class CheckpointUnreadable : public CheckpointError {
public:
    using CheckpointError::CheckpointError;
};

struct CheckpointState {
    std::int64_t step = 0;                 // optimiser updates done
    std::int64_t samplerPosition = 0;      // training examples handed out so far
    double bestValidationLoss = std::numeric_limits<double>::infinity();
    double bestValidationAccuracy = -std::numeric_limits<double>::infinity();  // train.select_best accuracy
    std::int64_t scheduleSteps = 0;        // the steps the learning-rate schedule spans (0: not recorded)
    // What the trainer has measured since its last metrics line (sums of loss,
    // task loss, balance loss, hits, counted, gradient norm over intervalSteps
    // steps): a run stopped between two lines resumes them, so that it writes the
    // lines an uninterrupted run writes. Empty when no step is pending.
    std::vector<double> intervalSums;
    std::int64_t intervalSteps = 0;
    // The processes that trained it (distributed runs); a checkpoint from before
    // distributed training reads as 1.
    std::int64_t worldSize = 1;
    // The validation of `step` was cut short by a stop (a checkpoint saved then):
    // the resumed run measures it, and does what follows it, before the next
    // step, as an uninterrupted run would. False in checkpoints before it existed.
    bool evaluationPending = false;
    // Set by loadCheckpoint: false for a format-1 file, written before checkpoints
    // had a checksum, whose bytes could not be checked. Ignored by saveCheckpoint.
    bool verified = true;
};

// Writes `file` atomically: a temporary file beside it, flushed to disk, then
// renamed over it, so that a kill at any moment leaves the previous file whole.
// Holds the model's parameters and buffers, the optimiser's state, `state`, the
// CPU random generator's state (and the GPU's, for a model on a GPU) and the
// model configuration. Format 2: the LibTorch archive, then a 24-byte trailer
// (kCheckpointMagic, the archive's length and its checkpointHash, both 64-bit
// little-endian); see docs/run-directory.md.
void saveCheckpoint(const std::filesystem::path& file, WideTransformerImpl& model,
                    const torch::optim::Optimizer& optimizer, const CheckpointState& state);

// Restores what saveCheckpoint wrote into `model` (and `optimizer`, when given).
// The checksum is verified before anything is read, and every floating-point
// parameter, buffer and optimiser state checked to be finite before the model
// changes. Throws CheckpointUnreadable naming the file and the problem (missing,
// cut short, damaged, not a checkpoint, a non-finite tensor by name), or
// CheckpointError for a whole checkpoint that does not fit: another architecture
// (the configuration keys that differ), a parameter of another shape, a newer
// format. A format-1 file (no checksum) loads with state.verified false.
CheckpointState loadCheckpoint(const std::filesystem::path& file, WideTransformerImpl& model,
                               torch::optim::Optimizer* optimizer);

// Checks a file's trailer and checksum without loading it (a format-1 file, which
// has none, is opened as an archive instead): nullopt when intact, else what is
// wrong, naming the file. Finiteness is checked only by loadCheckpoint.
std::optional<std::string> checkpointIntegrity(const std::filesystem::path& file);

// The checksum of format-2 checkpoints: XXH64 (seed 0) of `size` bytes, written
// here rather than taken from a library. It detects damage (a flipped bit, a
// block of zeros, a copy cut short), not tampering: anyone can recompute it.
std::uint64_t checkpointHash(const void* data, std::size_t size);

// The first 8 bytes of the trailer of a format-2 checkpoint.
inline constexpr char kCheckpointMagic[9] = "WLCKSUM2";
inline constexpr std::size_t kCheckpointTrailerSize = 24;

// Writes `bytes` to `file` atomically (temporary file, fsync, rename, fsync of the
// directory). The temporary file, NAME.tmp-PID-N beside it, has a name unique to the
// process and the call, NAME cut short when the whole would pass 255 bytes.
// Throws CheckpointError naming the file and the system's reason.
void writeFileAtomically(const std::filesystem::path& file, const std::string& bytes);

// writeFileAtomically's two halves, for files that must change together: the
// bytes written and flushed under the temporary name (returned), then renamed
// over `file`. Both throw CheckpointError naming the file and the reason, and
// remove the temporary when they fail.
std::filesystem::path stageFile(const std::filesystem::path& file, const std::string& bytes);
void commitStagedFile(const std::filesystem::path& temporary, const std::filesystem::path& file);

// Removes from `folder` the temporary files of writeFileAtomically calls that
// never finished (a process killed midway), except this process's own; returns
// their names, sorted. The caller holds the folder (a run's lock).
std::vector<std::string> removeInterruptedWrites(const std::filesystem::path& folder);

}  // namespace widelab
