// defines: AblationScanOptions, AblatedPart, AblationScanResult, ablationParts,
// ablationLabel, scanAblations: every head, expert, path or sublayer of a saved
// run switched off in turn, and what that does to validation loss, accuracy and
// a probe's prediction (`widelab-cli ablate`, the app's Ablation page)
#pragma once

#include "vocab/Snapshot.h"
#include "model/Ablation.h"
#include "config/ModelConfig.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace widelab {

struct AblationScanOptions {
    AblationPart part = AblationPart::Head;
    AblationMode mode = AblationMode::Zero;
    std::string checkpoint = "latest";   // "latest", "best" or a file name in checkpoints/
    std::int64_t batches = 0;            // validation batches per measurement; 0: the run's train.eval_batches
    std::string probe;                   // a text (image models: validation:N or a file); empty: the run's first probe
    std::optional<std::string> device;
    std::optional<std::int64_t> threads;
};

struct AblatedPart {
    Ablation ablation;
    std::string label;          // "layer 2 head 5", "block 1 expert 3", "block 4 path 2 (ffn)", "block 4 ffn"
    double loss = 0.0;
    double lossDelta = 0.0;     // loss - baseline loss
    double accuracy = 0.0;
    double accuracyDelta = 0.0; // accuracy - baseline accuracy (0..1 scale)
    std::vector<float> probePrediction;
};

struct AblationScanResult {
    AblationPart part = AblationPart::Head;
    AblationMode mode = AblationMode::Zero;
    std::int64_t step = 0;
    std::string checkpoint;     // the file the weights came from
    EvaluationResult baseline;
    std::int64_t layers = 0;    // heatmap rows: blocks
    std::int64_t columns = 0;   // heads (n*H), experts, paths, or 2 sublayers
    std::string probeText;
    std::vector<std::string> predictionLabels;
    std::vector<float> baselinePrediction;
    std::vector<AblatedPart> rows;
};

// Asked when the scan has nothing to switch off (experts of a dense model).
class AblationUnavailable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
// The scan was cancelled through its progress callback.
class AblationCancelled : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Every part of the kind, in scan order (block by block, then index): heads of
// every layer; experts of every block with a mixture of experts (once per
// distinct module when the experts are shared: they are then switched off in
// every block at once, and listed under their first block); paths of every
// sublayer of a multi-path model (attention and FFN: 2n per block); the two
// sublayers of every block. AblationUnavailable naming the key when none.
std::vector<std::vector<Ablation>> ablationParts(const ModelConfig& config, AblationPart part, AblationMode mode,
                                                 std::int64_t* columns = nullptr);
std::string ablationLabel(const ModelConfig& config, const Ablation& ablation);

// Returns false to cancel.
using AblationProgress = std::function<bool(std::int64_t done, std::int64_t total, const std::string& current)>;

// Opens the run read-only (as `widelab-cli eval`), measures the baseline, then
// each part. ConfigError / DataError / CheckpointError as openRun; AblationCancelled.
AblationScanResult scanAblations(const std::filesystem::path& directory, const AblationScanOptions& options,
                                 const AblationProgress& progress = {},
                                 const std::vector<TrainingObserver*>& observers = {});

std::optional<AblationPart> ablationPartFromName(const std::string& name);  // "heads"/"head", ...
std::optional<AblationMode> ablationModeFromName(const std::string& name);  // "zero", "mean"

}  // namespace widelab
