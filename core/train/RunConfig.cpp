#include "RunConfig.h"

#include "config/JsonSection.h"
#include "vocab/ByteText.h"
#include "vocab/KeyRules.h"
#include "data/FashionMnist.h"
#include "data/ListOps.h"
#include "data/PairInput.h"
#include "data/Tokenizer.h"
#include "runtime/SystemError.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

namespace widelab {
namespace {

// Ranges, choices and defaults live in the schema (config/ConfigSchema).
const std::vector<std::string>& choicesOf(const char* key) { return keySpec(key).choices; }

// ListOps is generated up front, about one byte per token: at most 4 GiB of it.
constexpr double kMaxListOpsTokens = 4294967296.0;

template <typename Enum>
const std::string& nameOf(const std::vector<std::string>& names, Enum value)
{
    return names.at(static_cast<std::size_t>(value));
}

TaskConfig readTask(JsonSection& s)
{
    auto spec = [](const char* name) -> const KeySpec& { return keySpec(std::string("task.") + name); };
    TaskConfig t;
    s.readChoice(spec("kind"), t.kind);
    s.read(spec("path"), t.path);
    s.read(spec("target_path"), t.targetPath);
    s.readChoice(spec("tokenizer"), t.tokenizer);
    s.read(spec("vocab_limit"), t.vocabLimit);
    s.read(spec("bpe_merges"), t.bpeMerges);
    s.read(spec("sequence_length"), t.sequenceLength);
    s.read(spec("validation_fraction"), t.validationFraction);
    s.read(spec("test_fraction"), t.testFraction);
    s.read(spec("min_length"), t.minLength);
    s.read(spec("max_length"), t.maxLength);
    s.read(spec("train_size"), t.trainSize);
    s.read(spec("validation_size"), t.validationSize);
    s.read(spec("test_size"), t.testSize);
    s.read(spec("seed"), t.seed);
    s.read(spec("crop_padding"), t.cropPadding);
    s.read(spec("flip"), t.flip);
    s.read(spec("mixup"), t.mixup);
    s.read(spec("crop_scale"), t.cropScale);
    s.read(spec("randaugment"), t.randAugment);
    s.read(spec("randaugment_magnitude"), t.randAugmentMagnitude);
    s.read(spec("max_subwords"), t.maxSubwords);
    s.read(spec("skip_bad_inputs"), t.skipBadInputs);
    s.rejectUnknownKeys();
    return t;
}

TrainConfig readTrain(JsonSection& s)
{
    auto spec = [](const char* name) -> const KeySpec& { return keySpec(std::string("train.") + name); };
    TrainConfig t;
    s.readChoice(spec("optimizer"), t.optimizer);
    s.read(spec("learning_rate"), t.learningRate);
    s.read(spec("weight_decay"), t.weightDecay);
    s.read(spec("beta1"), t.beta1);
    s.read(spec("beta2"), t.beta2);
    s.read(spec("epsilon"), t.epsilon);
    s.read(spec("momentum"), t.momentum);
    s.readChoice(spec("schedule"), t.schedule);
    s.readChoice(spec("select_best"), t.selectBest);
    s.read(spec("warmup_steps"), t.warmupSteps);
    s.read(spec("min_learning_rate_ratio"), t.minLearningRateRatio);
    s.read(spec("steps"), t.steps);
    s.read(spec("batch_size"), t.batchSize);
    s.read(spec("batch_tokens"), t.batchTokens);
    s.read(spec("gradient_clip"), t.gradientClip);
    s.read(spec("label_smoothing"), t.labelSmoothing);
    s.read(spec("device"), t.device);
    s.read(spec("bf16"), t.bf16);
    s.read(spec("cuda_graph"), t.cudaGraph);
    s.read(spec("threads"), t.threads);
    s.read(spec("seed"), t.seed);
    s.read(spec("log_every"), t.logEvery);
    s.read(spec("eval_every"), t.evalEvery);
    s.read(spec("eval_batches"), t.evalBatches);
    s.read(spec("bleu_sentences"), t.bleuSentences);
    s.read(spec("checkpoint_every"), t.checkpointEvery);
    s.read(spec("keep_last"), t.keepLast);
    s.read(spec("probe_every"), t.probeEvery);
    s.read(spec("alarm_expert_share"), t.alarmExpertShare);
    s.read(spec("collective_timeout_s"), t.collectiveTimeoutSeconds);
    s.read(spec("processes"), t.processes);
    s.read(spec("expert_parallel"), t.expertParallel);
    s.read(spec("init_from"), t.initFrom);
    s.readByteStrings("probes", t.probes);
    s.rejectUnknownKeys();
    return t;
}

void crossCheck(const RunDocument& run, std::vector<ConfigIssue>& issues, bool requireDataFiles)
{
    auto report = [&](const std::string& key, std::string reason) { issues.push_back({key, std::move(reason)}); };
    const TaskConfig& task = run.task;
    const ModelConfig& model = run.model;
    const std::string kind = "\"" + nameOf(choicesOf("task.kind"), task.kind) + "\"";

    if (task.isImageTask() != model.imageInput())
        report("model.input", kind + (task.isImageTask() ? " is an image task: it needs model.input \"image\""
                                                         : " is a text task: it needs model.input \"tokens\""));
    if (task.kind == TaskKind::Translation && !model.isTranslation())
        report("task.kind", kind + " needs model.head \"translation\" (an encoder and a decoder)");
    else if (task.kind != TaskKind::Translation && model.isTranslation())
        report("model.head", "\"translation\" trains on pairs of texts: it needs task.kind \"translation\"");
    else if (task.kind == TaskKind::LanguageModel && model.head != HeadKind::LanguageModel)
        report("task.kind", kind + " needs model.head \"language_model\"");
    else if (task.kind == TaskKind::MaskedLm && model.head != HeadKind::MaskedLanguageModel)
        report("task.kind", kind + " needs model.head \"masked_lm\"");
    else if (task.kind != TaskKind::LanguageModel && task.kind != TaskKind::MaskedLm && task.kind != TaskKind::Translation
             && model.head != HeadKind::Classification)
        report("task.kind", kind + " needs model.head \"classification\"");
    if (task.kind == TaskKind::PairClassification && model.segments == 0 && model.head == HeadKind::Classification)
        report("model.segments", "0, but " + kind + " reads two texts: 2 gives each its segment embedding");
    else if (task.kind != TaskKind::PairClassification && model.segments > 0 && !model.imageInput()
             && model.head == HeadKind::Classification)
        report("model.segments", std::to_string(model.segments) + ", but " + kind
                                     + " reads one text: segments are for task.kind \"pair_classification\"");
    if (task.kind == TaskKind::PairClassification && run.sequenceLength() < kShortestPair)
        report("task.sequence_length", "a pair needs at least " + std::to_string(kShortestPair)
                                           + " tokens (a token of each text and two separators), got "
                                           + std::to_string(run.sequenceLength()));
    if (task.kind == TaskKind::ListOps) {
        if (model.numClasses != 10)
            report("model.num_classes", "ListOps has 10 classes (the values 0-9), got " + std::to_string(model.numClasses));
        if (task.minLength > task.maxLength)
            report("task.min_length", std::to_string(task.minLength) + " exceeds task.max_length: "
                                          + std::to_string(task.maxLength));
        if (task.maxLength > run.sequenceLength())
            report("task.max_length", std::to_string(task.maxLength) + " exceeds the sequence length "
                                          + std::to_string(run.sequenceLength())
                                          + " (task.sequence_length or model.max_len); a truncated expression "
                                            "has no label");
        const std::int64_t vocabulary = listOpsTokenizer().vocabSize();
        if (model.vocabSize < vocabulary)
            report("model.vocab_size", std::to_string(model.vocabSize) + " is smaller than the ListOps vocabulary ("
                                           + std::to_string(vocabulary) + " tokens)");
        const double tokens = static_cast<double>(task.trainSize + task.validationSize + task.testSize)
                              * static_cast<double>(task.maxLength);
        if (tokens > kMaxListOpsTokens)
            report("task.train_size", "ListOps is generated up front: " + std::to_string(task.trainSize) + " + "
                                          + std::to_string(task.validationSize) + " + " + std::to_string(task.testSize)
                                          + " examples of up to " + std::to_string(task.maxLength)
                                          + " tokens exceed the 2^32 tokens WideLab generates; lower the sizes or "
                                            "task.max_length");
    } else if (task.isImageTask()) {
        if (task.kind != TaskKind::ImageFolder && model.numClasses != 10)
            report("model.num_classes", kind + " has 10 classes, got " + std::to_string(model.numClasses));
        if (task.kind == TaskKind::FashionMnist) {
            const std::filesystem::path folder = FashionMnist::folderOf(task.path);
            std::error_code error;
            if (requireDataFiles && !std::filesystem::is_directory(folder, error))
                report("task.path", task.path.empty() ? std::string("Fashion-MNIST is not installed (no ")
                                                            + FashionMnist::kDebianFolder + "): " + FashionMnist::installHint()
                                                      : "no such folder: " + task.path);
        } else if (task.kind != TaskKind::Shapes) {
            std::error_code error;
            if (task.path.empty())
                report("task.path", "missing: " + kind + " reads its images from a folder");
            else if (requireDataFiles && !std::filesystem::is_directory(task.path, error))
                report("task.path", "no such folder: " + task.path);
        }
        if (task.kind != TaskKind::Shapes && task.validationFraction <= 0.0)
            report("task.validation_fraction", "0 leaves the validation split empty, and training validates on it");
        if (task.cropPadding >= model.imageSize)
            report("task.crop_padding", std::to_string(task.cropPadding) + " is not below model.image_size ("
                                            + std::to_string(model.imageSize) + "): a crop could hold no pixel of the image");
    } else {
        if (task.path.empty()) {
            report("task.path", "missing: " + kind + " reads its data from a file");
        } else if (requireDataFiles) {
            std::error_code error;
            if (!std::filesystem::is_regular_file(task.path, error))
                report("task.path", "no such file: " + task.path
                                        + (task.kind == TaskKind::Translation
                                               ? " (widelab-cli corpus bible --from web --to sparv --out "
                                                 "web-sparv.tsv writes the Bible's English-Spanish pairs)"
                                               : ""));
            else if (!std::ifstream(task.path, std::ios::binary))
                report("task.path", "cannot be read: " + task.path);
        }
        if (task.tokenizer == TokenizerChoice::Byte) {
            const std::int64_t vocabulary = Tokenizer::bytes().vocabSize();
            if (model.vocabSize < vocabulary)
                report("model.vocab_size", std::to_string(model.vocabSize) + " is smaller than the byte tokenizer's "
                                               "vocabulary (" + std::to_string(vocabulary) + " tokens)");
        }
        if (task.tokenizer == TokenizerChoice::Bpe && model.vocabSize < bpe::kFirstMerge)
            report("model.vocab_size", std::to_string(model.vocabSize) + " is smaller than the bpe tokenizer's "
                                           + std::to_string(bpe::kFirstMerge) + " ids before its first merge");
        if (task.validationFraction <= 0.0)
            report("task.validation_fraction", "0 leaves the validation split empty, and training validates on it");
        if (task.kind == TaskKind::Translation) {
            if (task.tokenizer != TokenizerChoice::Bpe)
                report("task.tokenizer", "translation needs \"bpe\": its <s> and </s> start and end every target, "
                                         "and the paper's vocabulary is one joint byte-pair encoding");
            if (task.maxSubwords + 1 > model.maxLen)
                report("task.max_subwords", std::to_string(task.maxSubwords) + " subword units and the </s> (or <s>) "
                                                "of a target need model.max_len " + std::to_string(task.maxSubwords + 1)
                                                + ", which is " + std::to_string(model.maxLen));
            if (!task.targetPath.empty() && requireDataFiles) {
                std::error_code error;
                if (!std::filesystem::is_regular_file(task.targetPath, error))
                    report("task.target_path", "no such file: " + task.targetPath);
            }
        }
    }
    if (task.sequenceLength > model.maxLen && !task.isImageTask())
        report("task.sequence_length", std::to_string(task.sequenceLength) + " exceeds model.max_len: "
                                           + std::to_string(model.maxLen));
    if (task.validationFraction + task.testFraction >= 0.9)
        report("task.validation_fraction", "validation and test together leave almost nothing to train on");

    if (!isDeviceName(run.train.device))
        report("train.device", "\"" + run.train.device + "\" is not auto, cpu, cuda or cuda:N");
}

// Keys given without effect (vocab/KeyRules), and settings that make a run other
// than it reads: warnings, each naming its key. Runs on a document without
// problems. A key at its default (as in a resolved document such as a run's
// config.json) says nothing and is not reported as without effect.
void warnAbout(const RunDocument& run, const JsonSection& taskSection, const JsonSection& trainSection,
               std::vector<ConfigIssue>& warnings)
{
    const nlohmann::json resolved = run.toJson(), defaults = RunDocument().toJson();
    auto changed = [&](const JsonSection& section, const char* name, const std::string& key) {
        return section.has(key) && resolved.at(name).at(key) != defaults.at(name).at(key);
    };
    const KeyLookup value = sectionsLookup(resolved);
    auto unused = [&](const JsonSection& section, const char* name) {
        for (const UnusedKey& key : unusedKeys(name, value))
            if (changed(section, name, key.key.substr(std::string(name).size() + 1)))
                warnings.push_back({key.key, "has no effect " + key.reason});
    };
    auto warn = [&](const std::string& key, std::string reason) { warnings.push_back({key, std::move(reason)}); };
    const TaskConfig& task = run.task;
    const TrainConfig& train = run.train;

    unused(taskSection, "task");
    const bool counted = task.tokenizer == TokenizerChoice::Character || task.tokenizer == TokenizerChoice::Word;
    if (task.kind != TaskKind::ListOps && !task.isImageTask() && counted && task.vocabLimit > run.model.vocabSize)
        warn("task.vocab_limit", std::to_string(task.vocabLimit) + " exceeds model.vocab_size "
                                     + std::to_string(run.model.vocabSize)
                                     + ": training stops if the data has more distinct tokens than the model holds");
    if (task.kind != TaskKind::ListOps && !task.isImageTask() && task.tokenizer == TokenizerChoice::Bpe
        && bpe::kFirstMerge + task.bpeMerges > run.model.vocabSize)
        warn("task.bpe_merges", std::to_string(task.bpeMerges) + " merges make up to "
                                    + std::to_string(bpe::kFirstMerge + task.bpeMerges) + " ids, more than model.vocab_size "
                                    + std::to_string(run.model.vocabSize)
                                    + ": training stops if the data gives that many merges");

    if (train.schedule != ScheduleChoice::Constant && train.warmupSteps > train.steps)  // the default too
        warn("train.warmup_steps", std::to_string(train.warmupSteps) + " exceeds train.steps "
                                       + std::to_string(train.steps)
                                       + ": the run ends during warm-up, never reaching train.learning_rate");
    unused(trainSection, "train");
    for (const auto& [key, every, what] :
         {std::tuple{"eval_every", train.evalEvery, "validated"}, std::tuple{"log_every", train.logEvery, "logged"},
          std::tuple{"checkpoint_every", train.checkpointEvery, "checkpointed"}})
        if (changed(trainSection, "train", key) && every > train.steps)
            warn(trainSection.keyPath(key), std::to_string(every) + " exceeds train.steps " + std::to_string(train.steps)
                                               + ": the run is " + what + " only at its last step");
}

}  // namespace

std::string toString(TaskKind kind) { return nameOf(choicesOf("task.kind"), kind); }
std::string toString(OptimizerKind kind) { return nameOf(choicesOf("train.optimizer"), kind); }

nlohmann::json RunDocument::toJson() const
{
    nlohmann::json json;
    if (!name.empty())
        json["name"] = name;
    if (!description.empty())
        json["description"] = description;
    json["model"] = model.toJson();
    json["task"] = {
        {"kind", nameOf(choicesOf("task.kind"), task.kind)},
        {"path", task.path},
        {"target_path", task.targetPath},
        {"tokenizer", nameOf(choicesOf("task.tokenizer"), task.tokenizer)},
        {"vocab_limit", task.vocabLimit},
        {"bpe_merges", task.bpeMerges},
        {"sequence_length", task.sequenceLength},
        {"validation_fraction", task.validationFraction},
        {"test_fraction", task.testFraction},
        {"min_length", task.minLength},
        {"max_length", task.maxLength},
        {"train_size", task.trainSize},
        {"validation_size", task.validationSize},
        {"test_size", task.testSize},
        {"seed", task.seed},
        {"crop_padding", task.cropPadding},
        {"flip", task.flip},
        {"mixup", task.mixup},
        {"crop_scale", task.cropScale},
        {"randaugment", task.randAugment},
        {"randaugment_magnitude", task.randAugmentMagnitude},
        {"max_subwords", task.maxSubwords},
        {"skip_bad_inputs", task.skipBadInputs},
    };
    nlohmann::json probesJson = nlohmann::json::array();
    for (const std::string& probe : train.probes)
        probesJson.push_back(bytesToJson(probe));
    json["train"] = {
        {"optimizer", nameOf(choicesOf("train.optimizer"), train.optimizer)},
        {"learning_rate", train.learningRate},
        {"weight_decay", train.weightDecay},
        {"beta1", train.beta1},
        {"beta2", train.beta2},
        {"epsilon", train.epsilon},
        {"momentum", train.momentum},
        {"schedule", nameOf(choicesOf("train.schedule"), train.schedule)},
        {"select_best", nameOf(choicesOf("train.select_best"), train.selectBest)},
        {"warmup_steps", train.warmupSteps},
        {"min_learning_rate_ratio", train.minLearningRateRatio},
        {"steps", train.steps},
        {"batch_size", train.batchSize},
        {"batch_tokens", train.batchTokens},
        {"gradient_clip", train.gradientClip},
        {"label_smoothing", train.labelSmoothing},
        {"device", train.device},
        {"bf16", train.bf16},
        {"cuda_graph", train.cudaGraph},
        {"threads", train.threads},
        {"seed", train.seed},
        {"log_every", train.logEvery},
        {"eval_every", train.evalEvery},
        {"eval_batches", train.evalBatches},
        {"bleu_sentences", train.bleuSentences},
        {"checkpoint_every", train.checkpointEvery},
        {"keep_last", train.keepLast},
        {"probe_every", train.probeEvery},
        {"alarm_expert_share", train.alarmExpertShare},
        {"collective_timeout_s", train.collectiveTimeoutSeconds},
        {"processes", train.processes},
        {"expert_parallel", train.expertParallel},
        {"init_from", train.initFrom},
        {"probes", probesJson},
    };
    return json;
}

RunDocument RunDocument::withAbsolutePaths() const
{
    RunDocument out = *this;
    auto absolute = [](const std::string& path) {
        return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string();
    };
    out.task.path = absolute(task.path);
    out.task.targetPath = absolute(task.targetPath);
    if (!train.initFrom.empty()) {
        InitFromSpec from = parseInitFrom(train.initFrom);
        from.directory = absolute(from.directory.string());
        out.train.initFrom = from.text();
    }
    return out;
}

InitFromSpec parseInitFrom(const std::string& text)
{
    InitFromSpec spec;
    spec.directory = text;
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
        return spec;
    const std::string which = text.substr(colon + 1);
    const bool number = !which.empty() && which.size() <= 12
                        && std::all_of(which.begin(), which.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (number || which == "best" || which == "latest") {
        spec.directory = text.substr(0, colon);
        spec.checkpoint = number ? std::to_string(std::stoll(which)) : which;
    }
    return spec;
}

std::string InitFromSpec::text() const
{
    return checkpoint == "latest" ? directory.string() : directory.string() + ":" + checkpoint;
}

RunDocument parseRunDocument(const std::string& text, const std::string& origin, bool requireDataFiles)
{
    const nlohmann::json document = parseJsonText(text, origin);
    std::vector<ConfigIssue> issues;
    const ModelDocument modelDocument = readModelDocument(document, issues, {"task", "train"});

    RunDocument run;
    run.name = modelDocument.name;
    run.description = modelDocument.description;
    run.model = modelDocument.model;
    const nlohmann::json empty = nlohmann::json::object();
    const bool isObject = document.is_object();
    JsonSection task(isObject && document.contains("task") ? document.at("task") : empty, "task", issues);
    run.task = readTask(task);
    JsonSection train(isObject && document.contains("train") ? document.at("train") : empty, "train", issues);
    run.train = readTrain(train);
    // Cross-section checks compare values that must have read cleanly.
    if (issues.empty())
        crossCheck(run, issues, requireDataFiles);
    throwIfAny(std::move(issues), origin);
    run.warnings = modelDocument.warnings;
    warnAbout(run, task, train, run.warnings);
    return run;
}

nlohmann::json resolveRunDocument(const nlohmann::json& document)
{
    std::vector<ConfigIssue> ignored;
    const ModelDocument model = readModelDocument(document, ignored, {"task", "train"});
    RunDocument run;
    run.model = model.model;
    const nlohmann::json empty = nlohmann::json::object();
    auto section = [&](const char* name) -> const nlohmann::json& {
        return document.is_object() && document.contains(name) ? document.at(name) : empty;
    };
    JsonSection task(section("task"), "task", ignored);
    run.task = readTask(task);
    JsonSection train(section("train"), "train", ignored);
    run.train = readTrain(train);
    nlohmann::json resolved = run.toJson();
    resolved["name"] = model.name;
    resolved["description"] = model.description;
    return resolved;
}

bool isDeviceName(const std::string& name)
{
    static const std::regex device(R"(auto|cpu|cuda(:[0-9]{1,3})?)");
    return std::regex_match(name, device);
}

RunDocument loadRunDocument(const std::filesystem::path& file)
{
    std::string text;
    try {
        text = readFileBytes(file);
    } catch (const FileError& error) {
        throw ConfigError({{"", std::string(error.what())}});
    }
    return parseRunDocument(text, file.string());
}

std::vector<std::string> differingKeys(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix)
{
    std::vector<std::string> keys;
    if (!a.is_object() || !b.is_object()) {
        if (a != b)
            keys.push_back(prefix);
        return keys;
    }
    std::set<std::string> names;
    for (const auto& item : a.items())
        names.insert(item.key());
    for (const auto& item : b.items())
        names.insert(item.key());
    for (const std::string& name : names) {
        const std::string key = prefix.empty() ? name : prefix + "." + name;
        if (!a.contains(name) || !b.contains(name)) {
            keys.push_back(key);
            continue;
        }
        const auto nested = differingKeys(a.at(name), b.at(name), key);
        keys.insert(keys.end(), nested.begin(), nested.end());
    }
    return keys;
}

const nlohmann::json* valueAtKey(const nlohmann::json& object, const std::string& dottedKey)
{
    const nlohmann::json* at = &object;
    std::size_t from = 0;
    while (true) {
        const std::size_t dot = dottedKey.find('.', from);
        const std::string part = dottedKey.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
        if (!at->is_object() || !at->contains(part))
            return nullptr;
        at = &at->at(part);
        if (dot == std::string::npos)
            return at;
        from = dot + 1;
    }
}

std::vector<ConfigDifference> configurationDiff(const nlohmann::json& a, const nlohmann::json& b)
{
    const nlohmann::json resolvedA = resolveRunDocument(a), resolvedB = resolveRunDocument(b);
    std::vector<ConfigDifference> differences;
    for (const std::string& key : differingKeys(resolvedA, resolvedB)) {
        const nlohmann::json* valueA = valueAtKey(resolvedA, key);
        const nlohmann::json* valueB = valueAtKey(resolvedB, key);
        differences.push_back({key, valueA ? valueA->dump() : std::string(), valueB ? valueB->dump() : std::string()});
    }
    return differences;
}

}  // namespace widelab
