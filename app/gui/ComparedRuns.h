// defines: ComparedRuns: the runs added for comparison, kept live: each is read
// from disk, then followed (a RunFollower of its own) while a process writes it,
// here, from the command line or on another machine, and marked in the Runs panel
// as training, stale, gone or ended
#pragma once

#include "RunFollower.h"

#include <QObject>
#include <QString>

#include <map>
#include <memory>

namespace widelab {

class RunRegistry;

class ComparedRuns : public QObject {
    Q_OBJECT
public:
    // Forgets a run when the registry removes it or makes it the current run
    // (the open run has a follower of its own: FollowedRun, or this window's training).
    explicit ComparedRuns(RunRegistry& runs, QObject* parent = nullptr);
    ~ComparedRuns() override;

    // Reads the run in `directory` into the registry (the Runs panel, the charts)
    // and follows it; false, after the registry said why, when it is not a run.
    bool add(const QString& directory);
    void forget(const QString& runId);
    RunFollower* follower(const QString& runId) const;  // null when not followed
    void setInterval(int milliseconds);  // between looks, for runs added later; default 2000

private:
    void onMetrics(const QString& runId, const QList<QByteArray>& lines, const QList<qint64>& lineNumbers, bool fromStart);
    void onState(const QString& runId);

    RunRegistry& m_runs;
    std::map<QString, std::unique_ptr<RunFollower>> m_followers;
    int m_interval = 2000;
};

// The word the Runs panel adds to a compared run's name for its follower's
// state: "training", "paused", "stale", "gone", "finished", "stopped", "failed";
// empty when nothing is known (a run from before status.json).
QString comparedRunMark(const RunFollower& follower);

}  // namespace widelab
