#include "ComparedRuns.h"

#include "RunRegistry.h"

#include <QDir>

namespace widelab {

QString comparedRunMark(const RunFollower& follower)
{
    switch (follower.state()) {
    case RunFollower::State::Unknown:
        return {};
    case RunFollower::State::Stale:
        return QObject::tr("stale");
    case RunFollower::State::Gone:
        return QObject::tr("gone");
    case RunFollower::State::Training:
    case RunFollower::State::Paused:
    case RunFollower::State::Ended:
        break;
    }
    return follower.status() ? QString::fromStdString(toString(follower.status()->state)) : QString();
}

ComparedRuns::ComparedRuns(RunRegistry& runs, QObject* parent)
    : QObject(parent), m_runs(runs)
{
    connect(&m_runs, &RunRegistry::runRemoved, this, &ComparedRuns::forget);
    connect(&m_runs, &RunRegistry::currentChanged, this, &ComparedRuns::forget);
}

ComparedRuns::~ComparedRuns() = default;

bool ComparedRuns::add(const QString& directory)
{
    const QString id = QDir(directory).absolutePath();
    QStringList warnings;
    if (id == m_runs.current()) {  // the open run: as it is, its own follower or training goes on
        const bool known = m_runs.addSaved(directory, nullptr, &warnings);
        m_runs.reportSkippedLines(warnings);
        return known;
    }
    forget(id);  // added again: read afresh, followed from there
    LineTail metrics;
    const bool added = m_runs.addSaved(directory, &metrics, &warnings);
    m_runs.reportSkippedLines(warnings);
    if (!added)
        return false;
    auto follower = std::make_unique<RunFollower>(id, std::move(metrics), LineTail());
    follower->setInterval(m_interval);
    connect(follower.get(), &RunFollower::metricsLines, this,
            [this, id](const QList<QByteArray>& lines, const QList<qint64>& numbers, bool fromStart) {
                onMetrics(id, lines, numbers, fromStart);
            });
    connect(follower.get(), &RunFollower::stateChanged, this, [this, id] { onState(id); });
    m_followers[id] = std::move(follower);
    onState(id);
    return true;
}

void ComparedRuns::forget(const QString& runId)
{
    const auto it = m_followers.find(runId);
    if (it == m_followers.end())
        return;
    m_followers.erase(it);
    m_runs.setRunMark(runId, QString(), QString());
}

RunFollower* ComparedRuns::follower(const QString& runId) const
{
    const auto it = m_followers.find(runId);
    return it == m_followers.end() ? nullptr : it->second.get();
}

void ComparedRuns::setInterval(int milliseconds) { m_interval = milliseconds; }

void ComparedRuns::onMetrics(const QString& runId, const QList<QByteArray>& lines, const QList<qint64>& lineNumbers,
                             bool fromStart)
{
    m_runs.addLines(runId, lines, lineNumbers, fromStart);
}

void ComparedRuns::onState(const QString& runId)
{
    if (const RunFollower* follower = this->follower(runId))
        m_runs.setRunMark(runId, comparedRunMark(*follower), follower->description());
}

}  // namespace widelab
