#include "FollowedRun.h"

#include "ConfigDocument.h"
#include "RunRegistry.h"
#include "RunStatusBar.h"
#include "TrainingController.h"
#include "vocab/Curves.h"

#include <algorithm>
#include <utility>

namespace widelab {

FollowedRun::FollowedRun(RunRegistry& runs, RunStatusBar& status, const TrainingController& controller,
                         const ConfigDocument& document, QObject* parent)
    : QObject(parent), m_runs(runs), m_status(status), m_controller(controller), m_document(document)
{
}

FollowedRun::~FollowedRun() = default;

void FollowedRun::follow(const QString& directory, LineTail metrics, LineTail log)
{
    stop();
    m_follower = std::make_unique<RunFollower>(directory, std::move(metrics), std::move(log));
    m_follower->setInterval(m_interval);
    connect(m_follower.get(), &RunFollower::metricsLines, this, &FollowedRun::onMetrics);
    connect(m_follower.get(), &RunFollower::logLines, this, &FollowedRun::logLines);
    connect(m_follower.get(), &RunFollower::stateChanged, this, &FollowedRun::onState);
    connect(m_follower.get(), &RunFollower::readError, this,
            [this](const QString& error) { Q_EMIT statusMessage(error, 10000); });
}

void FollowedRun::stop()
{
    if (!m_follower)
        return;
    m_follower.reset();
    m_status.clearFollowedState(m_controller.state() == TrainingController::State::Idle);
}

// New lines of the followed run: appended, or, after a resume trimmed the file,
// the record rebuilt from the lines that remain.
void FollowedRun::onMetrics(const QList<QByteArray>& lines, const QList<qint64>& lineNumbers, bool fromStart)
{
    const QString id = m_follower ? m_follower->directory() : QString();
    const std::optional<CurveBatch> added = m_runs.addLines(id, lines, lineNumbers, fromStart);
    if (!added)
        return;
    if (const QVector<CurvePoint> speed = added->value(QLatin1String(curve::kTokensPerSecond)); !speed.isEmpty())
        m_status.showSpeed(speed.last().value);
    m_status.showWorld(m_runs.record(id)->world);
    showStep();
}

void FollowedRun::onState()
{
    if (!m_follower || m_controller.state() != TrainingController::State::Idle)
        return;
    const RunFollower::State state = m_follower->state();
    const bool failed = m_follower->status() && m_follower->status()->state == RunState::Failed;
    m_status.showFollowedState(m_follower->description(), m_follower->statusError(),
                               state == RunFollower::State::Stale || state == RunFollower::State::Gone
                                   ? RunStatusBar::Alert::Warning
                               : failed ? RunStatusBar::Alert::Error
                                        : RunStatusBar::Alert::None);
    showStep();
    Q_EMIT stateChanged();
}

// The newest step the lines or the trainer's status tell of.
void FollowedRun::showStep()
{
    if (!m_follower || m_controller.state() != TrainingController::State::Idle)
        return;
    const RunRecord* r = m_runs.record(m_follower->directory());
    qint64 step = r ? static_cast<qint64>(r->lastStep()) : 0;
    qint64 total = m_document.complete().value(QStringLiteral("train")).toObject().value(QStringLiteral("steps")).toInteger();
    if (const auto& status = m_follower->status()) {
        step = std::max<qint64>(step, status->step);
        total = status->totalSteps > 0 ? status->totalSteps : total;
    }
    if (total > 0)
        m_status.showStep(step, total);
    else
        m_status.showStep(step);
}

}  // namespace widelab
