// defines: StudyController: runs a study (core/study/StudyRunner) on a thread of
// its own and reports its members' starts, curves, ends and the study's progress
// as signals on the window's thread; stop() saves the running members' checkpoints
#pragma once

#include "vocab/Snapshot.h"

#include <QByteArray>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

class QThread;

namespace widelab {

class StudyController : public QObject {
    Q_OBJECT
public:
    // What to run: a study document (JSON text) into a directory, or, without one,
    // the study the directory records (continuing it).
    struct Job {
        QByteArray documentJson;  // empty: continue the directory's study
        QString directory;
        int steps = 0;            // 0: the study's own (or the recorded override)
        int seeds = 0;
        int jobs = 1;
    };

    explicit StudyController(QObject* parent = nullptr);
    // Stops a study in progress and waits: the running members save checkpoints first.
    ~StudyController() override;

    bool busy() const { return m_thread != nullptr; }
    QString directory() const { return m_directory; }
    // Starts `job`; false, doing nothing, while a study runs.
    bool start(const Job& job);
    // The running members stop after their current step and save a checkpoint.
    void stop();
    bool stopping() const { return m_stopping; }
    // Waits for the study's thread (after stop()); for closing and tests.
    void wait();

Q_SIGNALS:
    void memberStarted(const QString& member, bool resumed);
    // A training snapshot: the curves' values at `step` of `total`.
    void memberProgress(const QString& member, qint64 step, qint64 total, double seconds, double loss, double accuracy);
    // A validation: its loss and accuracy, and a translation run's BLEU and chrF.
    void memberEvaluation(const QString& member, const EvaluationResult& result);
    // Completed, failed (`error`), or stopped on request ("stopped").
    void memberFinished(const QString& member, const QString& status, const QString& error);
    // Finished in an earlier session (completed or failed, with its error): passed over.
    void memberSkipped(const QString& member, const QString& status, const QString& error);
    void memberMessage(const QString& member, const QString& level, const QString& text);
    void progress(int done, int total, int running, double secondsLeft);
    // outcome: "completed" (every member ran; `failed` of them failed), "stopped",
    // "refused" (the study could not start: `message` says why) or "failed" (an
    // error outside the members stopped it, e.g. a study file that cannot be
    // written: `message` says which; the members saved checkpoints first).
    void finished(const QString& outcome, int failed, const QString& message);

private:
    QThread* m_thread = nullptr;
    std::shared_ptr<std::atomic<bool>> m_stop;  // read by the study's thread
    QString m_directory;
    bool m_stopping = false;
};

}  // namespace widelab
