// defines: RunEvents: what a run in training tells the window, one set of signals
// for both ways a run trains (TrainingWorker in this process, LocalWorldRun
// through widelab-cli's processes), so that TrainingController passes them on alike
#pragma once

#include "EngineTypes.h"

#include <QObject>
#include <QString>

namespace widelab {

class RunEvents : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

Q_SIGNALS:
    void started(const widelab::RunStarted& run);
    void snapshot(const widelab::TrainingSnapshot& snapshot);
    void evaluation(const widelab::EvaluationResult& result);
    void probed(const widelab::ProbeResult& result);
    void insights(const widelab::ValidationInsights& insights);
    void message(const QString& level, const QString& text);
    // The run has paused after `step` optimiser updates: the step its log line
    // names, which the last snapshot (every log_every steps) may lag behind.
    void paused(qint64 step);
    // outcome: "completed", "stopped", "non-finite", "out-of-memory",
    // "insufficient-memory" or "failed" (the run could not be set up or broke:
    // message says why, in words for the user).
    void finished(const QString& outcome, const QString& message);
};

}  // namespace widelab
