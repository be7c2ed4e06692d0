// defines: LocalWorldRun: a run of several processes on this machine (the
// document's train.processes), trained by widelab-cli and followed through its
// directory, and told to the window with the signals an in-process run uses
#pragma once

#include "RunEvents.h"

#include <QElapsedTimer>
#include <QObject>
#include <QProcess>
#include <QStringList>
#include <QTemporaryFile>

#include <memory>

namespace widelab {

class RunFollower;

// LibTorch trains one run in one process; several processes that share each
// batch (docs/distributed.md) are widelab-cli's to start, which it does as
// torchrun would. This starts `widelab-cli train DOCUMENT --out DIR` (the
// document names the processes), follows DIR as the window follows any run, and
// turns its metrics and log lines into RunEvents' signals, as TrainingWorker
// does (never paused: pausing, checkpoints on demand and typed probes are an
// in-process run's only).
class LocalWorldRun : public RunEvents {
    Q_OBJECT
public:
    explicit LocalWorldRun(QObject* parent = nullptr);
    // Stops the processes (each saves nothing more: a stop's one checkpoint) and waits for them.
    ~LocalWorldRun() override;

    // Where widelab-cli is: $WIDELAB_CLI, else beside this program (installed), else
    // the build tree's app/cli; empty when none is found.
    static QString cliProgram();

    // Starts training; false, with *error saying why, when widelab-cli is not found
    // or the document cannot be written for it.
    bool start(const TrainingRequest& request, QString* error);
    // As Ctrl-C: the processes agree on a step, save one checkpoint and exit.
    void stop();

private:
    void onMetrics(const QList<QByteArray>& lines);
    void onLog(const QStringList& lines);
    void onStatus();
    void onExited(int code, QProcess::ExitStatus status);
    void end();

    QProcess m_process;
    QTemporaryFile m_document;
    std::unique_ptr<RunFollower> m_follower;
    QString m_directory, m_name, m_device;
    qint64 m_processes = 1;
    bool m_resume = false;
    bool m_started = false;
    qint64 m_startStep = 0;
    qint64 m_launchedAt = 0;          // unix seconds: a status.json older than this is an earlier session's
    QList<QByteArray> m_pendingMetrics;  // lines read before the run said it started
    QStringList m_pendingLog;
    QByteArray m_out, m_err;          // the last of the CLI's output, for the outcome
    QString m_outcome, m_summary;     // set once the CLI has exited
};

}  // namespace widelab
