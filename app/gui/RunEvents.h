// defines: RunEvents, recordOf: what a run in training tells the window, one set
// of signals for both ways a run trains (TrainingWorker in this process,
// LocalWorldRun through widelab-cli's processes), so that TrainingController
// passes them on alike
#pragma once

#include "EngineTypes.h"
#include "vocab/MetricsCodec.h"

#include <QObject>
#include <QString>

namespace widelab {

class RunEvents : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

Q_SIGNALS:
    void started(const widelab::RunStarted& run);
    // What the run reports (a snapshot, an evaluation, a probe, a validation's
    // insights) as the record its line of metrics.jsonl decodes to: one type
    // crosses from the training thread, and RunRecord::add takes it as it
    // takes a line read from disk.
    void record(const widelab::MetricsRecord& record);
    void message(const QString& level, const QString& text);
    // The run has paused after `step` optimiser updates: the step its log line
    // names, which the last snapshot (every log_every steps) may lag behind.
    void paused(qint64 step);
    // outcome: "completed", "stopped", "non-finite", "out-of-memory",
    // "insufficient-memory" or "failed" (the run could not be set up or broke:
    // message says why, in words for the user).
    void finished(const QString& outcome, const QString& message);
};

// What the trainer reports in this process, as the record its line of
// metrics.jsonl decodes to (a snapshot with all six curves).
MetricsRecord recordOf(const TrainingSnapshot& snapshot);
MetricsRecord recordOf(const EvaluationResult& result);
MetricsRecord recordOf(const ProbeResult& probe);
MetricsRecord recordOf(const ValidationInsights& insights);

}  // namespace widelab
