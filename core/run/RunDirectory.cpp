#include "RunDirectory.h"

#include "task/ImageTask.h"
#include "data/Batch.h"
#include "data/PairInput.h"

#include "CheckpointDirectory.h"
#include "measure/Measurements.h"
#include "model/BatchDecoding.h"
#include "vocab/MetricsCodec.h"
#include "MetricsWriter.h"
#include "RunLayout.h"
#include "RunLock.h"
#include "vocab/JsonText.h"
#include "vocab/ByteText.h"
#include "runtime/SystemError.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

namespace widelab {
namespace {

// The bytes of one of the run's files; DataError naming the file and the reason.
std::string readRunFile(const std::filesystem::path& file)
{
    try {
        return readFileBytes(file);
    } catch (const FileError& error) {
        if (error.error() == ENOENT)
            throw DataError(file.string() + ": missing (is this a WideLab run directory?)");
        throw DataError(error.what());
    }
}

nlohmann::json readJson(const std::filesystem::path& file)
{
    const std::string text = readRunFile(file);
    try {
        return parseJsonText(text, file.string());
    } catch (const ConfigError& error) {
        throw DataError(error.what());
    }
}

}  // namespace

std::optional<std::filesystem::path> latestCheckpoint(const std::filesystem::path& directory)
{
    const std::vector<std::filesystem::path> files = CheckpointDirectory(directory, /*mayWrite=*/false).stepFiles();
    if (files.empty())
        return std::nullopt;
    return files.back();
}

RunDocument readRunDocument(const std::filesystem::path& directory)
{
    const std::filesystem::path configFile = runlayout::configFile(directory);
    if (!std::filesystem::exists(configFile))
        throw DataError(directory.string() + ": not a WideLab run directory (no " + std::string(runlayout::kConfig) + ")");
    return parseRunDocument(readRunFile(configFile), configFile.string(), /*requireDataFiles=*/false);
}

Tokenizer readRunTokenizer(const std::filesystem::path& directory)
{
    const std::filesystem::path file = runlayout::tokenizerFile(directory);
    const nlohmann::json json = readJson(file);
    try {
        return Tokenizer::fromJson(json);
    } catch (const DataError& error) {
        throw DataError(file.string() + ": " + error.what());
    }
}

std::vector<std::string> readRunLabels(const std::filesystem::path& directory)
{
    const std::filesystem::path file = runlayout::labelsFile(directory);
    if (!std::filesystem::exists(file))
        return {};
    const nlohmann::json json = readJson(file);
    if (!json.is_array())
        throw DataError(file.string() + ": expected an array of class names");
    std::vector<std::string> labels;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < json.size(); ++i) {
        if (!json[i].is_string() || json[i].get_ref<const std::string&>().empty())
            throw DataError(file.string() + ": class " + std::to_string(i) + " is not a non-empty string");
        labels.push_back(json[i].get<std::string>());
        if (!seen.insert(labels.back()).second)
            throw DataError(file.string() + ": class name \"" + labels.back() + "\" appears twice");
    }
    return labels;
}

std::vector<std::string> addProbeTexts(const std::filesystem::path& directory, const std::vector<std::string>& texts)
{
    RunDocument document = readRunDocument(directory);
    std::vector<std::string> probes = document.train.probes;
    for (const std::string& text : texts)
        if (std::find(probes.begin(), probes.end(), text) == probes.end())
            probes.push_back(text);
    if (probes != document.train.probes) {
        document.train.probes = probes;
        writeFileAtomically(runlayout::configFile(directory), document.toJson().dump(2) + "\n");
    }
    return probes;
}

bool keepProbe(const std::filesystem::path& directory, const ProbeResult& result)
{
    std::unique_ptr<RunLock> lock;
    try {
        lock = std::make_unique<RunLock>(directory);
    } catch (const RunInUse&) {
        return false;
    }
    addProbeTexts(directory, {result.text});
    appendMetricsLine(runlayout::metricsFile(directory), encodeMetricsLine(result));
    return true;
}

OpenedRun openRun(const std::filesystem::path& directory, const std::string& which)
{
    OpenedRun opened{readRunDocument(directory), readRunTokenizer(directory), {},
                     nullptr, {}, {}, {}, {}};
    opened.labels = readRunLabels(directory);
    if (opened.document.model.imageInput()) {
        const auto stats = readRunImageStats(directory, opened.document.model.channels);
        if (!stats)
            throw DataError(runlayout::imageStatsFile(directory).string() + ": missing; an image run keeps its "
                                                                              "normalisation there");
        opened.imageStats = *stats;
    }

    opened.model = WideTransformer(opened.document.model);
    CheckpointDirectory checkpoints(directory, /*mayWrite=*/false);
    LoadedCheckpoint loaded = checkpoints.load(which, *opened.model, nullptr,
                                               [&](const std::string& text) { opened.warnings.push_back(text); });
    opened.checkpoint = std::move(loaded.file);
    opened.state = loaded.state;
    opened.model->eval();
    return opened;
}

namespace {

// The logit lens keeps every entry of a distribution up to this many; past it
// (a language model's large vocabulary) the union of each stage's top kLensTop.
constexpr std::size_t kLensAllUpTo = 512;
constexpr std::int64_t kLensTop = 8;

// Runs one input ([1, T] ids or [1, C, H, W] pixels) through the model (evaluation
// mode, no gradient) and records attention maps, expert choices, the logit lens
// and the prediction; the caller fills text, tokens and image.
// A translation model's `target` is the decoder's input; its attention and
// routing are the encoder's, its cross-attention the decoder's, its prediction
// what follows the target.
ProbeResult inspectOne(WideTransformerImpl& model, const torch::Tensor& input, const std::vector<std::string>& labels,
                       const Tokenizer* tokenizer, const std::vector<Ablation>& ablations, const TargetInput& target = {})
{
    const ModelConfig& c = model.config();
    torch::NoGradGuard noGrad;
    const bool training = model.is_training();
    model.eval();
    const torch::Device device = model.parameters().front().device();
    ForwardTrace trace;
    trace.captureLens = true;
    trace.ablations = ablations;
    const ModelOutput output = model.inspect(input.to(device), {}, trace,
                                             {target.ids.defined() ? target.ids.to(device) : target.ids, {}});
    model.train(training);

    // One probe's maps [heads, queries, keys] as nested lists.
    auto mapsOf = [](const torch::Tensor& batch) {
        const torch::Tensor maps = batch[0].to(torch::kCPU, torch::kFloat32);
        std::vector<std::vector<std::vector<float>>> heads;
        for (std::int64_t h = 0; h < maps.size(0); ++h) {
            std::vector<std::vector<float>> rows;
            for (std::int64_t q = 0; q < maps.size(1); ++q)
                rows.push_back(toFloats(maps[h][q]));
            heads.push_back(std::move(rows));
        }
        return heads;
    };
    ProbeResult result;
    const std::size_t encoderBlocks = c.isTranslation() ? static_cast<std::size_t>(c.layers) : trace.blocks.size();
    for (std::size_t b = encoderBlocks; b < trace.blocks.size(); ++b)  // a translation model's decoder
        result.crossAttention.push_back(mapsOf(trace.blocks[b].crossAttention));
    for (std::size_t b = 0; b < encoderBlocks; ++b) {
        const BlockTrace& block = trace.blocks[b];
        result.attention.push_back(mapsOf(block.attention));
        if (block.expert.defined()) {
            const torch::Tensor chosen =
                torch::where(block.kept, block.expert, torch::full_like(block.expert, -1)).to(torch::kCPU).contiguous();
            std::vector<std::vector<std::int64_t>> tokens;
            for (std::int64_t s = 0; s < chosen.size(0); ++s)
                tokens.emplace_back(chosen[s].data_ptr<std::int64_t>(),
                                    chosen[s].data_ptr<std::int64_t>() + chosen.size(1));
            result.experts.push_back(std::move(tokens));
        }
    }
    // A token model's prediction is at its last position: the next token (language
    // and translation models) or the hidden one (a masked language model).
    const bool languageModel = c.predictsTokens();
    const torch::Tensor scores = languageModel ? output.logits[0][-1] : output.logits[0];
    result.prediction = toFloats(torch::softmax(scores.to(torch::kFloat32), -1));

    std::vector<torch::Tensor> stages;  // [V] probabilities after each sublayer
    for (const torch::Tensor& logits : trace.lens)
        stages.push_back(torch::softmax((languageModel ? logits[0][-1] : logits[0]).to(torch::kCPU, torch::kFloat32), -1));
    torch::Tensor columns;
    if (result.prediction.size() > kLensAllUpTo && !stages.empty()) {
        std::set<std::int64_t> kept;  // ascending
        for (const torch::Tensor& p : stages) {
            const torch::Tensor top = std::get<1>(p.topk(std::min<std::int64_t>(kLensTop, p.numel()))).contiguous();
            kept.insert(top.data_ptr<std::int64_t>(), top.data_ptr<std::int64_t>() + top.numel());
        }
        result.lensColumns.assign(kept.begin(), kept.end());
        columns = torch::tensor(result.lensColumns, torch::kLong);
    }
    // A translation model's lens reads its decoder: three sublayers a block, the
    // blocks numbered after the encoder's as the trace numbers them.
    static const std::vector<std::string> encoderSublayers = {"attention", "ffn"},
                                          decoderSublayers = {"attention", "cross_attention", "ffn"};
    const std::vector<std::string>& sublayers = c.isTranslation() ? decoderSublayers : encoderSublayers;
    const std::int64_t firstBlock = c.isTranslation() ? c.layers : 0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
        LensStage stage;
        stage.block = firstBlock + static_cast<std::int64_t>(i / sublayers.size());
        stage.sublayer = sublayers[i % sublayers.size()];
        stage.distribution = toFloats(columns.defined() ? stages[i].index_select(0, columns) : stages[i]);
        result.logitLens.push_back(std::move(stage));
    }
    for (std::int64_t id = 0; id < static_cast<std::int64_t>(result.prediction.size()); ++id) {
        if (languageModel)
            result.predictionLabels.push_back(tokenizer && id < tokenizer->vocabSize() ? tokenizer->tokenText(id) : "");
        else
            result.predictionLabels.push_back(id < static_cast<std::int64_t>(labels.size()) ? labels[static_cast<std::size_t>(id)]
                                                                                             : std::to_string(id));
    }
    return result;
}

}  // namespace

std::vector<std::int64_t> probeTokenIds(const Tokenizer& tokenizer, const ModelConfig& model, const std::string& text,
                                        std::int64_t maxLength, std::int64_t* cut)
{
    if (model.segments > 0) {
        const auto [first, second] = splitProbePair(text);
        if (maxLength < kShortestPair)
            throw DataError("a pair needs at least " + std::to_string(kShortestPair) + " tokens, the model reads "
                            + std::to_string(maxLength));
        const std::int64_t whole = static_cast<std::int64_t>(tokenizer.encode(first).size() + tokenizer.encode(second).size()) + 2;
        std::vector<std::int64_t> ids = encodePair(tokenizer, first, second, maxLength, separatorId(model.vocabSize));
        if (cut != nullptr)
            *cut = whole - static_cast<std::int64_t>(ids.size());
        return ids;
    }
    std::vector<std::int64_t> ids = tokenizer.encode(text);
    if (ids.empty())
        throw DataError("the text \"" + legibleBytes(text) + "\" has no token");
    const std::int64_t extra = std::max<std::int64_t>(0, static_cast<std::int64_t>(ids.size()) - maxLength);
    ids.resize(ids.size() - static_cast<std::size_t>(extra));
    if (cut != nullptr)
        *cut = extra;
    return ids;
}

std::string inputTokenText(const Tokenizer& tokenizer, const ModelConfig& model, std::int64_t id)
{
    if (model.head == HeadKind::MaskedLanguageModel && id == maskTokenId(tokenizer))
        return kMaskTokenText;
    if (model.segments > 0 && id == separatorId(model.vocabSize))
        return kSeparatorText;
    return id < tokenizer.vocabSize() ? tokenizer.tokenText(id) : "<" + std::to_string(id) + ">";
}

ProbeResult probeModel(WideTransformerImpl& model, const Tokenizer& tokenizer, const std::vector<std::string>& labels,
                       const std::string& text, std::int64_t maxLength, const std::vector<Ablation>& ablations)
{
    const ModelConfig& c = model.config();
    if (c.imageInput())
        throw DataError("the model reads images: probe it with validation:N or an image file");
    std::int64_t cut = 0;
    const std::vector<std::int64_t> ids = probeTokenIds(tokenizer, c, text, maxLength, &cut);
    // A masked language model is asked for the last token, hidden as in its
    // pretraining: the prediction is what it puts there.
    std::vector<std::int64_t> given = ids;
    if (c.head == HeadKind::MaskedLanguageModel)
        given.back() = maskTokenId(tokenizer);

    const torch::Tensor input = torch::tensor(given, torch::kLong).unsqueeze(0);
    ProbeResult result;
    if (c.isTranslation()) {
        if (!tokenizer.startId() || !tokenizer.endId())
            throw DataError("the run's " + toString(tokenizer.kind()) + " tokenizer has no start and end tokens to "
                            "translate with");
        DecodeOptions options = decodingFor(tokenizer);
        options.maxLength = c.maxLen - 1;  // and <s>: the decoder's input fits its positions
        const bool training = model.is_training();
        const std::vector<std::int64_t> translation = decodeAll(model, {ids}, options, 1).front();
        model.train(training);
        std::vector<std::int64_t> decoderInput{options.startId};
        decoderInput.insert(decoderInput.end(), translation.begin(), translation.end());
        result = inspectOne(model, input, labels, &tokenizer, ablations,
                            {torch::tensor(decoderInput, torch::kLong).unsqueeze(0), {}});
        result.translation = tokenizer.decode(translation);
        for (const std::int64_t id : decoderInput)
            result.targetTokens.push_back(tokenizer.tokenText(id));
    } else {
        result = inspectOne(model, input, labels, &tokenizer, ablations);
    }
    result.text = text;
    result.cutTokens = cut;
    if (c.usesClsToken())
        result.tokens.push_back("<cls>");
    for (const std::int64_t id : given)
        result.tokens.push_back(inputTokenText(tokenizer, c, id));
    return result;
}

ProbeResult probeImageModel(WideTransformerImpl& model, const std::vector<std::string>& labels, const Image& image,
                            const ImageStats& stats, const std::string& entry, const std::vector<Ablation>& ablations)
{
    const ModelConfig& c = model.config();
    if (!c.imageInput())
        throw DataError("the model reads tokens, not images");
    ProbeResult result = inspectOne(model, imageTensor(image, stats), labels, nullptr, ablations);
    result.text = entry;
    result.image.width = image.width;
    result.image.height = image.height;
    result.image.channels = image.channels;
    result.image.pixels = image.pixels;
    result.image.gridRows = result.image.gridCols = c.patchGrid();
    if (c.usesClsToken())
        result.tokens.push_back("CLS");
    for (std::int64_t r = 0; r < c.patchGrid(); ++r) {
        for (std::int64_t col = 0; col < c.patchGrid(); ++col) {
            char name[48];
            std::snprintf(name, sizeof name, "r%lldc%lld", static_cast<long long>(r), static_cast<long long>(col));
            result.tokens.emplace_back(name);
        }
    }
    return result;
}

}  // namespace widelab
