// defines: TaskConfig, TrainConfig and RunDocument: the `task` and `train` sections
// that join `model` in a run's JSON document, with their reading and checks
#pragma once

#include "vocab/ConfigError.h"
#include "config/ModelConfig.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

enum class TaskKind { ListOps, Classification, LanguageModel, ImageFolder, Cifar10, Shapes, Translation, FashionMnist,
                      MaskedLm, PairClassification };
enum class TokenizerChoice { Byte, Character, Word, Bpe };
enum class OptimizerKind { AdamW, Lamb, Sgd };
enum class ScheduleChoice { Constant, WarmupCosine, InverseSqrt, WarmupRsqrt, WarmupLinear };
// Which validation makes checkpoints/best.pt: the lowest loss, or the highest accuracy.
enum class SelectBest { Loss, Accuracy };

struct TaskConfig {
    TaskKind kind = TaskKind::ListOps;
    std::string path;                         // classification, language-model or translation file
    std::string targetPath;                   // translation: the target lines (then `path` holds the sources)
    TokenizerChoice tokenizer = TokenizerChoice::Byte;
    std::int64_t vocabLimit = 8000;           // character / word vocabularies
    std::int64_t bpeMerges = 8000;            // bpe: merges learned (vocabulary 260 + merges)
    std::int64_t sequenceLength = 0;          // 0: model.max_len
    double validationFraction = 0.05;         // files
    double testFraction = 0.05;
    // ListOps (Long Range Arena rules); short sequences so that a laptop learns in minutes.
    std::int64_t minLength = 16;
    std::int64_t maxLength = 128;
    std::int64_t trainSize = 20000;
    std::int64_t validationSize = 1000;
    std::int64_t testSize = 1000;
    std::int64_t seed = 0;
    // Images (image_folder, cifar10, shapes, fashion_mnist): augmentation while training.
    std::int64_t cropPadding = 4;             // 0: no random crop
    bool flip = true;
    double mixup = 0.0;                       // Mixup's alpha; 0: off (data/Batch.h: ImageAugmentation)
    double cropScale = 0.0;                   // Inception-style crop's least share of the area; 0: off
    std::int64_t randAugment = 0;             // RandAugment's operations per picture; 0: off
    std::int64_t randAugmentMagnitude = 9;    // their magnitude, 0..30 (data/RandAugment.h)
    // Translation: pairs with a side longer than this many subword units are left out (the Multi-Path paper's 250).
    std::int64_t maxSubwords = 250;
    // Image folders and translation pairs: inputs that cannot be read (an image that does not decode, a pair
    // without a tab or with an empty side) are left out, counted, rather than refused.
    bool skipBadInputs = false;

    bool isImageTask() const
    {
        return kind == TaskKind::ImageFolder || kind == TaskKind::Cifar10 || kind == TaskKind::Shapes
               || kind == TaskKind::FashionMnist;
    }
};

struct TrainConfig {
    OptimizerKind optimizer = OptimizerKind::AdamW;
    double learningRate = 1e-3;               // peak, after warmup
    double weightDecay = 0.01;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double epsilon = 1e-8;
    double momentum = 0.9;                    // SGD
    ScheduleChoice schedule = ScheduleChoice::WarmupCosine;
    std::int64_t warmupSteps = 100;
    double minLearningRateRatio = 0.0;
    std::int64_t steps = 2000;
    std::int64_t batchSize = 32;
    // > 0: a training batch takes examples until the next would pass this many tokens (a translation pair counts
    // its longer side), instead of batchSize examples; evaluation still takes batchSize at a time.
    std::int64_t batchTokens = 0;
    double gradientClip = 1.0;                // <= 0: off
    double labelSmoothing = 0.0;
    std::string device = "auto";              // auto, cpu, cuda, cuda:N
    bool bf16 = true;                         // autocast on CUDA
    // CUDA: each step captured once per batch shape and replayed (TrainerGraphs.h);
    // the trainer falls back to ordinary steps, saying why, where it cannot.
    bool cudaGraph = false;
    std::int64_t threads = 0;                 // 0: every core
    std::int64_t seed = 0;
    std::int64_t logEvery = 10;               // snapshots and metrics.jsonl lines
    std::int64_t evalEvery = 200;
    std::int64_t evalBatches = 20;            // 0: the whole validation split
    SelectBest selectBest = SelectBest::Loss;
    std::int64_t bleuSentences = 200;         // translation: validation sentences decoded for BLEU; 0: none
    std::int64_t checkpointEvery = 200;
    std::int64_t keepLast = 3;
    std::int64_t probeEvery = 0;              // 0: with every validation
    std::int64_t collectiveTimeoutSeconds = 60;  // distributed runs: the longest wait for another rank
    std::int64_t processes = 1;               // widelab-cli train starts this many (--nproc overrides)
    bool expertParallel = false;              // distributed runs: the experts split over the processes
    double alarmExpertShare = 0.6;            // a block's expert above this share of its tokens: collapse
    // Another run's weights to start from (fine-tuning): "RUN_DIR" or "RUN_DIR:STEP"
    // (train/InitFrom.h); empty: the seed's initialisation.
    std::string initFrom;
    std::vector<std::string> probes;          // texts inspected during training (empty: a validation example);
                                              // image tasks: "validation:N" or the path of an image file
};

// A run: the model with its task and training. Missing sections take defaults.
struct RunDocument {
    std::string name;
    std::string description;
    ModelConfig model;
    TaskConfig task;
    TrainConfig train;

    // Accepted, but probably not what was meant (options without effect, a run
    // that ends during warm-up, ...): each names its key. Not part of the document.
    std::vector<ConfigIssue> warnings;

    nlohmann::json toJson() const;
    // The document with its data files and train.init_from's run made absolute
    // (relative to the working directory), as a run records and compares them.
    RunDocument withAbsolutePaths() const;
    // Tokens per example without a CLS token; image models: their patches.
    std::int64_t sequenceLength() const
    {
        return task.sequenceLength > 0 && !model.imageInput() ? task.sequenceLength : model.maxLen;
    }
};

// Parses and validates everything a run needs from the document alone (model,
// task, train and how they fit together: what `check` and `train` both rely
// on); throws ConfigError listing every problem, and fills `warnings`.
// `requireDataFiles` false skips the check that task.path is a readable file
// (reading a finished run back needs its model, not its data).
RunDocument parseRunDocument(const std::string& text, const std::string& origin = "", bool requireDataFiles = true);
RunDocument loadRunDocument(const std::filesystem::path& file);

// The document with every key of the schema given its value: each key that
// reads cleanly as given, every other key its default, derived defaults computed
// from the keys they follow (model.head_dim = d_model / heads, ...). Never throws
// and reports nothing: for showing what a document, even one with problems,
// amounts to (parseRunDocument is the check). Name and description are always written.
nlohmann::json resolveRunDocument(const nlohmann::json& document);

// The dotted keys ("train.steps") whose values differ between two JSON objects,
// descending into objects; a key present in only one of them differs.
std::vector<std::string> differingKeys(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix = "");

// The value at a dotted key ("model.heads") of a JSON object; null when a part
// of the path is missing (or not an object).
const nlohmann::json* valueAtKey(const nlohmann::json& object, const std::string& dottedKey);

// One key whose value differs between two run documents: each side's value as
// compact JSON text, empty when that side lacks the key.
struct ConfigDifference {
    std::string key;
    std::string a;
    std::string b;
};
// How two run documents differ once each is resolved (resolveRunDocument: the
// defaults written out and the derived keys computed), so that a default on one
// side and the same value written on the other do not differ, and a changed
// width shows its derived head_dim too. Keys in dotted order, as differingKeys.
std::vector<ConfigDifference> configurationDiff(const nlohmann::json& a, const nlohmann::json& b);

// Whether `name` is a device a run may name: auto, cpu, cuda or cuda:N (N up to
// three digits). Whether that device exists is the trainer's to find out.
bool isDeviceName(const std::string& name);

std::string toString(TaskKind kind);
std::string toString(OptimizerKind kind);

// train.init_from read apart: the run folder and which of its checkpoints,
// "latest", "best" or a step's number. "RUN:STEP" is split at its last colon
// when what follows is a number, best or latest; any other text is the folder.
struct InitFromSpec {
    std::filesystem::path directory;
    std::string checkpoint = "latest";
    std::string text() const;  // back to "RUN" or "RUN:WHICH"
};
InitFromSpec parseInitFrom(const std::string& text);

}  // namespace widelab
