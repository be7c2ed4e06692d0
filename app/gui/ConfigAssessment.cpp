// Torch first: Qt's `slots` macro would break its headers.
#include "train/Trainer.h"

#include "ConfigAssessment.h"

#include "config/ConfigSchema.h"
#include "vocab/ConfigError.h"
#include "model/ParameterCount.h"
#include "runtime/Runtime.h"
#include "train/MemoryEstimate.h"
#include "train/RunConfig.h"

#include <QJsonDocument>

#include <algorithm>

namespace widelab {
namespace {

ArchitectureSketch sketchOf(const ModelConfig& m)
{
    ArchitectureSketch sketch;
    sketch.layers = static_cast<int>(m.layers);
    sketch.shareAttention = m.shareAttention;
    sketch.shareFfn = m.shareFfn;
    sketch.shareLayerNorm = m.shareLayerNorm;
    sketch.experts = static_cast<int>(m.experts);
    sketch.topK = static_cast<int>(m.topK);
    sketch.paths = static_cast<int>(m.paths);
    sketch.pathNorm = m.pathNorm;
    sketch.learnablePathWeights = m.learnablePathWeights;
    sketch.heads = static_cast<int>(m.heads);
    sketch.headKind = QString::fromStdString(keySpec("model.head").choices.at(static_cast<std::size_t>(m.head)));
    sketch.decoderLayers = m.isTranslation() ? static_cast<int>(m.decoderLayers) : 0;
    sketch.decoderPaths = m.isTranslation() ? static_cast<int>(m.decoderSide().paths) : 1;
    sketch.imageInput = m.imageInput();
    return sketch;
}

}  // namespace

ConfigAssessment assessDocument(const QJsonObject& document)
{
    ConfigAssessment result;
    const std::string text = QJsonDocument(document).toJson(QJsonDocument::Compact).toStdString();
    try {
        const RunDocument run = parseRunDocument(text, "the configuration");
        const ModelCost cost = modelCost(run.model);
        result.valid = true;
        result.complete = QJsonDocument::fromJson(QByteArray::fromStdString(run.toJson().dump())).object();
        result.name = QString::fromStdString(run.name);
        result.cost.stored = cost.total.stored;
        result.cost.active = cost.total.active;
        result.cost.applied = cost.total.applied;
        result.cost.flopsPerToken = cost.flopsPerToken;
        result.cost.inferenceFlopsPerToken = cost.inferenceFlopsPerToken;
        for (const CostRow& row : cost.parts)
            result.cost.parts.append(
                {QString::fromStdString(row.part), row.stored, row.active, row.applied, row.flopsPerToken});
        // The device the trainer would take (a device not present is an issue, as for train).
        const bool gpu = trainingDevice(run.train.device).is_cuda();
        result.cost.memoryBytes = estimateTrainingMemory(run, cost.total.stored, gpu).totalBytes();
        result.sketch = sketchOf(run.model);
    } catch (const ConfigError& error) {
        // The core heads its list with "the configuration: invalid configuration";
        // the panel shows each issue at its field, so only keyed issues are kept
        // when there are any.
        const auto& issues = error.issues();
        const bool anyKeyed = std::any_of(issues.begin(), issues.end(), [](const ConfigIssue& i) { return !i.key.empty(); });
        for (const ConfigIssue& issue : issues)
            if (!anyKeyed || !issue.key.empty())
                result.issues.append({QString::fromStdString(issue.key), QString::fromStdString(issue.reason)});
    } catch (const std::exception& error) {
        result.issues.append({QString(), QString::fromStdString(error.what())});
    }
    return result;
}

QList<DeviceChoice> deviceChoices()
{
    QList<DeviceChoice> choices{{QStringLiteral("auto"), QStringLiteral("Automatic (a GPU when there is one)")}};
    for (const DeviceInfo& device : availableDevices())
        choices.append({QString::fromStdString(device.id), QString::fromStdString(device.label)});
    return choices;
}

}  // namespace widelab
