#include "TrainingController.h"

#include "LocalWorldRun.h"
#include "TrainingWorker.h"
#include "train/TrainingControl.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTimer>

namespace widelab {

TrainingController::TrainingController(QObject* parent) : RunEvents(parent)
{
    registerEngineTypes();
    m_thread.setObjectName(QStringLiteral("training"));
    m_control = std::make_shared<TrainingControl>();
    m_worker = new TrainingWorker(m_control);
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(this, &TrainingController::trainRequested, m_worker, &TrainingWorker::train);
    passOn(m_worker);
    m_thread.start();
}

// What a run tells, from whichever engine trains it (queued from the worker's thread).
void TrainingController::passOn(RunEvents* events)
{
    connect(events, &RunEvents::started, this, [this](const RunStarted& run) {
        if (m_state == State::Starting)
            setState(m_control->paused() ? State::Paused : State::Running);
        Q_EMIT started(run);
    });
    connect(events, &RunEvents::record, this, &TrainingController::record);
    connect(events, &RunEvents::message, this, &TrainingController::message);
    connect(events, &RunEvents::paused, this, &TrainingController::paused);
    connect(events, &RunEvents::finished, this, [this](const QString& outcome, const QString& text) {
        if (m_world)  // this runs inside its signal
            m_world.release()->deleteLater();
        setState(State::Idle);
        Q_EMIT finished(outcome, text);
    });
}

TrainingController::~TrainingController()
{
    m_world.reset();  // stops its processes and waits for them
    m_control->requestStop();
    m_thread.quit();  // handled once the worker's train() has returned
    m_thread.wait();
}

bool TrainingController::start(const QString& documentJson, const QString& directory, bool resume, bool force)
{
    if (busy())
        return false;
    // A fresh control per run: a stop or pause left from the last run must not leak in.
    m_control->reset();
    m_directory = directory;
    setState(State::Starting);
    const TrainingRequest request{documentJson, directory, resume, force};
    const QJsonObject train = QJsonDocument::fromJson(documentJson.toUtf8()).object().value(QStringLiteral("train")).toObject();
    if (train.value(QStringLiteral("processes")).toInteger(1) > 1) {
        startWorld(request);
        return true;
    }
    Q_EMIT trainRequested(request);
    return true;
}

void TrainingController::startWorld(const TrainingRequest& request)
{
    m_world = std::make_unique<LocalWorldRun>();
    LocalWorldRun* world = m_world.get();
    passOn(world);
    QString error;
    if (!world->start(request, &error)) {  // told as the worker tells a failure: after start() returns
        QTimer::singleShot(0, this, [this, error] {
            m_world.reset();
            setState(State::Idle);
            Q_EMIT finished(QStringLiteral("failed"), error);
        });
    }
}

void TrainingController::pause()
{
    if (m_world || (m_state != State::Running && m_state != State::Starting))
        return;
    m_control->setPaused(true);
    if (m_state == State::Running)
        setState(State::Paused);
}

void TrainingController::resume()
{
    if (m_state != State::Paused)
        return;
    m_control->setPaused(false);
    setState(State::Running);
}

void TrainingController::stop()
{
    if (!busy() || m_state == State::Stopping)
        return;
    if (m_world)
        m_world->stop();
    m_control->requestStop();
    setState(State::Stopping);
}

void TrainingController::saveCheckpoint()
{
    if (!m_world && (m_state == State::Running || m_state == State::Paused))
        m_control->requestCheckpoint();
}

void TrainingController::probe(const QString& text, bool keep)
{
    if (!m_world && (m_state == State::Running || m_state == State::Paused))
        m_control->requestProbe(text.toStdString(), keep);
}

void TrainingController::setState(State state)
{
    if (state == m_state)
        return;
    m_state = state;
    Q_EMIT stateChanged(state);
}

}  // namespace widelab
