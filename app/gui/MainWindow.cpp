#include "MainWindow.h"

#include "ActionCatalog.h"
#include "ComparedRuns.h"
#include "RunsWorkspace.h"
#include "HelpWindows.h"
#include "AblationPage.h"
#include "insights/AblationView.h"
#include "ConfigAssessment.h"
#include "ConfigDocument.h"
#include "configuration/ConfigPanel.h"
#include "curves/CurvesView.h"
#include "FollowedRun.h"
#include "insights/InsightsView.h"
#include "configuration/LogPanel.h"
#include "RecentMenu.h"
#include "RunFiles.h"
#include "RunRegistry.h"
#include "RunStatusBar.h"
#include "SavedRunProbe.h"
#include "SchemaFields.h"
#include "StudiesPage.h"
#include "studies/StudiesView.h"
#include "Theme.h"
#include "ToolIcons.h"
#include "TrainingSession.h"
#include "runtime/Runtime.h"
#include "vocab/Curves.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QThread>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>
#include <utility>

namespace widelab {
namespace {

// The catalog's view0 .. view6: the Curves tab, four Insights pages, Studies, Workspace.
constexpr int kViewActions = 7;

}  // namespace

MainWindow::MainWindow(const QString& runsRoot, QWidget* parent) : QMainWindow(parent)
{
    QSettings settings;
    const QString root = !runsRoot.isEmpty() ? runsRoot
                                              : settings.value(QStringLiteral("runsRoot"),
                                                               QDir::home().filePath(QStringLiteral("WideLab/runs")))
                                                    .toString();
    setObjectName(QStringLiteral("MainWindow"));

    m_tabs = new QTabWidget(this);
    m_tabs->setDocumentMode(true);
    m_curves = new CurvesView(m_tabs);
    const auto keyOf = [](const char* name) {
        return actionSpec(QLatin1String(name)).key.toString(QKeySequence::NativeText);
    };
    // A configuration is always open (the window starts on one), so the hint says to train it.
    m_curves->setEmptyHint(tr("No run yet: press %1 to train the configuration in the Configuration panel, pick "
                              "another preset there, or open a run (%2). Help > Keyboard Shortcuts (%3) lists the rest.")
                               .arg(keyOf("start"), keyOf("openRun"), keyOf("shortcuts")));
    m_tabs->addTab(m_curves, tr("&Curves"));
    m_insights = new InsightsView(m_tabs);
    m_tabs->addTab(m_insights, tr("&Insights"));
    m_tabs->setTabToolTip(1, tr("Attention heads, expert load, LayerNorm divergence and path weights, live"));
    m_studies = new StudiesView(m_tabs);
    m_tabs->addTab(m_studies, tr("&Studies"));
    m_tabs->setTabToolTip(2, tr("Compare configurations: depth against width, sharing, experts, paths; "
                                "several seeds each, beside the papers' figures"));
    m_runsTable = new RunsTable(m_tabs);
    m_tabs->addTab(m_runsTable, tr("&Workspace"));
    m_tabs->setTabToolTip(3, tr("Every run in the runs folder: sort, filter, show in the charts, rename, tag, note, "
                                "delete"));
    setCentralWidget(m_tabs);
    // New studies go beside the runs folder (~/WideLab/studies by default).
    m_studiesPage = new StudiesPage(m_studies, QDir::cleanPath(QDir(root).absoluteFilePath(QStringLiteral("../studies"))), this);
    connect(m_insights, &InsightsView::probeRequested, this, &MainWindow::probeRuns);
    // Linked views: a click on a curve moves the insights to that step; the
    // curves show the step the insights draw.
    connect(m_curves, &CurvesView::stepClicked, this, [this](qint64 step) { m_insights->setStep(step); });
    connect(m_insights, &InsightsView::shownStepChanged, m_curves, &CurvesView::setCursorStep);
    AblationPage::Hooks hooks;
    hooks.directory = [this](const QString& runId) {
        const RunRecord* record = m_runs->record(runId);
        return record ? record->directory : QString();
    };
    hooks.checkpointLive = [this](const QString& runId) -> qint64 {
        if (runId != m_runs->current() || !m_controller.busy()
            || m_controller.state() == TrainingController::State::Stopping || !m_runs->record(runId))
            return -1;
        m_controller.saveCheckpoint();
        return static_cast<qint64>(m_runs->record(runId)->lastStep());
    };
    hooks.probe = [this] { return m_insights->probe(); };
    m_ablation = new AblationPage(m_insights->ablation(), std::move(hooks), this);
    connect(m_insights, &InsightsView::liveChanged, this,
            [this](bool live) { m_actions.value(QStringLiteral("live"))->setChecked(live); });

    m_help = new HelpWindows(this);
    connect(m_help, &HelpWindows::problem, this, &MainWindow::showProblem);
    buildActions();
    buildDocks();
    buildMenus();

    m_status = new RunStatusBar(this);

    m_document = new ConfigDocument(m_panel, this);
    connect(m_document, &ConfigDocument::assessed, this, &MainWindow::updateActions);
    connect(m_document, &ConfigDocument::problem, this, &MainWindow::showProblem);
    connect(m_document, &ConfigDocument::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_document, &ConfigDocument::saved, m_recent, &RecentMenu::remember);
    connect(m_runs, &RunRegistry::message, m_log, &LogPanel::appendLine);
    connect(m_runs, &RunRegistry::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_runs, &RunRegistry::problem, this, &MainWindow::showProblem);
    m_following = new FollowedRun(*m_runs, *m_status, m_controller, *m_document, this);
    connect(m_following, &FollowedRun::logLines, this, [this](const QStringList& lines, bool fromStart) {
        if (fromStart)
            showRunLog(lines);
        else
            m_log->appendSpdlogLines(lines);
    });
    connect(m_following, &FollowedRun::stateChanged, this, &MainWindow::updateActions);
    connect(m_following, &FollowedRun::statusMessage, statusBar(), &QStatusBar::showMessage);
    // A pick opens the file it names, after afterUnsavedEdits.
    connect(m_panel, &ConfigPanel::presetChosen, this, [this](const QString& choice) {
        const QString file = m_document->presetFile(choice);
        m_document->afterUnsavedEdits([this, file] { openConfiguration(file); });
    });

    connect(&m_controller, &TrainingController::stateChanged, this, &MainWindow::onStateChanged);
    connect(&m_controller, &TrainingController::message, m_log, &LogPanel::appendLine);
    m_session = new TrainingSession(m_controller, *m_document, *m_runs, *m_following, *m_status, m_insights, this, root);
    connect(m_session, &TrainingSession::problem, this, &MainWindow::showProblem);
    m_workspace = new RunsWorkspace(*m_runsTable, *m_runs, *m_compared, [this](const QString& runId) {
        return runId == m_runs->current() && m_controller.busy();
    }, this);
    connect(m_workspace, &RunsWorkspace::openRequested, this, &MainWindow::openRunAsking);
    connect(m_workspace, &RunsWorkspace::problem, this, &MainWindow::showProblem);
    connect(m_workspace, &RunsWorkspace::message, m_log, &LogPanel::appendLine);
    connect(m_workspace, &RunsWorkspace::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_tabs, &QTabWidget::currentChanged, this, [this] {
        if (m_tabs->currentWidget() == m_runsTable)
            m_workspace->refresh();
    });
    connect(m_status, &RunStatusBar::folderClicked, this, [this] { m_tabs->setCurrentWidget(m_runsTable); });
    connect(m_curves, &CurvesView::metricChartsChanged, m_workspace, &RunsWorkspace::saveCharts);
    setRunsFolder(root);
    connect(m_session, &TrainingSession::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_session, &TrainingSession::runLog, this, &MainWindow::showRunLog);
    connect(m_session, &TrainingSession::finished, this, [this] {
        if (m_closeWhenIdle && !m_studiesPage->busy())
            close();
    });

    connect(m_studiesPage, &StudiesPage::message, m_log, &LogPanel::appendLine);
    connect(m_studiesPage, &StudiesPage::problem, this, &MainWindow::showProblem);
    connect(m_studiesPage, &StudiesPage::openRunRequested, this, [this](const QString& directory) {
        if (openRun(directory))
            m_tabs->setCurrentWidget(m_curves);
    });
    connect(m_studies, &StudiesView::buildRequested, this, [this] {
        m_studiesPage->build(m_panel->document(), resolveDocument(m_panel->document()));
    });
    connect(m_studies, &StudiesView::buttonsChanged, this, &MainWindow::updateActions);
    connect(m_studiesPage, &StudiesPage::runningChanged, this, [this](bool running) {
        updateActions();
        if (!running && m_closeWhenIdle && !m_controller.busy())
            close();
    });

    m_document->refreshPresets();
    m_panel->setDevices(deviceChoices());

    restoreLayout();
    openConfiguration(m_document->presetFile(QStringLiteral("widenet")));  // the preset, whatever the folder holds
    m_document->setModified(false);
}

MainWindow::~MainWindow()
{
    m_following->stop();
    delete m_ablation;  // cancels a scan in progress and waits for it
    m_ablation = nullptr;
    for (QThread* job : std::as_const(m_jobs))
        job->wait();
}

void MainWindow::startJob(QThread* job)
{
    job->setParent(this);  // waited for in the destructor before it is deleted
    m_jobs.append(job);
    connect(job, &QThread::finished, this, [this, job] {
        m_jobs.removeAll(job);
        job->deleteLater();
    });
    job->start();
}

void MainWindow::checkRuntime()
{
    const int threads = computeThreads();
    startJob(QThread::create([this, threads] {
        const BlasInfo blas = blasLibrary();
        const double peak = measureMatmulPeak(512, 3);
        const QString summary = QString::fromStdString(runtimeSummary());
        const QString warning = QString::fromStdString(slowMatmulWarning(peak, threads, blas));
        QMetaObject::invokeMethod(this, [this, summary, peak, warning] {
            m_runtimeReport =
                tr("%1; fp32 matrix products measured at %2 GFLOP/s").arg(summary).arg(peak / 1e9, 0, 'f', 1);
            if (!warning.isEmpty()) {
                m_runtimeReport += QLatin1Char('\n') + warning;
                statusBar()->showMessage(warning, 60000);
            }
            appendRuntimeReport();
        }, Qt::QueuedConnection);
    }));
}

void MainWindow::appendRuntimeReport()
{
    const QStringList lines = m_runtimeReport.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    for (int i = 0; i < lines.size(); ++i)
        m_log->appendLine(i == 0 ? QStringLiteral("info") : QStringLiteral("warning"), lines[i]);
}

void MainWindow::showRunLog(const QStringList& spdlogLines)
{
    m_log->clear();
    appendRuntimeReport();
    m_log->appendSpdlogLines(spdlogLines);
}

ConfigDiffDialog* MainWindow::showConfigDiff(const QString& runDirectory, const QString& runLabel)
{
    QString error;
    const QJsonObject config = readJsonObject(runFile(runDirectory, runlayout::kConfig), &error);
    if (!error.isEmpty()) {
        showProblem(tr("Cannot compare configurations"), error);
        return nullptr;
    }
    auto* dialog = new ConfigDiffDialog(documentDifferences(m_panel->document(), config), tr("the Configuration panel"),
                                        runLabel, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
    return dialog;
}

void MainWindow::showAbout()
{
    QMessageBox::about(this, tr("About WideLab"),
                       tr("<p><b>WideLab %1</b>: configure, train and inspect wide Transformers "
                          "(WideNet, Multi-Path Transformer, Wide Attention).</p><p>%2</p>")
                           .arg(QApplication::applicationVersion(),
                                m_runtimeReport.isEmpty() ? tr("Checking what matrix products run on…")
                                                          : m_runtimeReport.toHtmlEscaped().replace(
                                                                QLatin1Char('\n'), QStringLiteral("<br>"))));
}

void MainWindow::buildActions()
{
    // Text, key and tooltip from the one catalog (ActionCatalog), which the
    // shortcut sheet and docs/desktop.md list.
    auto add = [this](const QString& name, auto slot) {
        const ActionSpec spec = actionSpec(name);
        Q_ASSERT_X(!spec.name.isEmpty(), "MainWindow::buildActions", qPrintable(name + QStringLiteral(": not in the catalog")));
        auto* action = new QAction(spec.text, this);
        action->setObjectName(name);
        if (!spec.key.isEmpty())
            action->setShortcut(spec.key);
        action->setToolTip(spec.description);
        action->setStatusTip(spec.description);
        connect(action, &QAction::triggered, this, slot);
        m_actions.insert(name, action);
        return action;
    };
    add(QStringLiteral("open"), [this] {
        m_document->afterUnsavedEdits([this] {
            const QString file = QFileDialog::getOpenFileName(this, tr("Open Configuration"),
                                                              QFileInfo(m_document->file()).path(),
                                                              tr("WideLab configurations (*.json)"));
            if (!file.isEmpty())
                openConfiguration(file);
        });
    });
    add(QStringLiteral("save"), [this] { m_document->save(); });
    add(QStringLiteral("saveAs"), [this] { m_document->saveAs(); });
    add(QStringLiteral("openRun"), [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Run"), m_session->runsRoot());
        if (!dir.isEmpty())
            openRunAsking(dir);
    });
    add(QStringLiteral("compare"), [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Add a Run to the Comparison"), m_session->runsRoot());
        if (!dir.isEmpty())
            m_compared->add(dir);
    });
    add(QStringLiteral("runsFolder"), [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for New Runs"), m_session->runsRoot());
        if (!dir.isEmpty()) {
            setRunsFolder(dir);
            QSettings().setValue(QStringLiteral("runsRoot"), dir);
        }
    });
    add(QStringLiteral("exportChart"), [this] { exportView(false); });
    add(QStringLiteral("exportData"), [this] { exportView(true); });
    for (int i = 0; i < kViewActions; ++i)
        add(QStringLiteral("view%1").arg(i), [this, i] {
            if (i >= 5) {
                m_tabs->setCurrentWidget(i == 5 ? static_cast<QWidget*>(m_studies) : m_runsTable);
                return;
            }
            m_tabs->setCurrentIndex(i == 0 ? 0 : 1);
            if (i > 0)
                m_insights->setPage(InsightsView::Page(i - 1));
        });
    add(QStringLiteral("studyNew"), [this] {
        m_tabs->setCurrentWidget(m_studies);
        m_studiesPage->build(m_panel->document(), resolveDocument(m_panel->document()));
    });
    add(QStringLiteral("studyOpen"), [this] {
        m_tabs->setCurrentWidget(m_studies);
        const QString directory =
            QFileDialog::getExistingDirectory(this, tr("Open Study"), m_studiesPage->studiesRoot());
        if (!directory.isEmpty())
            openStudy(directory);
    });
    add(QStringLiteral("studyStart"), [this] {
        m_tabs->setCurrentWidget(m_studies);
        m_studiesPage->startBuiltin(m_studies->startOptions());
    });
    add(QStringLiteral("studyContinue"), [this] {
        m_tabs->setCurrentWidget(m_studies);
        m_studiesPage->continueStudy(m_studies->startOptions().jobs);
    });
    add(QStringLiteral("studyStop"), [this] { m_studiesPage->stop(); });
    QAction* live = add(QStringLiteral("live"), [this](bool on) { m_insights->setLive(on); });
    live->setCheckable(true);
    live->setChecked(true);
    add(QStringLiteral("stepBack"), [this] { m_insights->stepBy(-1); });
    add(QStringLiteral("stepForward"), [this] { m_insights->stepBy(1); });
    add(QStringLiteral("addProbe"), [this] {
        m_tabs->setCurrentWidget(m_insights);
        m_insights->askForProbe();
    });
    add(QStringLiteral("quit"), [this] { close(); });
    add(QStringLiteral("documentation"), [this] { m_help->showDocumentation(); });
    add(QStringLiteral("shortcuts"), [this] { m_help->showShortcuts(); });
    add(QStringLiteral("about"), [this] { showAbout(); });

    add(QStringLiteral("start"), [this] { m_session->start(); });
    add(QStringLiteral("pause"), [this] {
        if (m_controller.state() == TrainingController::State::Paused)
            m_controller.resume();
        else
            m_controller.pause();
    });
    add(QStringLiteral("stop"), [this] { m_controller.stop(); });
    add(QStringLiteral("checkpoint"), [this] { m_controller.saveCheckpoint(); });
    add(QStringLiteral("resetView"), [this] { m_curves->resetViews(); });
    m_actions.value(QStringLiteral("start"))->setIcon(toolIcon(ToolIcon::Play));
    m_actions.value(QStringLiteral("pause"))->setIcon(toolIcon(ToolIcon::Pause));
    m_actions.value(QStringLiteral("stop"))->setIcon(toolIcon(ToolIcon::Stop));
    m_actions.value(QStringLiteral("checkpoint"))->setIcon(toolIcon(ToolIcon::Save));

    auto* toolbar = addToolBar(tr("Training"));
    toolbar->setObjectName(QStringLiteral("trainingToolBar"));
    toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    for (const char* name : {"start", "pause", "stop", "checkpoint"})
        toolbar->addAction(m_actions.value(QLatin1String(name)));
    m_startReason = new QLabel(this);
    m_startReason->setObjectName(QStringLiteral("startReason"));
    m_startReason->setAccessibleName(tr("Why training cannot start"));
    m_startReason->setContentsMargins(12, 0, 12, 0);
    m_startReason->setStyleSheet(QStringLiteral("color: palette(link);"));
    toolbar->addWidget(m_startReason);
}

void MainWindow::buildDocks()
{
    m_panel = new ConfigPanel(schemaFields(), this);
    m_panel->setResolver(resolveDocument);
    m_configDock = new QDockWidget(tr("Configuration"), this);
    m_configDock->setObjectName(QStringLiteral("configurationDock"));
    m_configDock->setWidget(m_panel);
    addDockWidget(Qt::LeftDockWidgetArea, m_configDock);

    m_log = new LogPanel(this);
    m_logDock = new QDockWidget(tr("Log"), this);
    m_logDock->setObjectName(QStringLiteral("logDock"));
    m_logDock->setWidget(m_log);
    addDockWidget(Qt::BottomDockWidgetArea, m_logDock);

    auto* runs = new QWidget(this);
    auto* layout = new QVBoxLayout(runs);
    layout->setContentsMargins(4, 4, 4, 4);
    m_runsList = new QListWidget(runs);
    m_runsList->setAccessibleName(tr("Runs shown in the charts"));
    m_runsList->setToolTip(tr("Tick a run to draw it in the charts; the colour is the run's in every chart."));
    layout->addWidget(m_runsList);
    auto* buttons = new QHBoxLayout;
    auto* add = new QPushButton(tr("Add..."), runs);
    add->setAccessibleName(tr("Add a run to the comparison"));
    auto* remove = new QPushButton(tr("Remove"), runs);
    remove->setAccessibleName(tr("Remove the selected run from the window"));
    auto* diff = new QPushButton(tr("Diff..."), runs);
    diff->setObjectName(QStringLiteral("diffRunButton"));
    diff->setAccessibleName(tr("Compare the selected run's configuration with the panel's"));
    diff->setToolTip(tr("The keys whose values differ between the selected run's configuration and the one in the "
                        "Configuration panel, defaults and derived keys included (widelab-cli diff)"));
    buttons->addWidget(add);
    buttons->addWidget(remove);
    buttons->addWidget(diff);
    layout->addLayout(buttons);
    m_runs = new RunRegistry(m_curves, m_insights, m_runsList, this);
    m_compared = new ComparedRuns(*m_runs, this);
    connect(add, &QPushButton::clicked, m_actions.value(QStringLiteral("compare")), &QAction::trigger);
    connect(remove, &QPushButton::clicked, this, [this] {
        QListWidgetItem* item = m_runsList->currentItem();
        if (!item)
            return;
        const QString id = item->data(Qt::UserRole).toString();
        if (id == m_runs->current() && m_controller.busy())
            return;  // the run in training stays
        if (const RunFollower* follower = m_following->follower(); follower && follower->directory() == id)
            m_following->stop();
        m_runs->remove(id);
    });
    connect(diff, &QPushButton::clicked, this, [this] {
        const QListWidgetItem* item = m_runsList->currentItem();
        if (const RunRecord* run = item ? m_runs->record(item->data(Qt::UserRole).toString()) : nullptr)
            showConfigDiff(run->directory, run->label);  // the label without the panel's state mark
        else
            statusBar()->showMessage(tr("Select a run in the Runs panel to compare its configuration with the panel's"), 8000);
    });
    m_runsDock = new QDockWidget(tr("Runs"), this);
    m_runsDock->setObjectName(QStringLiteral("runsDock"));
    m_runsDock->setWidget(runs);
    // Below the charts, beside the log: the charts keep the width between the
    // configuration and the window's edge, so that the window fits a 1280x720
    // screen with every panel shown.
    addDockWidget(Qt::BottomDockWidgetArea, m_runsDock);
    splitDockWidget(m_logDock, m_runsDock, Qt::Horizontal);
}

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(m_actions.value(QStringLiteral("open")));
    m_recent = new RecentMenu(file->addMenu(tr("Open &Recent")), this);
    connect(m_recent, &RecentMenu::chosen, this, [this](const QString& path, bool run) {
        if (run)
            openRunAsking(path);
        else
            m_document->afterUnsavedEdits([this, path] { openConfiguration(path); });
    });
    file->addAction(m_actions.value(QStringLiteral("save")));
    file->addAction(m_actions.value(QStringLiteral("saveAs")));
    file->addSeparator();
    file->addAction(m_actions.value(QStringLiteral("openRun")));
    file->addAction(m_actions.value(QStringLiteral("compare")));
    file->addAction(m_actions.value(QStringLiteral("runsFolder")));
    file->addSeparator();
    file->addAction(m_actions.value(QStringLiteral("exportChart")));
    file->addAction(m_actions.value(QStringLiteral("exportData")));
    file->addSeparator();
    file->addAction(m_actions.value(QStringLiteral("quit")));

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    for (const char* name : {"start", "pause", "stop", "checkpoint"})
        run->addAction(m_actions.value(QLatin1String(name)));

    QMenu* study = menuBar()->addMenu(tr("St&udy"));
    for (const char* name : {"studyNew", "studyOpen", "", "studyStart", "studyContinue", "studyStop"}) {
        if (*name != '\0')
            study->addAction(m_actions.value(QLatin1String(name)));
        else
            study->addSeparator();
    }

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < kViewActions; ++i)
        view->addAction(m_actions.value(QStringLiteral("view%1").arg(i)));
    view->addSeparator();
    for (const char* name : {"live", "stepBack", "stepForward", "addProbe"})
        view->addAction(m_actions.value(QLatin1String(name)));
    view->addSeparator();
    view->addAction(m_actions.value(QStringLiteral("resetView")));
    view->addSeparator();
    for (QDockWidget* dock : {m_configDock, m_logDock, m_runsDock}) {
        QAction* toggle = dock->toggleViewAction();
        const ActionSpec spec = actionSpec(dock->objectName());
        toggle->setObjectName(spec.name);
        toggle->setShortcut(spec.key);
        toggle->setToolTip(spec.description);
        view->addAction(toggle);
    }
    view->addSeparator();
    // The look: the system's (dark when the desktop is), or light or dark
    // whatever it says; kept for the next session.
    QMenu* themes = view->addMenu(tr("&Theme"));
    auto* group = new QActionGroup(themes);
    const QList<QPair<Theme, QString>> choices{
        {Theme::System, tr("&System")}, {Theme::Light, tr("&Light")}, {Theme::Dark, tr("&Dark")}};
    for (const auto& [theme, text] : choices) {
        QAction* choice = themes->addAction(text);
        choice->setObjectName(QStringLiteral("theme-") + themeName(theme));
        choice->setCheckable(true);
        choice->setChecked(theme == currentTheme());
        group->addAction(choice);
        connect(choice, &QAction::triggered, this, [theme] {
            applyTheme(theme);
            saveTheme(theme);
        });
    }

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    for (const char* name : {"documentation", "shortcuts", "", "about"}) {
        if (*name != '\0')
            help->addAction(m_actions.value(QLatin1String(name)));
        else
            help->addSeparator();
    }
}

void MainWindow::restoreLayout()
{
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) {
        const QRect available = screen() ? screen()->availableGeometry() : QRect(0, 0, 1600, 1000);
        resize(std::min(1600, available.width() * 9 / 10), std::min(1000, available.height() * 9 / 10));
    }
    if (!restoreState(settings.value(QStringLiteral("window/state")).toByteArray())) {
        // First start: the charts get the room, the log a few lines.
        resizeDocks({m_configDock}, {440}, Qt::Horizontal);
        resizeDocks({m_logDock, m_runsDock}, {width() - 280, 280}, Qt::Horizontal);
        resizeDocks({m_logDock}, {150}, Qt::Vertical);
    }
}

QAction* MainWindow::action(const QString& name) const { return m_actions.value(name); }

void MainWindow::showProblem(const QString& title, const QString& text)
{
    statusBar()->showMessage(text, 10000);
    // Window-modal and asynchronous: training and the event loop go on.
    auto* box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setObjectName(QStringLiteral("problem"));
    box->open();
}

bool MainWindow::openConfiguration(const QString& fileOrPreset)
{
    const QString file = m_document->resolve(fileOrPreset);
    if (file.isEmpty())
        return false;
    if (QFileInfo(file).isDir())
        return openRun(file);
    if (!m_document->open(file))
        return false;
    m_following->stop();
    m_recent->remember(file);
    return true;
}

bool MainWindow::openStudy(const QString& directory)
{
    m_tabs->setCurrentWidget(m_studies);
    return m_studiesPage->openStudy(QDir(directory).absolutePath());
}

bool MainWindow::showBuiltinStudy(const QString& name)
{
    m_tabs->setCurrentWidget(m_studies);
    m_studies->selectBuiltin(name);
    if (m_studies->selectedBuiltin() == name)
        return true;
    showProblem(tr("No Such Study"), tr("There is no built-in study \"%1\".").arg(name));
    return false;
}

StudyStartOptions MainWindow::studyStartOptions() const
{
    return m_studies->startOptions();
}

void MainWindow::setRunsFolder(const QString& folder)
{
    m_session->setRunsRoot(folder);
    m_workspace->setFolder(folder);
    m_status->showRunsFolder(m_workspace->folder());
    m_curves->setMetricCharts(m_workspace->savedCharts());  // the charts chosen for this folder
}

void MainWindow::openRunAsking(const QString& directory)
{
    if (m_controller.busy()) {  // as Open Run is disabled while training
        statusBar()->showMessage(tr("A run is training: stop it before opening another, or show the other beside it "
                                    "(Workspace tab, Shown)"),
                                 8000);
        return;
    }
    const QString absolute = QDir(directory).absolutePath();
    QStringList others = m_runs->runIds();
    others.removeAll(absolute);
    const auto open = [this, absolute, others](bool alone) {
        m_document->afterUnsavedEdits([this, absolute, alone, others] {
            if (alone) {
                for (const QString& id : others) {
                    if (const RunFollower* follower = m_following->follower(); follower && follower->directory() == id)
                        m_following->stop();
                    m_runs->remove(id);
                }
            }
            openRun(absolute);
        });
    };
    if (others.isEmpty()) {
        open(false);
        return;
    }
    // Others in the charts: add this one to them, or show it alone. Window-modal
    // and asynchronous, like the window's other questions.
    auto* box = new QMessageBox(QMessageBox::Question, tr("Open Run"),
                                tr("The charts show %1. Add %2 to them, or show it alone?")
                                    .arg(others.size() == 1 ? tr("another run") : tr("%1 other runs").arg(others.size()),
                                         QDir(absolute).dirName()),
                                QMessageBox::Cancel, this);
    box->setObjectName(QStringLiteral("openRunQuestion"));
    QPushButton* add = box->addButton(tr("&Add to the Charts"), QMessageBox::AcceptRole);
    QPushButton* alone = box->addButton(tr("Show &Alone"), QMessageBox::DestructiveRole);
    box->setDefaultButton(add);
    connect(box, &QMessageBox::finished, this, [box, add, alone, open] {
        box->deleteLater();
        if (box->clickedButton() == add || box->clickedButton() == alone)
            open(box->clickedButton() == alone);
    });
    box->open();
}

bool MainWindow::openRun(const QString& directory)
{
    const QString absolute = QDir(directory).absolutePath();
    QString error;
    const QJsonObject config = readJsonObject(runFile(absolute, runlayout::kConfig), &error);
    if (!error.isEmpty()) {
        showProblem(tr("Cannot Open Run"),
                    tr("%1 is not a WideLab run: %2").arg(QDir::toNativeSeparators(absolute), error));
        return false;
    }
    LineTail metricsTail;
    QStringList warnings;
    if (!m_runs->addSaved(absolute, &metricsTail, &warnings))
        return false;
    m_document->showRun(absolute, config);
    m_runs->setCurrent(absolute);
    LineTail logTail = loadLog(absolute);
    m_runs->reportSkippedLines(warnings);  // after the run's log, which replaces what the panel held
    m_status->clearRun();
    if (const RunRecord* r = m_runs->record(absolute)) {
        m_status->showStep(static_cast<qint64>(r->lastStep()));
        if (const QVector<CurvePoint> speed = r->curves.value(QLatin1String(curve::kTokensPerSecond)); !speed.isEmpty())
            m_status->showSpeed(speed.last().value);
        m_status->showWorld(r->world);
    }
    m_recent->remember(absolute);
    // Another process may be training it (a server, the directory mounted here):
    // what it writes from now on comes in as it is written.
    m_following->follow(absolute, std::move(metricsTail), std::move(logTail));
    updateActions();
    return true;
}

// Shows RUN_DIR/log.txt (when there is one) up to its last complete line, and
// returns where it stopped.
LineTail MainWindow::loadLog(const QString& directory)
{
    const QString file = runFile(directory, runlayout::kLog);
    LineTail tail(file.toStdString());
    QStringList lines;
    for (LineTail::Update update = tail.poll();; update = tail.poll()) {
        for (const std::string& line : update.lines)
            lines.append(QString::fromUtf8(line));
        if (!update.more)
            break;
    }
    if (QFileInfo::exists(file))
        showRunLog(lines);
    return tail;
}

void MainWindow::onStateChanged(TrainingController::State state)
{
    m_status->showState(state);
    m_panel->setReadOnly(state != TrainingController::State::Idle);
    updateActions();
}

void MainWindow::addCapture(const QString& runId, const ProbeResult& result)
{
    m_runs->add(runId, recordOf(result));  // nothing when the run was removed from the window meanwhile
}

// The run in training probes the text itself (and keeps it); a run on disk is
// probed from its newest checkpoint on a thread of its own.
void MainWindow::probeRuns(const QStringList& runIds, const QString& text)
{
    for (const QString& id : runIds) {
        const bool training = id == m_runs->current() && (m_controller.state() == TrainingController::State::Running
                                                     || m_controller.state() == TrainingController::State::Paused);
        if (training) {
            m_controller.probe(text, true);
            continue;
        }
        const RunRecord* r = m_runs->record(id);
        if (r == nullptr || r->directory.isEmpty())
            continue;
        if (id == m_runs->current() && m_controller.busy()) {
            statusBar()->showMessage(tr("The run is starting or stopping; add the probe again in a moment."), 8000);
            continue;
        }
        const QString directory = r->directory;
        statusBar()->showMessage(tr("Probing %1 with \"%2\"…").arg(r->label, text));
        QThread* job = QThread::create([this, id, directory, text] {
            QString error;
            const std::optional<ProbeResult> result = probeSavedRun(directory, text, true, &error);
            QMetaObject::invokeMethod(this, [this, id, result, error] {
                if (result) {
                    addCapture(id, *result);
                    statusBar()->showMessage(tr("Probed at step %1").arg(result->step), 5000);
                } else {
                    showProblem(tr("Cannot Probe the Run"), error);
                }
            }, Qt::QueuedConnection);
        });
        startJob(job);
    }
}

void MainWindow::exportView(bool csv)
{
    if (m_tabs->currentWidget() == m_studies) {
        if (csv)
            m_studies->exportTableWithDialog();
        else
            m_studies->exportChartWithDialog();
    } else if (m_tabs->currentWidget() == m_insights) {
        if (csv)
            m_insights->exportCsvWithDialog();
        else
            m_insights->exportImageWithDialog();
    } else if (csv) {
        if (CurvePlot* chart = m_curves->currentChart())
            chart->exportWithDialog();
    } else {
        m_curves->exportCurrentChart();
    }
}

void MainWindow::updateActions()
{
    const auto state = m_controller.state();
    const bool idle = state == TrainingController::State::Idle;
    const bool live = state == TrainingController::State::Running || state == TrainingController::State::Paused;
    QAction* start = m_actions.value(QStringLiteral("start"));
    const bool continues = m_session->continuesOpenRun();
    const QString reason = idle ? m_session->startBlockedReason(continues) : QString();
    start->setEnabled(idle && reason.isEmpty());
    start->setText(continues ? tr("&Continue") : tr("&Start"));
    start->setToolTip(reason.isEmpty() ? start->text().remove(QLatin1Char('&')) + QStringLiteral(" (F5)")
                                       : tr("Cannot start: %1").arg(reason));
    m_startReason->setText(reason.isEmpty() ? QString() : tr("Cannot start: %1").arg(reason));
    QAction* pause = m_actions.value(QStringLiteral("pause"));
    pause->setEnabled((live || state == TrainingController::State::Starting) && m_controller.takesRequests());
    pause->setText(state == TrainingController::State::Paused ? tr("&Resume") : tr("&Pause"));
    pause->setIcon(toolIcon(state == TrainingController::State::Paused ? ToolIcon::Play : ToolIcon::Pause));
    m_actions.value(QStringLiteral("stop"))->setEnabled(!idle && state != TrainingController::State::Stopping);
    m_actions.value(QStringLiteral("checkpoint"))->setEnabled(live && m_controller.takesRequests());
    m_actions.value(QStringLiteral("open"))->setEnabled(idle);
    m_actions.value(QStringLiteral("openRun"))->setEnabled(idle);
    m_recent->menu()->setEnabled(idle);
    const bool studying = m_studiesPage->busy();
    for (const char* name : {"studyStart", "studyOpen", "studyNew"})
        m_actions.value(QLatin1String(name))->setEnabled(!studying);
    m_actions.value(QStringLiteral("studyContinue"))->setEnabled(m_studies->canContinue());
    m_actions.value(QStringLiteral("studyStop"))->setEnabled(studying);
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (m_controller.busy() || m_studiesPage->busy()) {
        event->ignore();
        if (m_closeWhenIdle)
            return;  // already stopping
        const bool study = m_studiesPage->busy();
        auto* box = new QMessageBox(QMessageBox::Question, study ? tr("A Study Is Running") : tr("Training Is Running"),
                                    study ? tr("Stop the study and close? The running members save a checkpoint "
                                               "first, so the study can be continued later.")
                                          : tr("Stop training and close? A checkpoint is saved first, so the run can be "
                                               "continued later."),
                                    QMessageBox::NoButton, this);
        box->setObjectName(QStringLiteral("closeQuestion"));
        box->setAttribute(Qt::WA_DeleteOnClose);
        QPushButton* stop = box->addButton(tr("Stop and Close"), QMessageBox::AcceptRole);
        box->addButton(QMessageBox::Cancel);
        box->setDefaultButton(stop);
        connect(stop, &QPushButton::clicked, this, [this] {
            m_closeWhenIdle = true;
            m_controller.stop();
            m_studiesPage->stop();
        });
        box->open();
        return;
    }
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    event->accept();
}

}  // namespace widelab
