// defines: MetricsLine, decodeMetricsLine, modelStateFromJson, probeCaptureFromJson:
// the one place the desktop app decodes a line of metrics.jsonl (a saved run read
// back, or a live one followed), checking it at the boundary: what passes is
// what the views may draw; what does not is refused with the reason in words
#pragma once

#include "InsightHistory.h"

#include <QByteArray>
#include <QHash>
#include <QString>

#include <optional>

class QJsonObject;

namespace widelab {

// The largest step a line may carry: 2^53, the largest integer a double holds
// exactly (JSON numbers are doubles), far beyond any run.
inline constexpr qint64 kMaxMetricsStep = qint64{1} << 53;

struct MetricsLine {
    enum class Type { Train, Eval, Probe, Other };
    Type type = Type::Other;
    QString typeName;                   // as written: "train", "eval", "probe", or another
    qint64 step = 0;
    // train: the curves' values (missing ones absent, null ones NaN) and the model state.
    double wallSeconds = 0;
    QHash<QString, double> values;
    ModelState state;
    // eval
    QString split;
    double loss = 0, accuracy = 0;
    // probe
    ProbeCapture capture;
};

// Decodes one line (without its '\n'). nullopt with *reason set (a phrase such
// as `"step" is 1e+308, not a whole number from 0 to 2^53`) when the line is
// not valid UTF-8, not a JSON object, or a train, eval or probe line whose
// fields have the wrong type, a number that is not finite, or shapes that do not
// agree (attention T x T for T tokens in every head, the same heads in every
// layer, one expert list per token, routing arrays sized by the experts,
// LayerNorm rows of one length, a path's alpha sized by its paths). A line of
// another type needs only a "type" and passes as Type::Other.
std::optional<MetricsLine> decodeMetricsLine(const QByteArray& line, QString* reason);

// The parts of a train and a probe line (docs/run-directory.md), checked the same way.
std::optional<ModelState> modelStateFromJson(const QJsonObject& line, QString* reason);
std::optional<ProbeCapture> probeCaptureFromJson(const QJsonObject& line, QString* reason);

}  // namespace widelab
