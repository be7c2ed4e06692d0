// defines: MainWindow: the coordinator of the desktop app: menus and shortcuts,
// the configuration panel, the curves, the log and the runs list, joined to a
// TrainingController. Each view is its own class, and so is each owner of the
// window's state (ConfigDocument, RunRegistry, FollowedRun, TrainingSession,
// RunStatusBar, RecentMenu); this one only wires them.
#pragma once

#include "ConfigDocument.h"
#include "FollowedRun.h"
#include "RunRegistry.h"
#include "RunStatusBar.h"
#include "TrainingController.h"
#include "TrainingSession.h"

#include <QHash>
#include <QJsonObject>
#include <QMainWindow>
#include <QTimer>

class QAction;
class QDockWidget;
class QLabel;
class QListWidget;
class QMessageBox;
class QTabWidget;
class QThread;

namespace widelab {

class ConfigPanel;
class ComparedRuns;
class CurvesView;
class InsightsView;
class LogPanel;
class RecentMenu;
class RunsTable;
class RunsWorkspace;
class StudiesPage;
class StudiesView;
struct StudyStartOptions;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // `runsRoot`: where new runs go (empty: the remembered folder, by default ~/WideLab/runs).
    explicit MainWindow(const QString& runsRoot = QString(), QWidget* parent = nullptr);
    ~MainWindow() override;

    // Each returns false, after telling the user why, when the file or run cannot be used.
    bool openConfiguration(const QString& fileOrPreset);
    bool openRun(const QString& directory);
    // The configuration shown, its file, presets and saving.
    ConfigDocument& document() const { return *m_document; }

    // Starts (or continues) training what the panel shows; false with the reason
    // in startBlockedReason() when it cannot start.
    bool startTraining() { return m_session->start(); }
    QString startBlockedReason() const { return m_session->startBlockedReason(); }

    // Checks on a worker thread what matrix products run on (LibTorch, threads,
    // BLAS, a measured fp32 product speed) and writes it to the log; a slow or
    // reference BLAS is also a warning in the log and the status bar. The
    // report stays in Help > About. main() calls it once the window shows.
    void checkRuntime();
    QString runtimeReport() const { return m_runtimeReport; }

    // For tests and automation.
    TrainingController& controller() { return m_controller; }
    ConfigPanel* configPanel() const { return m_panel; }
    CurvesView* curves() const { return m_curves; }
    InsightsView* insights() const { return m_insights; }
    StudiesView* studies() const { return m_studies; }
    StudiesPage* studiesPage() const { return m_studiesPage; }
    // Shows a study directory in the Studies tab (false, after saying why, when it is not one).
    bool openStudy(const QString& directory);
    // Shows the Studies tab with a built-in study picked (false, after saying why, when there is none of that name).
    bool showBuiltinStudy(const QString& name);
    StudyStartOptions studyStartOptions() const;
    QTabWidget* centralTabs() const { return m_tabs; }
    LogPanel* log() const { return m_log; }
    QListWidget* runsList() const { return m_runsList; }
    RunsTable* runsTable() const { return m_runsTable; }  // the Workspace tab
    RunsWorkspace& workspace() const { return *m_workspace; }
    // New runs go in `folder`, the folder the Workspace tab lists and the status bar names.
    void setRunsFolder(const QString& folder);
    // Opens the run after asking, when the charts show others, whether to add it to
    // them or show it alone (Open Run, the Workspace tab's Open).
    void openRunAsking(const QString& directory);
    QAction* action(const QString& name) const;   // "start", "pause", "stop", "checkpoint", ...
    // The runs the window knows, the current one among them.
    RunRegistry& runs() const { return *m_runs; }
    ComparedRuns& compared() const { return *m_compared; }  // runs added to the comparison, followed while written
    // The following of the open run, written by another process or not.
    FollowedRun& following() const { return *m_following; }
    QLabel* stateLabel() const { return m_status->stateLabel(); }
    QLabel* speedLabel() const { return m_status->speedLabel(); }
    QDockWidget* runsDock() const { return m_runsDock; }
    QDockWidget* logDock() const { return m_logDock; }
    QDockWidget* configDock() const { return m_configDock; }
    class HelpWindows* help() const { return m_help; }
    // Opens a window of the keys whose values differ between the run's
    // config.json and the panel's document (null, after saying why, when the
    // run's configuration cannot be read). The Runs panel's Diff button.
    class ConfigDiffDialog* showConfigDiff(const QString& runDirectory, const QString& runLabel);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildActions();
    void buildMenus();
    void buildDocks();
    void restoreLayout();
    void updateActions();
    void showProblem(const QString& title, const QString& text);

    LineTail loadLog(const QString& directory);

    void onStateChanged(TrainingController::State state);
    void probeRuns(const QStringList& runIds, const QString& text);
    void addCapture(const QString& runId, const ProbeResult& result);
    void exportView(bool csv);
    void startJob(QThread* job);   // runs it, keeps it in m_jobs until it ends
    void appendRuntimeReport();    // m_runtimeReport into the log: the line, then any warning
    void showRunLog(const QStringList& spdlogLines);  // a run's log, after the runtime report
    void showAbout();

    TrainingController m_controller;
    ConfigPanel* m_panel = nullptr;
    QTabWidget* m_tabs = nullptr;
    CurvesView* m_curves = nullptr;
    InsightsView* m_insights = nullptr;
    StudiesView* m_studies = nullptr;
    StudiesPage* m_studiesPage = nullptr;  // owned by m_studies
    QList<QThread*> m_jobs;        // worker threads in flight (probes, runtime check); waited for on close
    LogPanel* m_log = nullptr;
    QListWidget* m_runsList = nullptr;
    QDockWidget* m_configDock = nullptr;
    QDockWidget* m_logDock = nullptr;
    QDockWidget* m_runsDock = nullptr;
    RecentMenu* m_recent = nullptr;  // File > Open Recent
    QHash<QString, QAction*> m_actions;
    QLabel* m_startReason = nullptr;
    RunStatusBar* m_status = nullptr;      // a child of the window

    QString m_runtimeReport;       // checkRuntime()'s findings, warning included
    ConfigDocument* m_document = nullptr;  // a child of the window
    TrainingSession* m_session = nullptr;  // a child of the window
    RunRegistry* m_runs = nullptr;  // a child of the window
    ComparedRuns* m_compared = nullptr;  // a child of the window
    class AblationPage* m_ablation = nullptr;  // the Ablation page's scans
    bool m_closeWhenIdle = false;
    FollowedRun* m_following = nullptr;    // a child of the window
    RunsTable* m_runsTable = nullptr;      // the Workspace tab
    RunsWorkspace* m_workspace = nullptr;  // a child of the window: the Workspace tab's runs
    class HelpWindows* m_help = nullptr;   // a child of the window: Help's documentation and shortcut sheet
};

}  // namespace widelab
