// defines: TrainingSession: the window's side of training here: Start or
// Continue for the run the document describes (why it cannot, a new run's
// folder, the questions before a moved schedule and past the memory estimate),
// and what the TrainingController reports of the run, into its record and the
// status bar
#pragma once

#include "TrainingController.h"

#include <QObject>
#include <QString>

class QWidget;

namespace widelab {

class ConfigDocument;
class FollowedRun;
class InsightsView;
class RunRegistry;
class RunStatusBar;

class TrainingSession : public QObject {
    Q_OBJECT
public:
    // Asks its questions window-modal on `window`; new runs go in `runsRoot`.
    TrainingSession(TrainingController& controller, ConfigDocument& document, RunRegistry& runs,
                    FollowedRun& following, RunStatusBar& status, InsightsView* insights, QWidget* window,
                    const QString& runsRoot);

    QString runsRoot() const { return m_runsRoot; }
    void setRunsRoot(const QString& directory) { m_runsRoot = directory; }

    // Starts (or continues) training what the panel shows; false with the reason
    // in startBlockedReason() when it cannot start.
    bool start();
    QString startBlockedReason() const { return startBlockedReason(continuesOpenRun()); }
    // startBlockedReason() with continuesOpenRun() known (it reads the run's files).
    QString startBlockedReason(bool continues) const;
    bool continuesOpenRun() const;  // Start would continue the open run: its document is unchanged

Q_SIGNALS:
    void problem(const QString& title, const QString& text);
    void statusMessage(const QString& text, int milliseconds);
    void runLog(const QStringList& spdlogLines);  // the started run's log so far
    void finished();  // the run ended, and what it ended with was said

private:
    void onStarted(const RunStarted& run);
    void onRecord(const MetricsRecord& record);
    void onFinished(const QString& outcome, const QString& message);
    // A run refused because its memory estimate exceeds what the device has:
    // asks whether to train it anyway.
    void askToTrainAnyway(const QString& message);

    TrainingController& m_controller;
    ConfigDocument& m_document;
    RunRegistry& m_runs;
    FollowedRun& m_following;
    RunStatusBar& m_status;
    InsightsView* m_insights;
    QWidget* m_window;
    QString m_runsRoot;
    TrainingRequest m_lastStart;   // what Start last asked for (Train Anyway repeats it, forced)
    qint64 m_totalSteps = 0;
    bool m_scheduleAccepted = false;  // the user said yes to a moved schedule: the next start asks no more
};

}  // namespace widelab
