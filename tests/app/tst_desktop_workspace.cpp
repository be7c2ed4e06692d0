// Tests of the Workspace tab (app/gui/RunsWorkspace with widgets/runs/RunsTable) in the
// real window: every run of the runs folder listed with its family, model, state and
// best validation; a run shown in the charts and taken out from the table; renamed,
// tagged and noted in its own notes.json and called so in the Runs panel; a damaged
// notes.json never written over; deleting asks, keeps a run that trains, and moves
// the others to the trash; opening a run asks whether to add it or show it alone; the
// status bar names the runs folder. Offscreen; no torch header is included here.
#include "DesktopTestSupport.h"
#include "RunsWorkspace.h"
#include "run/RunNotes.h"
#include "run/RunStatus.h"
#include "runs/RunsTable.h"

#include <QAbstractItemModel>
#include <QTableView>

#include <unistd.h>

using namespace widelab;
using namespace widelab::desktoptest;

namespace {

bool writeText(const QString& path, const QByteArray& text)
{
    QFile out(path);
    return out.open(QIODevice::WriteOnly) && out.write(text) == text.size();
}

// A run folder written as a trainer leaves it: the tiny document, train and eval
// lines, and a status.json in `state` (none when empty).
QString makeRun(const QString& root, const QString& name, const QString& state, qint64 pid = 1)
{
    const QString dir = QDir(root).filePath(name);
    QDir().mkpath(dir);
    writeJson(QDir(dir).filePath(QStringLiteral("config.json")), tinyDocument(30));
    writeText(QDir(dir).filePath(QStringLiteral("metrics.jsonl")),
              R"({"type":"train","step":10,"loss":2.0,"tokens_per_second":1500}
{"type":"eval","step":10,"split":"validation","loss":1.9,"accuracy":0.25}
{"type":"train","step":20,"loss":1.8,"tokens_per_second":1700}
{"type":"eval","step":20,"split":"validation","loss":1.7,"accuracy":0.3125}
)");
    if (!state.isEmpty()) {
        RunStatus status;
        status.host = localHostName();
        status.pid = pid;
        status.state = *runStateFromString(state.toStdString());
        status.step = 20;
        status.totalSteps = 30;
        status.updated = QDateTime::currentSecsSinceEpoch();
        writeRunStatus(dir.toStdString(), status);
    }
    return dir;
}

// The table's row for the run; -1 when it is not listed.
int rowOf(const RunsTable& table, const QString& runId)
{
    for (int row = 0; row < table.visibleRowCount(); ++row)
        if (table.visibleRunId(row) == runId)
            return row;
    return -1;
}

// Answers the next window-modal question named `name` with the button whose text is `button`.
bool answer(MainWindow& window, const QString& name, const QString& button)
{
    QMessageBox* box = nullptr;
    if (!QTest::qWaitFor([&] { return (box = window.findChild<QMessageBox*>(name)) && box->isVisible(); }, 5000))
        return false;
    for (QAbstractButton* b : box->buttons()) {
        if (b->text().remove(QLatin1Char('&')) == button) {
            b->click();
            return true;
        }
    }
    return false;
}

QListWidgetItem* panelItem(MainWindow& window, const QString& runId)
{
    for (int i = 0; i < window.runsList()->count(); ++i)
        if (window.runsList()->item(i)->data(Qt::UserRole).toString() == runId)
            return window.runsList()->item(i);
    return nullptr;
}

}  // namespace

class TestDesktopWorkspace : public DesktopTestCase {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void everyRunOfTheFolderIsListed();
    void aRunIsShownInTheChartsAndTakenOutFromTheTable();
    void renamingTaggingAndNotingAreKeptInTheRun();
    void aDamagedNotesFileIsNeverWrittenOver();
    void deletingAsksAndKeepsATrainingRun();
    void openingARunAsksToAddItOrShowItAlone();
    void theStatusBarNamesTheRunsFolder();
    void chartsChosenForAFolderComeBackWithIt();
};

void TestDesktopWorkspace::initTestCase()
{
    // A home of the test's own, with its data folder made, so that a run deleted
    // goes to a trash in there, not the machine's (nor, where Qt finds none, one
    // beside the working folder).
    qputenv("HOME", m_dir.path().toLocal8Bit());
    DesktopTestCase::initTestCase();
    QVERIFY(QDir().mkpath(QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation)));
}

void TestDesktopWorkspace::everyRunOfTheFolderIsListed()
{
    const QString root = m_dir.filePath(QStringLiteral("listed"));
    const QString finished = makeRun(root, QStringLiteral("finished-run"), QStringLiteral("finished"));
    const QString old = makeRun(root, QStringLiteral("old-run"), QString());
    const QString gone = makeRun(root, QStringLiteral("gone-run"), QStringLiteral("training"), 0x3fffffff);
    QDir().mkpath(QDir(root).filePath(QStringLiteral("not-a-run")));
    MainWindow window(root);
    QVERIFY(window.workspace().waitForReading(10000));
    RunsTable& table = *window.runsTable();
    QCOMPARE(table.visibleRowCount(), 3);
    const int row = rowOf(table, finished);
    QVERIFY(row >= 0);
    QCOMPARE(table.visibleCell(row, RunsTable::Name), QStringLiteral("finished-run"));
    QCOMPARE(table.visibleCell(row, RunsTable::Family), QStringLiteral("WideNet"));  // four experts, shared
    QVERIFY2(table.visibleCell(row, RunsTable::Model).startsWith(QStringLiteral("2 x 4 \u00b7 4 experts, top-2 \u00b7 shared")),
             qPrintable(table.visibleCell(row, RunsTable::Model)));
    QCOMPARE(table.visibleCell(row, RunsTable::State), QStringLiteral("finished"));
    QCOMPARE(table.visibleCell(row, RunsTable::Steps), QStringLiteral("20 / 30"));
    QCOMPARE(table.visibleCell(row, RunsTable::BestLoss), QStringLiteral("1.700"));
    QCOMPARE(table.visibleCell(row, RunsTable::BestScore), QStringLiteral("31.3 %"));
    QCOMPARE(table.visibleCell(row, RunsTable::Speed), QStringLiteral("1.7k"));
    QCOMPARE(table.visibleCell(rowOf(table, old), RunsTable::State), QStringLiteral("\u2014"));
    QCOMPARE(table.visibleCell(rowOf(table, gone), RunsTable::State), QStringLiteral("interrupted"));
    // A run written after the first reading joins at the next.
    const QString later = makeRun(root, QStringLiteral("later-run"), QStringLiteral("stopped"));
    window.workspace().refresh();
    QVERIFY(window.workspace().waitForReading(10000));
    QCOMPARE(table.visibleCell(rowOf(table, later), RunsTable::State), QStringLiteral("stopped"));
}

void TestDesktopWorkspace::aRunIsShownInTheChartsAndTakenOutFromTheTable()
{
    const QString root = m_dir.filePath(QStringLiteral("shown"));
    const QString run = makeRun(root, QStringLiteral("a-run"), QStringLiteral("finished"));
    MainWindow window(root);
    QVERIFY(window.workspace().waitForReading(10000));
    RunsTable& table = *window.runsTable();
    QAbstractItemModel* model = table.view()->model();
    const auto shownCell = [&] { return model->index(rowOf(table, run), RunsTable::Shown); };
    QCOMPARE(shownCell().data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    QVERIFY(model->setData(shownCell(), Qt::Checked, Qt::CheckStateRole));
    QVERIFY(window.runs().record(run));
    QVERIFY(window.curves()->runs().contains(run));
    QCOMPARE(shownCell().data(Qt::CheckStateRole).toInt(), int(Qt::Checked));
    QVERIFY(table.summaryText().endsWith(QStringLiteral(", 1 shown in the charts")));
    QVERIFY(model->setData(shownCell(), Qt::Unchecked, Qt::CheckStateRole));
    QVERIFY(!window.runs().record(run));
    QVERIFY(QDir(run).exists());  // out of view, not deleted
    QCOMPARE(shownCell().data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    // Taken out in the Runs panel: the table follows.
    QVERIFY(model->setData(shownCell(), Qt::Checked, Qt::CheckStateRole));
    window.runs().remove(run);
    QCOMPARE(shownCell().data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
}

void TestDesktopWorkspace::renamingTaggingAndNotingAreKeptInTheRun()
{
    const QString root = m_dir.filePath(QStringLiteral("renamed"));
    const QString run = makeRun(root, QStringLiteral("run-1"), QStringLiteral("finished"));
    MainWindow window(root);
    QVERIFY(window.workspace().waitForReading(10000));
    RunsTable& table = *window.runsTable();
    QAbstractItemModel* model = table.view()->model();
    QVERIFY(model->setData(model->index(rowOf(table, run), RunsTable::Shown), Qt::Checked, Qt::CheckStateRole));
    QVERIFY(model->setData(model->index(rowOf(table, run), RunsTable::Name), QStringLiteral("baseline"), Qt::EditRole));
    QVERIFY(model->setData(model->index(rowOf(table, run), RunsTable::Tags), QStringLiteral("paper, seed 1, paper"),
                           Qt::EditRole));
    Q_EMIT table.noteRequested(run, QStringLiteral("lr too high?"));
    // In the run's folder, for every window and program that reads it.
    std::string error;
    QCOMPARE(readRunNotes(run.toStdString(), &error), (RunNotes{"baseline", {"paper", "seed 1"}, "lr too high?"}));
    QCOMPARE(error, std::string());
    // Called so in the table, the Runs panel and the charts.
    QCOMPARE(table.visibleCell(rowOf(table, run), RunsTable::Name), QStringLiteral("baseline \u270e"));
    QCOMPARE(table.visibleCell(rowOf(table, run), RunsTable::Tags), QStringLiteral("paper, seed 1"));
    QVERIFY(panelItem(window, run));
    QVERIFY2(panelItem(window, run)->text().startsWith(QStringLiteral("baseline")), qPrintable(panelItem(window, run)->text()));
    QCOMPARE(window.runs().record(run)->label, QStringLiteral("baseline"));
    // A window opened later reads the name from the run.
    MainWindow another(m_dir.filePath(QStringLiteral("elsewhere")));
    QVERIFY(another.compared().add(run));
    QCOMPARE(another.runs().record(run)->label, QStringLiteral("baseline"));
    // An empty name gives the folder's back.
    QVERIFY(model->setData(model->index(rowOf(table, run), RunsTable::Name), QString(), Qt::EditRole));
    QCOMPARE(window.runs().record(run)->label, QStringLiteral("run-1"));
}

void TestDesktopWorkspace::aDamagedNotesFileIsNeverWrittenOver()
{
    const QString root = m_dir.filePath(QStringLiteral("damaged"));
    const QString run = makeRun(root, QStringLiteral("run-1"), QStringLiteral("finished"));
    const QByteArray damaged = R"({"name": "mine", "tags": "not a list"})";
    QVERIFY(writeText(QDir(run).filePath(QStringLiteral("notes.json")), damaged));
    MainWindow window(root);
    QVERIFY(window.workspace().waitForReading(10000));
    RunsTable& table = *window.runsTable();
    QAbstractItemModel* model = table.view()->model();
    // Listed under its folder's name, marked, the reason in the tooltip.
    const QModelIndex name = model->index(rowOf(table, run), RunsTable::Name);
    QCOMPARE(name.data().toString(), QStringLiteral("run-1"));
    QVERIFY(name.data(Qt::DecorationRole).isValid());
    QVERIFY2(name.data(Qt::ToolTipRole).toString().contains(QStringLiteral("notes.json: \"tags\" is not a list of strings")),
             qPrintable(name.data(Qt::ToolTipRole).toString()));
    QVERIFY(model->setData(name, QStringLiteral("new name"), Qt::EditRole));
    auto* problem = window.findChild<QMessageBox*>(QStringLiteral("problem"));
    QVERIFY(problem);
    QVERIFY2(problem->text().contains(QStringLiteral("notes.json")), qPrintable(problem->text()));
    QFile file(QDir(run).filePath(QStringLiteral("notes.json")));
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), damaged);
}

void TestDesktopWorkspace::deletingAsksAndKeepsATrainingRun()
{
    const QString root = m_dir.filePath(QStringLiteral("deleted"));
    const QString run = makeRun(root, QStringLiteral("done"), QStringLiteral("finished"));
    const QString training = makeRun(root, QStringLiteral("training"), QStringLiteral("training"), getpid());
    MainWindow window(root);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.workspace().waitForReading(10000));
    RunsTable& table = *window.runsTable();
    // A run another process trains is kept, and the user told why.
    Q_EMIT table.deleteRequested({training});
    auto* problem = window.findChild<QMessageBox*>(QStringLiteral("problem"));
    QVERIFY(problem);
    QVERIFY2(problem->text().contains(QStringLiteral("Stop its training first")), qPrintable(problem->text()));
    QVERIFY(QDir(training).exists());
    QVERIFY(!window.findChild<QMessageBox*>(QStringLiteral("deleteRunsQuestion")));
    // Cancelled: nothing happens.
    Q_EMIT table.deleteRequested({run});
    QVERIFY(answer(window, QStringLiteral("deleteRunsQuestion"), QStringLiteral("Cancel")));
    QVERIFY(QDir(run).exists());
    QVERIFY(rowOf(table, run) >= 0);
    // Yes: out of the folder (to the trash, or for good when there is none here), out of the table.
    Q_EMIT table.deleteRequested({run});
    QVERIFY(answer(window, QStringLiteral("deleteRunsQuestion"), QStringLiteral("Yes")));
    if (QDir(run).exists())
        QVERIFY(answer(window, QStringLiteral("deleteForGoodQuestion"), QStringLiteral("Yes")));
    QTRY_VERIFY(!QDir(run).exists());
    QCOMPARE(rowOf(table, run), -1);
    // In the trash, under its name, to be restored from there.
    const QString trash = QDir(QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation)).filePath(QStringLiteral("Trash/files/done"));
    QVERIFY2(QDir(trash).exists(QStringLiteral("config.json")), qPrintable(trash));
    QVERIFY(rowOf(table, training) >= 0);
}

void TestDesktopWorkspace::openingARunAsksToAddItOrShowItAlone()
{
    const QString root = m_dir.filePath(QStringLiteral("opened"));
    const QString first = makeRun(root, QStringLiteral("first"), QStringLiteral("finished"));
    const QString second = makeRun(root, QStringLiteral("second"), QStringLiteral("finished"));
    const QString third = makeRun(root, QStringLiteral("third"), QStringLiteral("finished"));
    MainWindow window(root);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.openRunAsking(first);  // nothing else shown: no question
    QVERIFY(window.runs().record(first));
    window.openRunAsking(second);
    QVERIFY(answer(window, QStringLiteral("openRunQuestion"), QStringLiteral("Add to the Charts")));
    QTRY_VERIFY(window.runs().record(second));
    QVERIFY(window.runs().record(first));
    QCOMPARE(window.runs().current(), second);
    window.openRunAsking(third);
    QVERIFY(answer(window, QStringLiteral("openRunQuestion"), QStringLiteral("Show Alone")));
    QTRY_COMPARE(window.runs().runIds(), QStringList{third});
    window.openRunAsking(first);
    QVERIFY(answer(window, QStringLiteral("openRunQuestion"), QStringLiteral("Cancel")));
    QCOMPARE(window.runs().runIds(), QStringList{third});
}

void TestDesktopWorkspace::theStatusBarNamesTheRunsFolder()
{
    const QString root = m_dir.filePath(QStringLiteral("folder"));
    MainWindow window(root);
    QLabel* label = nullptr;
    for (QLabel* candidate : window.statusBar()->findChildren<QLabel*>())
        if (candidate->accessibleName() == QStringLiteral("Runs folder"))
            label = candidate;
    QVERIFY(label);
    // Under the home folder (the test's own): named from there, whole in the tooltip.
    QCOMPARE(label->text(), QStringLiteral("<a href=\"workspace\">Runs: ~/folder</a>"));
    QVERIFY(label->toolTip().contains(QDir::toNativeSeparators(root)));
    Q_EMIT label->linkActivated(QStringLiteral("workspace"));
    QCOMPARE(window.centralTabs()->currentWidget(), window.runsTable());
    const QString other = m_dir.filePath(QStringLiteral("other-folder"));
    window.setRunsFolder(other);
    QCOMPARE(label->text(), QStringLiteral("<a href=\"workspace\">Runs: ~/other-folder</a>"));
    QVERIFY(window.runsTable()->summaryText().contains(QDir::toNativeSeparators(other)));
}

void TestDesktopWorkspace::chartsChosenForAFolderComeBackWithIt()
{
    const QString root = m_dir.filePath(QStringLiteral("charts"));
    const QString run = makeRun(root, QStringLiteral("a-run"), QStringLiteral("finished"));
    const QString stepTime = QStringLiteral("time/step_seconds");
    {
        MainWindow window(root);
        QVERIFY(window.compared().add(run));
        // Every number of the run's lines is offered, the fixed charts' curves aside.
        const QStringList tags = window.runs().metricTags();
        QVERIFY2(tags.contains(stepTime) && tags.contains(QStringLiteral("validation/examples")), qPrintable(tags.join(',')));
        QVERIFY(!tags.contains(QStringLiteral("train/loss")));
        QVERIFY(window.curves()->addMetricChart(stepTime));
        // The shown run's points, handed to the new chart: its two train lines.
        QCOMPARE(window.curves()->chart(stepTime)->points(run, stepTime).size(), 2);
    }
    MainWindow again(root);
    QCOMPARE(again.curves()->metricCharts(), QStringList{stepTime});
    QVERIFY(again.compared().add(run));
    QCOMPARE(again.curves()->chart(stepTime)->points(run, stepTime).size(), 2);
    // Another folder, another layout.
    again.setRunsFolder(m_dir.filePath(QStringLiteral("charts-elsewhere")));
    QCOMPARE(again.curves()->metricCharts(), QStringList());
    again.setRunsFolder(root);
    QCOMPARE(again.curves()->metricCharts(), QStringList{stepTime});
}

QTEST_MAIN(TestDesktopWorkspace)
#include "tst_desktop_workspace.moc"
