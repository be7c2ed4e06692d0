#include "MetricsLine.h"

#include "InsightConvert.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace widelab {
namespace {

std::optional<MetricsRecord> decoded(const QByteArray& bytes, QString* reason)
{
    std::string why;
    std::optional<MetricsRecord> record =
        widelab::decodeMetricsLine(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())), &why);
    if (!record && reason)
        *reason = QString::fromStdString(why);
    return record;
}

// `line` as a line of `type`, for the core's reader.
QByteArray lineOf(QJsonObject line, const char* type)
{
    if (!line.contains(QStringLiteral("type")))
        line.insert(QStringLiteral("type"), QLatin1String(type));
    return QJsonDocument(line).toJson(QJsonDocument::Compact);
}

}  // namespace

std::optional<MetricsLine> decodeMetricsLine(const QByteArray& bytes, QString* reason)
{
    const std::optional<MetricsRecord> record = decoded(bytes, reason);
    if (!record)
        return std::nullopt;
    MetricsLine line;
    line.typeName = QString::fromStdString(record->typeName);
    line.step = record->step;
    switch (record->type) {
    case MetricsRecord::Type::Train:
        line.type = MetricsLine::Type::Train;
        line.wallSeconds = record->train.wallSeconds;
        for (const auto& [name, value] : record->values)
            line.values.insert(QString::fromStdString(name), value);
        line.state = toModelState(record->train);
        line.world = record->train.world;
        break;
    case MetricsRecord::Type::Eval:
        line.type = MetricsLine::Type::Eval;
        line.split = QString::fromStdString(record->eval.split);
        line.loss = record->eval.loss;
        line.accuracy = record->eval.accuracy;
        break;
    case MetricsRecord::Type::Probe:
        line.type = MetricsLine::Type::Probe;
        line.capture = toProbeCapture(record->probe);
        break;
    case MetricsRecord::Type::Insights:
        line.type = MetricsLine::Type::Insights;
        line.insight = toValidationInsight(record->insights);
        break;
    case MetricsRecord::Type::Other:
        break;
    }
    return line;
}

std::optional<ModelState> modelStateFromJson(const QJsonObject& line, QString* reason)
{
    const std::optional<MetricsRecord> record = decoded(lineOf(line, "train"), reason);
    if (!record)
        return std::nullopt;
    if (record->type != MetricsRecord::Type::Train) {
        if (reason)
            *reason = QStringLiteral("a %1 line, not a train line").arg(QString::fromStdString(record->typeName));
        return std::nullopt;
    }
    return toModelState(record->train);
}

std::optional<ProbeCapture> probeCaptureFromJson(const QJsonObject& line, QString* reason)
{
    const std::optional<MetricsRecord> record = decoded(lineOf(line, "probe"), reason);
    if (!record)
        return std::nullopt;
    if (record->type != MetricsRecord::Type::Probe) {
        if (reason)
            *reason = QStringLiteral("a %1 line, not a probe line").arg(QString::fromStdString(record->typeName));
        return std::nullopt;
    }
    return toProbeCapture(record->probe);
}

}  // namespace widelab
