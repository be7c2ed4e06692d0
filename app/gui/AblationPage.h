// defines: AblationPage: runs the Ablation page's scans (core/measure/AblationScan)
// on a thread of their own, one at a time, and reports progress, the result or
// the error back to the page on the window's thread; a run that is training is
// scanned on a copy of its current weights (a checkpoint it is asked to save)
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>

class QThread;

namespace widelab {

class AblationView;

class AblationPage : public QObject {
    Q_OBJECT
public:
    struct Hooks {
        std::function<QString(const QString& runId)> directory;  // empty: not a run on disk
        // The step a run that is training has reached, after asking it to save a
        // checkpoint now; -1 when the run is not training.
        std::function<qint64(const QString& runId)> checkpointLive;
        std::function<QString()> probe;  // the probe text the insights show
    };

    AblationPage(AblationView* view, Hooks hooks, QObject* parent = nullptr);
    // Cancels a scan in progress and waits for its thread.
    ~AblationPage() override;

    bool busy() const { return m_thread != nullptr; }
    QString scanningRun() const { return m_runId; }
    void wait();  // for tests and closing

    // Starts a scan ("heads", "experts", "paths", "sublayers"; "zero" or "mean").
    void scan(const QString& runId, const QString& kind, const QString& mode);
    void cancel(const QString& runId);

Q_SIGNALS:
    void message(const QString& level, const QString& text);

private:
    AblationView* m_view;
    Hooks m_hooks;
    QThread* m_thread = nullptr;
    QString m_runId;
    std::shared_ptr<std::atomic<bool>> m_cancel;
};

}  // namespace widelab
