// defines: FollowedRun: the window's following of the open run, which another
// process may be training: its RunFollower, whose lines go into the run's
// RunRecord and whose state and step go to the status bar
#pragma once

#include "RunFollower.h"

#include <QObject>

#include <memory>

namespace widelab {

class ConfigDocument;
class RunRegistry;
class RunStatusBar;
class TrainingController;

// The status bar tells of the followed run only while this window trains
// nothing; `document` gives the length a run's status does not.
class FollowedRun : public QObject {
    Q_OBJECT
public:
    FollowedRun(RunRegistry& runs, RunStatusBar& status, const TrainingController& controller,
                const ConfigDocument& document, QObject* parent = nullptr);
    ~FollowedRun() override;

    // Follows the run in `directory` from where `metrics` and `log` stopped.
    void follow(const QString& directory, LineTail metrics, LineTail log);
    void stop();
    // The follower of the open run (null while none is open, or while this
    // window trains it); `milliseconds` between its looks, for runs opened later.
    RunFollower* follower() const { return m_follower.get(); }
    void setInterval(int milliseconds) { m_interval = milliseconds; }

Q_SIGNALS:
    void logLines(const QStringList& lines, bool fromStart);  // RunFollower::logLines
    void stateChanged();  // what Start may do can have changed
    void statusMessage(const QString& text, int milliseconds);

private:
    void onMetrics(const QList<QByteArray>& lines, const QList<qint64>& lineNumbers, bool fromStart);
    void onState();
    void showStep();

    RunRegistry& m_runs;
    RunStatusBar& m_status;
    const TrainingController& m_controller;
    const ConfigDocument& m_document;
    std::unique_ptr<RunFollower> m_follower;  // the open run, written by another process or not
    int m_interval = 1000;
};

}  // namespace widelab
