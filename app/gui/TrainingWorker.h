// defines: TrainingWorker: the QObject that lives on the training thread, builds a
// Trainer for a run and drives it, turning the core's observer calls into signals
#pragma once

#include "EngineTypes.h"

#include <QObject>
#include <QString>

#include <memory>

namespace widelab {

class TrainingControl;

class TrainingWorker : public QObject {
    Q_OBJECT
public:
    explicit TrainingWorker(std::shared_ptr<TrainingControl> control, QObject* parent = nullptr);
    ~TrainingWorker() override;

public Q_SLOTS:
    // Blocks this thread until the run ends; stop, pause, checkpoint and probe
    // requests reach it through the shared TrainingControl meanwhile.
    void train(const widelab::TrainingRequest& request);

Q_SIGNALS:
    void started(const widelab::RunStarted& run);
    void snapshot(const widelab::TrainingSnapshot& snapshot);
    void evaluation(const widelab::EvaluationResult& result);
    void probe(const widelab::ProbeResult& result);
    void insights(const widelab::ValidationInsights& insights);
    void message(const QString& level, const QString& text);
    void paused(qint64 step);  // after `step` optimiser updates (TrainingObserver::onPaused)
    // outcome: "completed", "stopped", "non-finite" or "failed" (the run could
    // not be set up or broke: message says why, in words for the user).
    void finished(const QString& outcome, const QString& message);

private:
    std::shared_ptr<TrainingControl> m_control;
};

}  // namespace widelab
