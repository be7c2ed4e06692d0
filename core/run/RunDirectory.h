// defines: OpenedRun, openRun, latestCheckpoint, probeModel, probeImageModel: reading a finished or
// running run back from its directory, and inspecting its model on a text
#pragma once

#include "Checkpoint.h"
#include "train/RunConfig.h"
#include "vocab/Snapshot.h"
#include "data/Images.h"
#include "data/Tokenizer.h"
#include "model/WideTransformer.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace widelab {

struct OpenedRun {
    RunDocument document;
    Tokenizer tokenizer;
    std::vector<std::string> labels;  // class names (classification)
    WideTransformer model{nullptr};   // weights of `checkpoint`, in evaluation mode, on the CPU
    CheckpointState state;
    std::filesystem::path checkpoint;  // the file loaded: for "latest", the newest one that could be
    std::vector<std::string> warnings;  // newer checkpoints passed over, an unverified (format-1) file
    ImageStats imageStats;              // image runs: the normalisation (RUN_DIR/image.json)
};

// The run's own document, RUN_DIR/config.json (its data files need not exist).
RunDocument readRunDocument(const std::filesystem::path& directory);

// The newest step-*.pt in directory/checkpoints by name, if any, whether or not it
// can be read (openRun's "latest" is the newest that can).
std::optional<std::filesystem::path> latestCheckpoint(const std::filesystem::path& directory);

// The run's tokenizer, RUN_DIR/tokenizer.json; DataError naming the file when it
// is missing or malformed.
Tokenizer readRunTokenizer(const std::filesystem::path& directory);

// The run's classes, RUN_DIR/labels.json: written when the run starts, the
// mapping from labels to classes for the life of the run. Empty when the file
// is absent (a run from before it was written); DataError naming the file when
// it is not an array of distinct, non-empty strings.
std::vector<std::string> readRunLabels(const std::filesystem::path& directory);

// Reads config.json, tokenizer.json, labels.json and a checkpoint ("latest",
// "best", or a file name in checkpoints/). "latest" falls back past step files
// that cannot be read, saying so in `warnings` (see CheckpointDirectory::load);
// the run directory is not changed. Throws ConfigError, DataError or
// CheckpointError naming the missing or broken piece.
OpenedRun openRun(const std::filesystem::path& directory, const std::string& which = "latest");

// Adds the texts not yet among the run's probes (config.json's train.probes),
// in order, rewriting config.json only when one is new; returns the run's
// probes. The caller holds the run (a trainer, or keepProbe below).
std::vector<std::string> addProbeTexts(const std::filesystem::path& directory, const std::vector<std::string>& texts);

// Keeps a probe of a run that is not training: its text joins the run's probes
// (config.json's train.probes) and the result is appended to metrics.jsonl, as
// a trainer does with its own probes. false, changing nothing, while a trainer
// holds the run (that trainer keeps the probes it is asked for itself).
bool keepProbe(const std::filesystem::path& directory, const ProbeResult& result);

// The ids of `text` as a probe gives them to `model`: the first `maxLength`
// tokens, or for a model of text pairs (model.segments > 0) the two texts
// splitProbePair finds, read as a pair is (data/PairInput.h); `cut` (optional)
// receives how many more tokens the text had. DataError for a text without a
// token, or a pair whose length is too short for one.
std::vector<std::int64_t> probeTokenIds(const Tokenizer& tokenizer, const ModelConfig& model, const std::string& text,
                                        std::int64_t maxLength, std::int64_t* cut = nullptr);

// What an id the model reads is shown as: the tokenizer's text, "<mask>" for a
// masked LM's mask token and "<sep>" for a pair's separator (ids past the
// tokenizer's).
std::string inputTokenText(const Tokenizer& tokenizer, const ModelConfig& model, std::int64_t id);

// Runs `text` through the model (evaluation mode, no gradient) and records
// attention maps, expert choices, the logit lens and the prediction, with
// `ablations` switched off (model/Ablation.h). A text longer than `maxLength`
// tokens is cut there, and the result says how many tokens went (cutTokens).
// DataError for an image model.
ProbeResult probeModel(WideTransformerImpl& model, const Tokenizer& tokenizer, const std::vector<std::string>& labels,
                       const std::string& text, std::int64_t maxLength, const std::vector<Ablation>& ablations = {});
// The same for an image model: `image` as the model sees it before normalisation
// (model.image_size, model.channels), normalised with `stats`; `entry` becomes the
// result's text ("validation:N" or the file). Tokens: "CLS" when used, then the
// patches row by row ("r0c0", "r0c1", ...); the result carries the image.
ProbeResult probeImageModel(WideTransformerImpl& model, const std::vector<std::string>& labels, const Image& image,
                            const ImageStats& stats, const std::string& entry, const std::vector<Ablation>& ablations = {});

}  // namespace widelab
