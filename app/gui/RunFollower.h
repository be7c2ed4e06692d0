// defines: RunFollower: follows a run that another process is training (widelab-cli
// train on a server, its directory mounted over sshfs or NFS, or synced): new
// metrics and log lines and the trainer's status.json, polled on a thread of its
// own. Takes no lock and writes nothing.
#pragma once

#include "FollowReader.h"
#include "run/RunSummary.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QObject>
#include <QThread>
#include <QTimer>

#include <memory>
#include <optional>

namespace widelab {

// The GUI thread only starts looks and takes their results: a look (stat, read)
// runs on the follower's thread, one at a time, so a slow or hung mount never
// blocks the window, not even when the follower is destroyed. Polling, not file notifications: those do not cross NFS or
// sshfs. While the trainer reports training or paused (or no status.json says
// otherwise) the files are read every interval; once the run has ended and the
// last lines are in (a grace period after the end), only status.json is looked
// at, and following resumes when it says training again.
class RunFollower : public QObject {
    Q_OBJECT
public:
    enum class State {
        Unknown,   // no status.json (a run from before it existed) or a damaged one
        Training,
        Paused,
        Stale,     // training, but no update for longer than staleAfter
        Gone,      // training or paused on this machine, but its process no longer exists
        Ended,     // finished, stopped or failed
    };

    RunFollower(const QString& directory, LineTail metrics = {}, LineTail log = {}, QObject* parent = nullptr);
    ~RunFollower() override;

    void setInterval(int milliseconds);  // between looks; default 1000
    int interval() const { return m_timer.interval(); }
    void setStaleAfter(int seconds);     // default kStaleAfterSeconds
    void setEndGrace(int milliseconds);  // files still read after the end; default 15000
    QString directory() const { return m_directory; }

    State state() const { return m_state; }
    const std::optional<RunStatus>& status() const { return m_status; }
    // One line for the status bar: "Following wide: training on gpu-7 (process
    // 4242)", "wide finished on gpu-7: step 5000 / 5000", "... stale, no update
    // from ... for 3 min ..."; empty while no status.json is known.
    QString description() const;
    QString statusError() const { return m_statusError; }
    bool tailing() const;  // the files are still read (not ended, or within the grace period)
    bool trainerActive() const { return m_state == State::Training || m_state == State::Paused; }
    qint64 looks() const { return m_looks; }  // completed looks, for tests

Q_SIGNALS:
    // New complete lines and their line numbers in the file; `fromStart`: the file
    // was replaced or trimmed (a resume), so whatever was built from earlier lines
    // must go, and `lines` start it again.
    void metricsLines(const QList<QByteArray>& lines, const QList<qint64>& lineNumbers, bool fromStart);
    void logLines(const QStringList& lines, bool fromStart);
    void stateChanged();  // state() or description() changed
    void readError(const QString& message);  // a file exists but cannot be read (said once per message)

private:
    void lookNow();
    void take(const FollowUpdate& update);
    void updateState();
    qint64 secondsSinceUpdate() const;

    QString m_directory;
    // Both may outlive this object by the length of a look stuck on a hung mount:
    // the thread then ends on its own and deletes both.
    QThread* m_thread = nullptr;
    class FollowLooker* m_looker = nullptr;   // lives on m_thread, owns the FollowReader
    QTimer m_timer;
    bool m_looking = false;
    qint64 m_looks = 0;

    std::optional<RunStatus> m_status;
    QString m_statusError;
    QString m_lastError;
    State m_state = State::Unknown;
    QString m_description;
    int m_staleAfter = static_cast<int>(kStaleAfterSeconds);
    int m_endGraceMs = 15000;  // on NFS a file's size can lag its neighbour's (attribute caching)
    QElapsedTimer m_sinceChange;   // since `updated` last changed while watched
    bool m_changeSeen = false;
    QElapsedTimer m_sinceEnd;      // since the run was seen ended
    QElapsedTimer m_sinceWatch;    // since following began
};

}  // namespace widelab
