// defines: TrainingController: owns the training thread and its worker; the window
// starts, pauses, resumes, stops and checkpoints runs through it, never blocking
#pragma once

#include "RunEvents.h"

#include <QObject>
#include <QString>
#include <QThread>

#include <memory>

namespace widelab {

class LocalWorldRun;
class TrainingControl;
class TrainingWorker;

// Its RunEvents signals are the running run's, whichever engine trains it.
class TrainingController : public RunEvents {
    Q_OBJECT
public:
    enum class State { Idle, Starting, Running, Paused, Stopping };
    Q_ENUM(State)

    explicit TrainingController(QObject* parent = nullptr);
    // Stops a run in progress and waits for the thread: the run saves a checkpoint first.
    ~TrainingController() override;

    State state() const { return m_state; }
    bool busy() const { return m_state != State::Idle; }
    // Whether the run in progress takes pause, checkpoint and probe requests: an
    // in-process run does; one of several processes (train.processes) does not.
    bool takesRequests() const { return !m_world; }
    QString directory() const { return m_directory; }

    // Starts training `documentJson` into `directory` (resume: continue the run
    // there): in a worker thread, or, when the document's train.processes asks
    // for several, by widelab-cli's processes (LocalWorldRun), with the same
    // signals. Returns false, doing nothing, while a run is in progress.
    // `force`: train even when the memory estimate says the run will not fit.
    bool start(const QString& documentJson, const QString& directory, bool resume, bool force = false);
    void pause();
    void resume();
    void stop();
    void saveCheckpoint();
    // Inspects `text` at the next step; with keep, the run keeps it among its probes.
    void probe(const QString& text, bool keep = false);

Q_SIGNALS:
    void stateChanged(widelab::TrainingController::State state);
    void trainRequested(const widelab::TrainingRequest& request);  // to the worker, queued

private:
    void setState(State state);
    void startWorld(const TrainingRequest& request);
    void passOn(RunEvents* events);

    QThread m_thread;
    TrainingWorker* m_worker = nullptr;  // lives on m_thread; deleted when it finishes
    std::shared_ptr<TrainingControl> m_control;
    std::unique_ptr<LocalWorldRun> m_world;  // a run of several processes, while it lasts
    State m_state = State::Idle;
    QString m_directory;
};

}  // namespace widelab
