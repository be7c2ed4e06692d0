#include "TrainingSession.h"

#include "ConfigDocument.h"
#include "FollowedRun.h"
#include "InsightFacts.h"
#include "insights/InsightsView.h"
#include "RunContinuation.h"
#include "RunRegistry.h"
#include "RunStatusBar.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QMessageBox>
#include <QPushButton>
#include <QWidget>

#include <utility>

namespace widelab {

TrainingSession::TrainingSession(TrainingController& controller, ConfigDocument& document, RunRegistry& runs,
                                 FollowedRun& following, RunStatusBar& status, InsightsView* insights,
                                 QWidget* window, const QString& runsRoot)
    : QObject(window), m_controller(controller), m_document(document), m_runs(runs), m_following(following),
      m_status(status), m_insights(insights), m_window(window), m_runsRoot(runsRoot)
{
    connect(&m_controller, &TrainingController::started, this, &TrainingSession::onStarted);
    connect(&m_controller, &TrainingController::record, this, &TrainingSession::onRecord);
    connect(&m_controller, &TrainingController::finished, this, &TrainingSession::onFinished);
    // Paused, the status bar names the step the log does: the steps done, not the
    // last snapshot's; and no time left is shown, since none passes.
    connect(&m_controller, &TrainingController::paused, this, [this](qint64 step) {
        m_status.showStep(step, m_totalSteps);
        m_status.clearTimeLeft();
    });
}

bool TrainingSession::start()
{
    m_document.assessPending();
    if (m_controller.busy())
        return false;
    const QJsonObject complete = m_document.complete();
    if (complete.isEmpty())
        return false;
    // The open run continues when the document is still its own; anything else is a new run.
    const QString openRun = m_document.run();
    const RunContinuation c = openRun.isEmpty() ? RunContinuation{} : runContinuation(openRun, complete);
    const bool resume = c.continues;
    if (!startBlockedReason(resume).isEmpty())
        return false;
    // A new length moves a cosine schedule under the run: asked before it happens.
    const bool scheduleAccepted = std::exchange(m_scheduleAccepted, false);
    if (resume && c.scheduleChanges && !scheduleAccepted) {
        auto* box = new QMessageBox(
            QMessageBox::Question, tr("Continue with a New Schedule?"),
            tr("The run's cosine learning-rate schedule spans %1 steps; continued with %2 steps it spans those "
               "instead. At step %3, where the run continues, the learning rate changes from %4 to %5.\n\n"
               "Continue the run with the new schedule?")
                .arg(c.savedSteps)
                .arg(c.steps)
                .arg(c.step)
                .arg(c.savedRate, 0, 'g', 4)
                .arg(c.rate, 0, 'g', 4),
            QMessageBox::Cancel, m_window);
        QPushButton* go = box->addButton(tr("Continue"), QMessageBox::AcceptRole);
        box->setDefaultButton(QMessageBox::Cancel);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->setObjectName(QStringLiteral("scheduleQuestion"));
        connect(go, &QPushButton::clicked, this, [this] {
            m_scheduleAccepted = true;
            start();
        });
        box->open();
        return false;
    }
    QString directory = openRun;
    if (!resume) {
        const QString name = complete.value(QStringLiteral("name")).toString();
        const QString base = slug(name.isEmpty() ? QFileInfo(m_document.file()).completeBaseName() : name) + QLatin1Char('-')
                             + QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
        directory = QDir(m_runsRoot).filePath(base);
        for (int n = 2; QFileInfo::exists(directory); ++n)
            directory = QDir(m_runsRoot).filePath(base + QStringLiteral("-%1").arg(n));
        if (!QDir().mkpath(directory)) {
            Q_EMIT problem(tr("Cannot Start"),
                           tr("The run folder %1 cannot be created.").arg(QDir::toNativeSeparators(directory)));
            return false;
        }
        RunRecord record;
        record.id = directory;
        record.label = QFileInfo(directory).fileName();
        record.directory = directory;
        record.parameters = static_cast<double>(m_document.storedParameters());
        record.insights->setArchitecture(m_document.sketch());
        describeInsights(*record.insights, complete);
        m_runs.add(std::move(record));
        m_status.clearRun();  // nothing of an earlier run describes this one
        Q_EMIT statusMessage(tr("New run in %1").arg(QDir::toNativeSeparators(directory)), 10000);
    }
    m_following.stop();  // this window writes the run now
    m_runs.setCurrent(directory);
    m_document.setRun(directory);
    m_insights->setLive(true);  // Start is to watch it train
    const QString json = QString::fromUtf8(QJsonDocument(complete).toJson(QJsonDocument::Compact));
    m_lastStart = TrainingRequest{json, directory, resume, false};
    return m_controller.start(json, directory, resume);
}

bool TrainingSession::continuesOpenRun() const
{
    // The core's rule (run/ResumeRule.h), as the trainer and the CLI apply it: a
    // run that failed before its first checkpoint has nothing to continue from.
    const QString openRun = m_document.run();
    const QJsonObject complete = m_document.complete();
    return !openRun.isEmpty() && !complete.isEmpty() && runContinuation(openRun, complete).continues;
}

QString TrainingSession::startBlockedReason(bool continues) const
{
    if (m_controller.busy())
        return tr("a run is in progress");
    if (const QString first = m_document.firstProblem(); !first.isEmpty())
        return first;
    if (const RunFollower* follower = m_following.follower(); follower && follower->trainerActive() && continues) {
        const RunStatus& s = *follower->status();
        return tr("process %1 on %2 is training this run").arg(s.pid).arg(QString::fromStdString(s.host));
    }
    // Continuing a run that has done all its steps would only write its last checkpoint again.
    const RunRecord* open = continues ? m_runs.record(m_document.run()) : nullptr;
    const qint64 steps = m_document.complete().value(QStringLiteral("train")).toObject().value(QStringLiteral("steps")).toInteger();
    if (open && static_cast<qint64>(open->lastStep()) >= steps)
        return tr("the run has done all its %1 steps; raise train.steps to continue it").arg(steps);
    return QString();
}

void TrainingSession::onStarted(const RunStarted& run)
{
    m_totalSteps = run.totalSteps;
    // A resumed run retraces the steps after its checkpoint.
    m_runs.retraceAfter(m_runs.current(), run.step);
    Q_EMIT runLog(run.log);
    m_status.clearRun();
    m_status.showDevice(run.device);
    m_status.showStep(run.step, run.totalSteps);
    m_document.updateTitle();
}

// What the run training here reports: added to its record as a line read from
// disk is, then shown.
void TrainingSession::onRecord(const MetricsRecord& record)
{
    if (!m_runs.add(m_runs.current(), record))
        return;
    if (record.type != MetricsRecord::Type::Train)
        return;
    m_status.showTraining(record.train, m_totalSteps);
    if (m_controller.state() == TrainingController::State::Paused)
        m_status.clearTimeLeft();  // the snapshot of a step that was in flight when the pause came
}

void TrainingSession::onFinished(const QString& outcome, const QString& message)
{
    m_status.clearTimeLeft();
    const RunRecord* current = m_runs.record(m_runs.current());
    const bool trained = current && current->lastStep() > 0;
    if (outcome == QLatin1String("failed") && !trained)
        Q_EMIT problem(tr("Training Could Not Run"), message);
    else if (outcome == QLatin1String("failed"))  // a disk that filled, a file that went: the checkpoints stay
        Q_EMIT problem(tr("Training Stopped"),
                       tr("%1\n\nThe run keeps its last checkpoint: once the cause is fixed, Continue (F5) goes on "
                          "from there.")
                           .arg(message));
    else if (outcome == QLatin1String("non-finite"))
        Q_EMIT problem(tr("Training Stopped"), message);
    else if (outcome == QLatin1String("out-of-memory"))
        Q_EMIT problem(tr("Out of Memory"), message);
    else if (outcome == QLatin1String("insufficient-memory"))
        askToTrainAnyway(message);
    else
        Q_EMIT statusMessage(message, 10000);
    Q_EMIT finished();
}

void TrainingSession::askToTrainAnyway(const QString& message)
{
    Q_EMIT statusMessage(message, 10000);
    // Window-modal and asynchronous, like the window's problem boxes.
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Run Too Large"),
                                tr("%1.\n\nThe estimate is first-order: the run may still fit. Train anyway? "
                                   "If memory runs out, the run stops with a message and keeps its checkpoints.")
                                    .arg(message.left(1).toUpper() + message.mid(1)),
                                QMessageBox::Cancel, m_window);
    QPushButton* anyway = box->addButton(tr("Train Anyway"), QMessageBox::AcceptRole);
    box->setDefaultButton(QMessageBox::Cancel);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setObjectName(QStringLiteral("memoryQuestion"));
    const TrainingRequest request = m_lastStart;
    connect(anyway, &QPushButton::clicked, this, [this, request] {
        if (!m_controller.busy() && m_runs.current() == request.directory)
            m_controller.start(request.documentJson, request.directory, request.resume, /*force=*/true);
    });
    box->open();
}

}  // namespace widelab
