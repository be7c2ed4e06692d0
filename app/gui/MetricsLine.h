// defines: MetricsLine, decodeMetricsLine, modelStateFromJson, probeCaptureFromJson:
// a line of metrics.jsonl for the desktop app (a saved run read back, or a live one
// followed): decoded and checked by the core's reader (train/MetricsCodec.h), then
// converted into the views' types as a live snapshot is (InsightConvert.h)
#pragma once

#include "insights/InsightHistory.h"
#include "vocab/MetricsCodec.h"

#include <QByteArray>
#include <QHash>
#include <QString>

#include <optional>

class QJsonObject;

namespace widelab {

struct MetricsLine {
    enum class Type { Train, Eval, Probe, Insights, Other };
    Type type = Type::Other;
    QString typeName;                   // as written: "train", "eval", "probe", or another
    qint64 step = 0;
    // train: the curves' values (missing ones absent, null ones NaN) and the model state.
    double wallSeconds = 0;
    QHash<QString, double> values;
    ModelState state;
    WorldPace world;  // a distributed run's processes (size 1: one process)
    // eval
    QString split;
    double loss = 0, accuracy = 0;
    // probe
    ProbeCapture capture;
    // insights: head roles and expert specialisation at a validation
    ValidationInsight insight;
};

// Decodes one line (without its '\n'): nullopt with *reason set, in words, when
// the core's reader refuses it (see widelab::decodeMetricsLine in train/MetricsCodec.h).
std::optional<MetricsLine> decodeMetricsLine(const QByteArray& line, QString* reason);

// A train line's model state and a probe line's capture (docs/run-directory.md),
// checked the same way ("type" may be left out).
std::optional<ModelState> modelStateFromJson(const QJsonObject& line, QString* reason);
std::optional<ProbeCapture> probeCaptureFromJson(const QJsonObject& line, QString* reason);

}  // namespace widelab
