#include "ConfigAssessment.h"

#include "config/ConfigError.h"
#include "model/ParameterCount.h"
#include "runtime/Runtime.h"
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
    sketch.headKind = m.head == HeadKind::LanguageModel ? QStringLiteral("language_model")
                                                        : QStringLiteral("classification");
    return sketch;
}

}  // namespace

qint64 estimateTrainingMemory(const QJsonObject& document, qint64 storedParameters)
{
    const QJsonObject model = document.value(QStringLiteral("model")).toObject();
    const QJsonObject task = document.value(QStringLiteral("task")).toObject();
    const QJsonObject train = document.value(QStringLiteral("train")).toObject();
    auto number = [](const QJsonObject& o, const char* key) { return o.value(QLatin1String(key)).toDouble(); };
    const double batch = number(train, "batch_size");
    const double sequence = number(task, "sequence_length") > 0 ? number(task, "sequence_length") : number(model, "max_len");
    const double d = number(model, "d_model"), heads = number(model, "heads"), attention = heads * number(model, "head_dim");
    const double ffn = number(model, "ffn_dim"), layers = number(model, "layers"), paths = number(model, "paths");
    const double experts = number(model, "experts");
    const double chosen = experts > 1 ? number(model, "top_k") : 1.0;
    const bool sgd = train.value(QStringLiteral("optimizer")).toString() == QLatin1String("sgd");

    // Weights, gradients, and two moments (AdamW, LAMB) or one momentum (SGD).
    const double parameterCopies = sgd ? 3.0 : 4.0;
    // Per token and block, what the backward pass keeps: LayerNorm inputs and
    // residuals (4 d), queries, keys, values and context (4 A), the FFN's hidden
    // layer before and after its activation (2 M) for each chosen expert; per
    // sequence and head, the scores and the softmax (2 T^2); all times the paths.
    const double tokens = batch * sequence;
    const double perBlock = paths * (tokens * (4.0 * d + 4.0 * attention + 2.0 * ffn * chosen)
                                     + batch * heads * 2.0 * sequence * sequence);
    const double floats = parameterCopies * static_cast<double>(storedParameters) + layers * perBlock;
    return static_cast<qint64>(4.0 * floats);
}

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
        result.cost.memoryBytes = estimateTrainingMemory(result.complete, cost.total.stored);
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
