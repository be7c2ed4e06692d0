#include "RunFollower.h"

#include <QDir>
#include <QFileInfo>

#include <algorithm>

namespace widelab {
namespace {

QString humanAge(qint64 seconds)
{
    if (seconds < 120)
        return QObject::tr("%1 s").arg(seconds);
    if (seconds < 120 * 60)
        return QObject::tr("%1 min").arg(seconds / 60);
    return QObject::tr("%1 h").arg(seconds / 3600);
}

QString stepsOf(const RunStatus& s)
{
    return s.totalSteps > 0 ? QObject::tr("step %1 / %2").arg(s.step).arg(s.totalSteps)
                            : QObject::tr("step %1").arg(s.step);
}

}  // namespace

// The follower's thread's side: runs looks and says what they found. A signal,
// not a call back into the follower, so that a look finishing after the
// follower is gone reports to no one.
class FollowLooker : public QObject {
    Q_OBJECT
public:
    explicit FollowLooker(std::unique_ptr<FollowReader> reader) : m_reader(std::move(reader)) {}
    void look(bool tailFiles) { Q_EMIT looked(m_reader->look(tailFiles)); }

Q_SIGNALS:
    void looked(const widelab::FollowUpdate& update);

private:
    std::unique_ptr<FollowReader> m_reader;
};

RunFollower::RunFollower(const QString& directory, LineTail metrics, LineTail log, QObject* parent)
    : QObject(parent), m_directory(QDir(directory).absolutePath())
{
    qRegisterMetaType<FollowUpdate>();
    m_thread = new QThread;  // no parent: see the destructor
    m_thread->setObjectName(QStringLiteral("RunFollower"));
    m_looker = new FollowLooker(std::make_unique<FollowReader>(m_directory, std::move(metrics), std::move(log)));
    m_looker->moveToThread(m_thread);
    connect(m_looker, &FollowLooker::looked, this, &RunFollower::take);  // queued: another thread
    connect(m_thread, &QThread::finished, m_looker, &QObject::deleteLater);
    connect(m_thread, &QThread::finished, m_thread, &QObject::deleteLater);
    m_thread->start();
    m_sinceWatch.start();
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &RunFollower::lookNow);
    m_timer.start();
    QTimer::singleShot(0, this, &RunFollower::lookNow);
}

RunFollower::~RunFollower()
{
    m_timer.stop();
    disconnect(m_looker, nullptr, this, nullptr);
    m_thread->quit();
    // An idle thread ends at once. One stuck in a look on a hung mount is left to
    // end when the look returns (it then deletes itself), rather than freeze the window.
    m_thread->wait(QDeadlineTimer(1000));
}

void RunFollower::setInterval(int milliseconds) { m_timer.setInterval(std::max(10, milliseconds)); }

void RunFollower::setEndGrace(int milliseconds) { m_endGraceMs = std::max(0, milliseconds); }

void RunFollower::setStaleAfter(int seconds)
{
    m_staleAfter = std::max(1, seconds);
    updateState();
}

bool RunFollower::tailing() const
{
    if (m_state != State::Ended && m_state != State::Gone)
        return true;
    return m_sinceEnd.isValid() && m_sinceEnd.elapsed() < m_endGraceMs;
}

// One look at a time on the follower's thread; the result comes back queued.
void RunFollower::lookNow()
{
    if (m_looking) {
        updateState();  // the clock moves on even while a look hangs on a slow mount
        return;
    }
    m_looking = true;
    FollowLooker* looker = m_looker;
    const bool tail = tailing();
    QMetaObject::invokeMethod(looker, [looker, tail] { looker->look(tail); }, Qt::QueuedConnection);
}

void RunFollower::take(const FollowUpdate& update)
{
    m_looking = false;
    ++m_looks;
    if (update.statusChanged) {
        const bool firstLook = m_looks == 1;
        const bool newBeat = update.status && (!m_status || m_status->updated != update.status->updated
                                               || m_status->state != update.status->state);
        if (newBeat && !firstLook) {
            m_changeSeen = true;
            m_sinceChange.start();
        }
        m_status = update.status;
        m_statusError = update.statusError;
    }
    if (!update.metrics.isEmpty() || update.metricsRestarted)
        Q_EMIT metricsLines(update.metrics, update.metricsLineNumbers, update.metricsRestarted);
    if (!update.log.isEmpty() || update.logRestarted)
        Q_EMIT logLines(update.log, update.logRestarted);
    const QString error = update.errors.join(QLatin1Char('\n'));
    if (error != m_lastError && !error.isEmpty())
        Q_EMIT readError(error);
    m_lastError = error;
    updateState();
    if (update.more)
        QTimer::singleShot(0, this, &RunFollower::lookNow);
}

qint64 RunFollower::secondsSinceUpdate() const
{
    if (m_changeSeen)
        return m_sinceChange.elapsed() / 1000;  // this computer's clock: the server's may be off
    const qint64 wall = QDateTime::currentSecsSinceEpoch() - (m_status ? m_status->updated : 0);
    return std::max(wall, m_sinceWatch.elapsed() / 1000);
}

void RunFollower::updateState()
{
    State state = State::Unknown;
    if (m_status) {
        // The core's rule, as the Workspace tab applies it too.
        switch (runActivity(*m_status, localHostName(), secondsSinceUpdate(), m_staleAfter)) {
        case RunActivity::Unknown: break;
        case RunActivity::Training: state = State::Training; break;
        case RunActivity::Paused: state = State::Paused; break;
        case RunActivity::Stale: state = State::Stale; break;
        case RunActivity::Gone: state = State::Gone; break;
        case RunActivity::Finished:
        case RunActivity::Stopped:
        case RunActivity::Failed: state = State::Ended; break;
        }
    }
    const State before = m_state;
    m_state = state;
    if ((state == State::Ended || state == State::Gone) && state != before)
        m_sinceEnd.start();
    const QString description = this->description();
    if (state == before && description == m_description)
        return;
    m_description = description;
    Q_EMIT stateChanged();
}

QString RunFollower::description() const
{
    const QString run = QFileInfo(m_directory).fileName();
    if (!m_status)
        return m_statusError.isEmpty() ? QString() : tr("Following %1 (its status.json cannot be read)").arg(run);
    const RunStatus& s = *m_status;
    const QString host = QString::fromStdString(s.host);
    const QString who = tr("%1 (process %2)").arg(host).arg(s.pid);
    switch (m_state) {
    case State::Unknown:
        break;
    // While the run may go on, the step is left to the lines, which are newer than
    // the heartbeat (written every few seconds): the window shows it beside this.
    case State::Training:
        return tr("Following %1: training on %2").arg(run, who);
    case State::Paused:
        return tr("Following %1: paused on %2").arg(run, who);
    case State::Stale:
        return tr("Following %1: stale, no update from %2 for %3").arg(run, who, humanAge(secondsSinceUpdate()));
    case State::Gone:
        return tr("%1: the trainer on %2 is gone without a last word").arg(run, who);
    case State::Ended:
        if (s.state == RunState::Finished)
            return tr("%1 finished on %2: %3").arg(run, host, stepsOf(s));
        if (s.state == RunState::Stopped)
            return tr("%1 stopped on %2 at %3").arg(run, host, stepsOf(s));
        return tr("%1 failed on %2 at %3: %4").arg(run, host, stepsOf(s), QString::fromStdString(s.message));
    }
    return QString();
}

}  // namespace widelab

#include "RunFollower.moc"
