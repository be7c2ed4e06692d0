#include "AblationScan.h"

#include "task/ImageTask.h"
#include "run/RunDirectory.h"
#include "train/Trainer.h"

namespace widelab {

std::optional<AblationPart> ablationPartFromName(const std::string& name)
{
    if (name == "heads" || name == "head")
        return AblationPart::Head;
    if (name == "experts" || name == "expert")
        return AblationPart::Expert;
    if (name == "paths" || name == "path")
        return AblationPart::Path;
    if (name == "sublayers" || name == "sublayer")
        return AblationPart::Sublayer;
    return std::nullopt;
}

std::optional<AblationMode> ablationModeFromName(const std::string& name)
{
    if (name == "zero")
        return AblationMode::Zero;
    if (name == "mean")
        return AblationMode::Mean;
    return std::nullopt;
}

std::vector<std::vector<Ablation>> ablationParts(const ModelConfig& c, AblationPart part, AblationMode mode,
                                                 std::int64_t* columns)
{
    std::vector<std::vector<Ablation>> parts;
    auto one = [&](std::int64_t block, std::int64_t index) { return Ablation{part, mode, block, index}; };
    std::int64_t width = 0;
    switch (part) {
    case AblationPart::Head:
        width = c.heads * c.paths;
        for (std::int64_t b = 0; b < c.layers; ++b)
            for (std::int64_t h = 0; h < width; ++h)
                parts.push_back({one(b, h)});
        break;
    case AblationPart::Expert:
        if (!c.isMoe())
            throw AblationUnavailable("the model has no experts (model.experts is 1)");
        width = c.experts;
        for (std::int64_t e = 0; e < c.experts; ++e) {
            if (c.shareFfn) {
                // One set of experts for every block: switched off everywhere at once.
                std::vector<Ablation> everywhere;
                for (std::int64_t b = 0; b < c.layers; ++b)
                    everywhere.push_back(one(b, e));
                parts.push_back(std::move(everywhere));
            }
        }
        if (!c.shareFfn)
            for (std::int64_t b = 0; b < c.layers; ++b)
                for (std::int64_t e = 0; e < c.experts; ++e)
                    parts.push_back({one(b, e)});
        break;
    case AblationPart::Path:
        if (!c.isMultiPath())
            throw AblationUnavailable("the model has one path per sublayer (model.paths is 1)");
        // Columns: the attention's paths, then the FFN's (Ablation.h).
        width = 2 * c.paths;
        for (std::int64_t b = 0; b < c.layers; ++b)
            for (std::int64_t p = 0; p < width; ++p)
                parts.push_back({one(b, p)});
        break;
    case AblationPart::Sublayer:
        width = 2;
        for (std::int64_t b = 0; b < c.layers; ++b)
            for (std::int64_t s = 0; s < 2; ++s)
                parts.push_back({one(b, s)});
        break;
    }
    if (columns)
        *columns = width;
    return parts;
}

std::string ablationLabel(const ModelConfig& c, const Ablation& a)
{
    const std::string block = std::to_string(a.block + 1);
    switch (a.part) {
    case AblationPart::Head:
        return "layer " + block + " head " + std::to_string(a.index + 1);
    case AblationPart::Expert:
        return (c.shareFfn ? std::string("every block") : "block " + block) + " expert " + std::to_string(a.index + 1);
    case AblationPart::Path: {
        const bool ffn = a.index >= c.paths;
        return "block " + block + " path " + std::to_string(a.index % c.paths + 1) + (ffn ? " (ffn)" : " (attention)");
    }
    case AblationPart::Sublayer:
        return "block " + block + (a.index == 0 ? " attention" : " ffn");
    }
    return block;
}


AblationScanResult scanAblations(const std::filesystem::path& directory, const AblationScanOptions& options,
                                 const AblationProgress& progress, const std::vector<TrainingObserver*>& observers)
{
    OpenedRun opened = openRun(directory, options.checkpoint);
    const ModelConfig& c = opened.document.model;
    AblationScanResult result;
    result.part = options.part;
    result.mode = options.mode;
    const std::vector<std::vector<Ablation>> parts = ablationParts(c, options.part, options.mode, &result.columns);
    result.layers = options.part == AblationPart::Expert && c.shareFfn ? 1 : c.layers;

    TrainerOptions trainerOptions;
    trainerOptions.observers = observers;
    trainerOptions.resume = true;
    trainerOptions.readOnly = true;
    trainerOptions.checkpoint = options.checkpoint;
    trainerOptions.device = options.device;
    trainerOptions.threads = options.threads;
    Trainer trainer(opened.document, directory, trainerOptions);
    result.step = trainer.step();
    result.checkpoint = opened.checkpoint.filename().string();
    const std::int64_t batches = options.batches > 0 ? options.batches : opened.document.train.evalBatches;

    // The probe: the one asked for, else the run's first.
    result.probeText = !options.probe.empty()                    ? options.probe
                       : !opened.document.train.probes.empty() ? opened.document.train.probes.front()
                                                               : std::string();
    std::unique_ptr<ImageTask> images;
    Image probeImageData;
    auto probe = [&](const std::vector<Ablation>& ablations) -> std::vector<float> {
        if (result.probeText.empty())
            return {};
        ProbeResult r;
        if (c.imageInput()) {
            r = probeImageModel(*trainer.model(), opened.labels, probeImageData, opened.imageStats, result.probeText,
                                ablations);
        } else {
            r = probeModel(*trainer.model(), opened.tokenizer, opened.labels, result.probeText,
                           opened.document.sequenceLength(), ablations);
        }
        if (result.predictionLabels.empty())
            result.predictionLabels = r.predictionLabels;
        return r.prediction;
    };
    if (c.imageInput() && !result.probeText.empty()) {
        if (result.probeText.rfind("validation:", 0) == 0)
            images = std::make_unique<ImageTask>(prepareImageTask(opened.document, opened.labels, &opened.imageStats));
        std::int64_t label = -1;
        probeImageData = probeImage(result.probeText, images ? images->validation.get() : nullptr, imageFormat(c), label);
    }

    const auto total = static_cast<std::int64_t>(parts.size()) + 1;
    if (progress && !progress(0, total, "baseline"))
        throw AblationCancelled("the ablation scan was cancelled");
    result.baseline = trainer.evaluateAblated(Split::Validation, batches, {});
    result.baselinePrediction = probe({});
    for (std::size_t i = 0; i < parts.size(); ++i) {
        AblatedPart row;
        row.ablation = parts[i].front();
        row.label = ablationLabel(c, row.ablation);
        if (progress && !progress(static_cast<std::int64_t>(i) + 1, total, row.label))
            throw AblationCancelled("the ablation scan was cancelled");
        const std::vector<Ablation>& switched = parts[i];
        const EvaluationResult r = trainer.evaluateAblated(Split::Validation, batches, switched);
        row.loss = r.loss;
        row.lossDelta = r.loss - result.baseline.loss;
        row.accuracy = r.accuracy;
        row.accuracyDelta = r.accuracy - result.baseline.accuracy;
        row.probePrediction = probe(switched);
        result.rows.push_back(std::move(row));
    }
    if (progress)
        progress(total, total, "");
    return result;
}

}  // namespace widelab
