// defines: RunsWorkspace: the Runs page's side in the app: reads every run of the
// workspace folder (and every run the window shows) into the RunsTable's rows on a
// worker thread, every few seconds while the page is seen, and carries out what the
// table asks: show a run in the charts or take it out, rename, tag and note it
// (notes.json, through the core), delete it to the trash after asking
#pragma once

#include "run/RunSummary.h"
#include "runs/RunsTable.h"

#include <QHash>
#include <QObject>
#include <QString>

#include <functional>
#include <map>
#include <memory>

class QThread;
class QTimer;

namespace widelab {

class ComparedRuns;
class RunRegistry;

// A row of the table from a run's summary, `shown` aside: family and model from
// its resolved configuration, state from its status (`now`: unix seconds).
RunRow runRowOf(const RunSummary& summary, std::int64_t now);

class RunsWorkspace : public QObject {
    Q_OBJECT

public:
    // `writing(runId)`: whether this window's trainer writes the run now.
    RunsWorkspace(RunsTable& table, RunRegistry& runs, ComparedRuns& compared, std::function<bool(const QString&)> writing,
                  QObject* parent = nullptr);
    ~RunsWorkspace() override;

    QString folder() const { return m_folder; }
    void setFolder(const QString& folder);
    // Reads the runs again now (on a worker thread); the rows change when it is done.
    void refresh();
    // The metric charts the user added while this folder was the workspace
    // (CurvesView::metricCharts), kept in the settings by folder.
    QStringList savedCharts() const;
    void saveCharts(const QStringList& tags);
    // For tests: waits for a reading in progress (and one asked for meanwhile).
    bool waitForReading(int milliseconds);

Q_SIGNALS:
    void openRequested(const QString& runId);
    void problem(const QString& title, const QString& text);
    void message(const QString& level, const QString& text);  // for the log
    void statusMessage(const QString& text, int milliseconds);

private:
    void setShown(const QString& runId, bool shown);
    void editNotes(const QString& runId, const std::function<void(RunNotes&)>& change);
    void deleteRuns(const QStringList& runIds);
    // A window-modal question named `name`; `then` on Yes.
    void ask(const QString& name, const QString& question, const std::function<void()>& then);
    void forget(const QStringList& runIds);  // gone from the folder: out of the table
    void startReading();
    // A run as last read: its summary, and its row (`shown` aside).
    struct ReadRun {
        RunSummary summary;
        RunRow row;
    };
    static ReadRun readRun(const std::filesystem::path& directory, const ReadRun* previous);
    void finishReading(std::map<std::string, ReadRun> read);
    void publishRows();

    RunsTable& m_table;
    RunRegistry& m_runs;
    ComparedRuns& m_compared;
    std::function<bool(const QString&)> m_writing;
    QString m_folder;
    QTimer* m_timer = nullptr;
    QThread* m_reader = nullptr;  // the reading in progress; null when none
    bool m_again = false;         // a reading was asked for during one
    std::map<std::string, ReadRun> m_read;  // by directory
};

}  // namespace widelab
