// Tests of following a run that another process writes (app/gui/RunFollower and
// the main window): a follower over a directory written by hand (torn lines, a
// trimmed file, every state of status.json, a damaged one, following that stops
// after the end and resumes), and the window following a real `widelab-cli train`
// process live, through a kill and a resume that trims metrics.jsonl, without
// ever taking the run's lock. Runs offscreen; no torch header is included here.
#include "curves/CurvePlot.h"
#include "curves/CurvesView.h"
#include "configuration/LogPanel.h"
#include "ComparedRuns.h"
#include "MainWindow.h"
#include "RunFollower.h"
#include "TrainingController.h"
#include "TrainRecords.h"
#include "dist/World.h"
#include "run/RunStatus.h"

#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <cstdio>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace widelab;

namespace {

QByteArray trainLine(int step) { return QStringLiteral(R"({"type":"train","step":%1,"wall_seconds":%1,"loss":%2})").arg(step).arg(3.0 / step).toUtf8(); }

bool writeBytes(const QString& file, const QByteArray& bytes, QIODevice::OpenMode mode = QIODevice::WriteOnly)
{
    QFile out(file);
    return out.open(mode) && out.write(bytes) == bytes.size();
}

bool appendBytes(const QString& file, const QByteArray& bytes) { return writeBytes(file, bytes, QIODevice::Append); }

// Renamed over the old file, as the trainer's resume trims metrics.jsonl.
bool replaceFile(const QString& file, const QByteArray& bytes)
{
    const QString temporary = file + QStringLiteral(".tmp");
    return writeBytes(temporary, bytes) && std::rename(qPrintable(temporary), qPrintable(file)) == 0;
}

void writeStatus(const QString& run, RunState state, qint64 pid, qint64 step, qint64 updated)
{
    RunStatus status;
    status.host = localHostName();
    status.pid = pid;
    status.state = state;
    status.step = step;
    status.totalSteps = 100;
    status.updated = updated;
    writeRunStatus(run.toStdString(), status);
}

// A ListOps run small enough for a test (as in DesktopTestSupport.h), checkpointed often.
QJsonObject tinyDocument(int steps)
{
    const QByteArray json = QStringLiteral(R"({
        "name": "tiny",
        "model": {"vocab_size": 20, "max_len": 40, "d_model": 32, "layers": 2, "heads": 4, "ffn_dim": 64,
                  "num_classes": 10, "experts": 4, "top_k": 2, "pooling": "mean",
                  "share_attention": true, "share_ffn": true},
        "task": {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 256,
                 "validation_size": 64, "test_size": 64},
        "train": {"steps": %1, "batch_size": 16, "learning_rate": 0.003, "warmup_steps": 5,
                  "log_every": 2, "eval_every": 20, "checkpoint_every": 40, "keep_last": 3, "threads": 1}})")
                                .arg(steps)
                                .toUtf8();
    return QJsonDocument::fromJson(json).object();
}

// The largest `step` of any line of metrics.jsonl.
qint64 lastLoggedStep(const QString& run)
{
    QFile in(run + QStringLiteral("/metrics.jsonl"));
    qint64 step = -1;
    if (in.open(QIODevice::ReadOnly))
        while (!in.atEnd())
            step = std::max<qint64>(step, QJsonDocument::fromJson(in.readLine()).object().value(QStringLiteral("step")).toInteger(-1));
    return step;
}

qint64 newestCheckpointStep(const QString& run)
{
    const QStringList files =
        QDir(run + QStringLiteral("/checkpoints")).entryList({QStringLiteral("step-*.pt")}, QDir::Files, QDir::Name);
    return files.isEmpty() ? -1 : files.last().mid(5, 8).toLongLong();
}

// The steps of a series, and whether they rise strictly.
QVector<qint64> stepsOf(const QVector<CurvePoint>& points)
{
    QVector<qint64> steps;
    for (const CurvePoint& point : points)
        steps.append(static_cast<qint64>(point.step));
    return steps;
}

QVector<qint64> range(qint64 first, qint64 last, qint64 by)
{
    QVector<qint64> steps;
    for (qint64 step = first; step <= last; step += by)
        steps.append(step);
    return steps;
}

// Whether this process can take the run's lock now (and gives it back at once).
bool lockIsFree(const QString& run)
{
    const int fd = ::open(qPrintable(run + QStringLiteral("/lock")), O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return false;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return free;
}

}  // namespace

class TestFollow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void aFollowerReadsWhatAnotherProcessWrites();
    void aFollowerReportsEveryStateOfTheTrainer();
    void aLookStuckOnAHungMountHoldsNeitherTheWindowNorItsEnd();
    void theWindowFollowsALiveTrainerThroughAKillAndATrimmingResume();
    void theWindowSkipsDamagedLinesItFollowsWithOneWarningEach();
    void aComparedRunStaysLiveAndSaysWhenItEnds();
    void theWindowShowsADistributedRunsProcesses();
    void severalProcessesTrainThroughTheController();

private:
    QTemporaryDir m_dir;
};

void TestFollow::initTestCase()
{
    QVERIFY(m_dir.isValid());
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("WideLabTests"));
    QSettings().clear();
}

void TestFollow::aFollowerReadsWhatAnotherProcessWrites()
{
    const QString run = m_dir.filePath(QStringLiteral("by-hand"));
    QVERIFY(QDir().mkpath(run));
    const QString metrics = run + QStringLiteral("/metrics.jsonl");
    QVERIFY(writeBytes(metrics, trainLine(2) + '\n' + trainLine(4) + '\n'));

    RunFollower follower(run);
    follower.setInterval(20);
    QList<QByteArray> lines;
    int restarts = 0;
    connect(&follower, &RunFollower::metricsLines, this, [&](const QList<QByteArray>& added, const QList<qint64>&, bool fromStart) {
        if (fromStart) {
            lines.clear();
            ++restarts;
        }
        lines += added;
    });
    QTRY_COMPARE(lines.size(), 2);
    QCOMPARE(follower.state(), RunFollower::State::Unknown);  // no status.json: an older run
    QVERIFY(follower.description().isEmpty());

    // A line half-written waits for its newline, however many looks pass.
    const QByteArray line6 = trainLine(6);
    QVERIFY(appendBytes(metrics, line6.left(20)));
    const qint64 looks = follower.looks();
    QTRY_VERIFY(follower.looks() > looks + 5);
    QCOMPARE(lines.size(), 2);
    QVERIFY(appendBytes(metrics, line6.mid(20) + '\n'));
    QTRY_COMPARE(lines.size(), 3);
    QCOMPARE(lines.last(), line6);

    // A resume trims the file (renamed over): the lines start again, none twice.
    QVERIFY(replaceFile(metrics, trainLine(2) + '\n'));
    QTRY_COMPARE(restarts, 1);
    QTRY_COMPARE(lines, QList<QByteArray>{trainLine(2)});
    QVERIFY(appendBytes(metrics, trainLine(4) + "\n\xff\xfe not JSON \xc3\x28\n"));
    QTRY_COMPARE(lines.size(), 3);
    QCOMPARE(restarts, 1);
}

void TestFollow::aFollowerReportsEveryStateOfTheTrainer()
{
    const QString run = m_dir.filePath(QStringLiteral("states"));
    QVERIFY(QDir().mkpath(run));
    const QString metrics = run + QStringLiteral("/metrics.jsonl");
    const qint64 me = QCoreApplication::applicationPid();
    const QString host = QString::fromStdString(localHostName());
    writeStatus(run, RunState::Training, me, 40, QDateTime::currentSecsSinceEpoch());

    RunFollower follower(run);
    follower.setInterval(20);
    follower.setEndGrace(1000);
    QSignalSpy changes(&follower, &RunFollower::stateChanged);
    int lines = 0;
    connect(&follower, &RunFollower::metricsLines, this, [&](const QList<QByteArray>& added, const QList<qint64>&, bool) { lines += added.size(); });
    QTRY_COMPARE(follower.state(), RunFollower::State::Training);
    QVERIFY2(follower.description().contains(QStringLiteral("training on %1 (process %2)").arg(host).arg(me)),
             qPrintable(follower.description()));
    QCOMPARE(follower.status()->step, qint64{40});
    QVERIFY(follower.trainerActive());

    writeStatus(run, RunState::Paused, me, 41, QDateTime::currentSecsSinceEpoch());
    QTRY_COMPARE(follower.state(), RunFollower::State::Paused);
    QVERIFY2(follower.description().contains(QStringLiteral("paused")), qPrintable(follower.description()));

    // No heartbeat for longer than the limit: stale, said with how long.
    follower.setStaleAfter(1);
    writeStatus(run, RunState::Training, me, 42, QDateTime::currentSecsSinceEpoch() - 600);
    QTRY_COMPARE(follower.state(), RunFollower::State::Stale);
    QVERIFY2(follower.description().contains(QStringLiteral("no update from")), qPrintable(follower.description()));
    QVERIFY(!follower.trainerActive());
    follower.setStaleAfter(120);

    // Training on this machine in a process that no longer exists: gone.
    const qint64 deadPid = qint64{1} << 30;  // above Linux's largest pid (2^22)
    writeStatus(run, RunState::Training, deadPid, 43, QDateTime::currentSecsSinceEpoch());
    QTRY_COMPARE(follower.state(), RunFollower::State::Gone);
    QVERIFY2(follower.description().contains(QStringLiteral("gone")), qPrintable(follower.description()));

    // Damaged: said, not thrown.
    QVERIFY(writeBytes(run + QStringLiteral("/status.json"), "{\"state\":"));
    QTRY_VERIFY(!follower.statusError().isEmpty());
    QCOMPARE(follower.state(), RunFollower::State::Unknown);
    QVERIFY(follower.statusError().contains(QStringLiteral("status.json")));
    QVERIFY(follower.description().contains(QStringLiteral("cannot be read")));

    // Finished: the files are read through the grace period, then only status.json.
    writeStatus(run, RunState::Finished, me, 100, QDateTime::currentSecsSinceEpoch());
    QTRY_COMPARE(follower.state(), RunFollower::State::Ended);
    QVERIFY2(follower.description().contains(QStringLiteral("finished on %1: step 100 / 100").arg(host)),
             qPrintable(follower.description()));
    QVERIFY(appendBytes(metrics, trainLine(100) + '\n'));
    QTRY_COMPARE(lines, 1);  // within the grace period
    QTRY_VERIFY(!follower.tailing());
    QVERIFY(appendBytes(metrics, trainLine(102) + '\n'));
    const qint64 looks = follower.looks();
    QTRY_VERIFY(follower.looks() > looks + 5);
    QCOMPARE(lines, 1);  // following has stopped
    // The run is continued: following resumes and picks up what was missed.
    writeStatus(run, RunState::Training, me, 102, QDateTime::currentSecsSinceEpoch());
    QTRY_COMPARE(follower.state(), RunFollower::State::Training);
    QTRY_COMPARE(lines, 2);
    QVERIFY(changes.count() >= 7);
}

void TestFollow::aLookStuckOnAHungMountHoldsNeitherTheWindowNorItsEnd()
{
    // Opening a FIFO for reading blocks until a writer comes: as a read on an
    // sshfs mount whose server stopped answering does.
    const QString run = m_dir.filePath(QStringLiteral("hung"));
    QVERIFY(QDir().mkpath(run));
    const QString fifo = run + QStringLiteral("/metrics.jsonl");
    QCOMPARE(::mkfifo(qPrintable(fifo), 0600), 0);

    auto* follower = new RunFollower(run);
    follower->setInterval(20);
    QTest::qWait(300);  // the event loop runs: the window is not blocked
    QCOMPARE(follower->looks(), qint64{0});  // the first look is still stuck

    QElapsedTimer clock;
    clock.start();
    delete follower;
    QVERIFY2(clock.elapsed() < 5000, "destroying the follower waited for the stuck look");

    // The writer comes; the look returns to no one and its thread ends.
    const int writer = ::open(qPrintable(fifo), O_WRONLY | O_NONBLOCK);
    QVERIFY(writer >= 0);
    ::close(writer);
    QTest::qWait(200);
}

void TestFollow::theWindowFollowsALiveTrainerThroughAKillAndATrimmingResume()
{
    const QString run = m_dir.filePath(QStringLiteral("live"));
    const QString config = m_dir.filePath(QStringLiteral("tiny.json"));
    QVERIFY(writeBytes(config, QJsonDocument(tinyDocument(1000000)).toJson()));
    MainWindow window;
    window.following().setInterval(100);
    window.show();

    QProcess trainer;
    trainer.setProcessChannelMode(QProcess::MergedChannels);
    trainer.start(QStringLiteral(WIDELAB_CLI), {QStringLiteral("train"), config, QStringLiteral("--out"), run});
    QVERIFY(trainer.waitForStarted(20000));
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(run + QStringLiteral("/config.json")), 60000);
    QVERIFY(window.openRun(run));
    RunFollower* follower = window.following().follower();
    QVERIFY(follower != nullptr);
    QSignalSpy rebuilt(follower, &RunFollower::metricsLines);

    // Live: training points arrive while the trainer runs, and the window says whose run it is.
    auto lossPoints = [&] { return window.runs().record(QDir(run).absolutePath())->curves.value(QStringLiteral("loss")).size(); };
    QTRY_VERIFY_WITH_TIMEOUT(lossPoints() >= 3, 60000);
    const qsizetype seen = lossPoints();
    QTRY_VERIFY_WITH_TIMEOUT(lossPoints() > seen + 3, 60000);
    QCOMPARE(trainer.state(), QProcess::Running);
    const QString host = QString::fromStdString(localHostName());
    QTRY_VERIFY2(window.stateLabel()->text().contains(
                     QStringLiteral("training on %1 (process %2)").arg(host).arg(trainer.processId())),
                 qPrintable(window.stateLabel()->text()));

    // Killed between checkpoints: frozen first, so that lines after the newest checkpoint are sure to exist.
    qint64 checkpoint = -1, logged = -1;
    for (int attempt = 0; attempt < 200; ++attempt) {
        ::kill(static_cast<pid_t>(trainer.processId()), SIGSTOP);
        checkpoint = newestCheckpointStep(run);
        logged = lastLoggedStep(run);
        if (checkpoint >= 40 && logged >= checkpoint + 4)
            break;
        ::kill(static_cast<pid_t>(trainer.processId()), SIGCONT);
        QTest::qWait(100);
    }
    QVERIFY2(checkpoint >= 40 && logged >= checkpoint + 4,
             qPrintable(QStringLiteral("checkpoint %1, logged %2").arg(checkpoint).arg(logged)));
    // Continue is refused while another process trains the run.
    QVERIFY2(window.startBlockedReason().contains(QStringLiteral("process %1 on %2 is training this run")
                                                      .arg(trainer.processId()).arg(host)),
             qPrintable(window.startBlockedReason()));
    trainer.kill();
    QVERIFY(trainer.waitForFinished(20000));
    QTRY_COMPARE_WITH_TIMEOUT(window.runs().record(QDir(run).absolutePath())->lastStep(), double(logged), 20000);
    QTRY_COMPARE_WITH_TIMEOUT(follower->state(), RunFollower::State::Gone, 20000);
    QVERIFY2(window.stateLabel()->text().contains(QStringLiteral("gone")), qPrintable(window.stateLabel()->text()));
    QVERIFY(lockIsFree(run));  // the follower watches, and holds no lock

    // A resume trims the lines after the checkpoint and retraces those steps; the window
    // rebuilds the run from the trimmed file and follows it to the end.
    const qint64 last = checkpoint + 30;
    QProcess resume;
    resume.setProcessChannelMode(QProcess::MergedChannels);
    resume.start(QStringLiteral(WIDELAB_CLI), {QStringLiteral("train"), QStringLiteral("--resume"), QStringLiteral("--out"),
                                               run, QStringLiteral("--steps"), QString::number(last)});
    QVERIFY(resume.waitForFinished(120000));
    QVERIFY2(resume.exitCode() == 0, resume.readAll().constData());  // it took the lock while the window watched
    QTRY_VERIFY2_WITH_TIMEOUT(window.stateLabel()->text().contains(QStringLiteral("finished on %1").arg(host)),
                              qPrintable(window.stateLabel()->text()), 20000);
    QCOMPARE(follower->state(), RunFollower::State::Ended);
    const RunRecord* record = window.runs().record(QDir(run).absolutePath());
    QTRY_COMPARE_WITH_TIMEOUT(record->lastStep(), double(last), 20000);
    bool fromStart = false;
    for (const QList<QVariant>& arguments : std::as_const(rebuilt))
        fromStart = fromStart || arguments.at(2).toBool();
    QVERIFY(fromStart);
    // Every step once, in order: nothing from the killed session's steps after the checkpoint stays.
    QCOMPARE(stepsOf(record->curves.value(QStringLiteral("loss"))), range(2, last, 2));
    // Validation every 20 steps, and at the last step.
    QCOMPARE(stepsOf(record->curves.value(QStringLiteral("validation_loss"))), range(20, last, 20) << last);
    // The resume's log lines came in live.
    QTRY_VERIFY(window.log()->visibleLines().join(QLatin1Char('\n')).contains(
        QStringLiteral("resumed from step-%1.pt").arg(checkpoint, 8, 10, QLatin1Char('0'))));
}

// Lines another process appends are checked as they come: each damaged one is
// skipped with one warning naming its line in the file, once, however often
// the follower looks; the good ones around it are drawn.
void TestFollow::theWindowSkipsDamagedLinesItFollowsWithOneWarningEach()
{
    const QString run = m_dir.filePath(QStringLiteral("damaged-live"));
    QVERIFY(QDir().mkpath(run));
    QVERIFY(writeBytes(run + QStringLiteral("/config.json"), QJsonDocument(tinyDocument(100)).toJson()));
    const QString metrics = run + QStringLiteral("/metrics.jsonl");
    QVERIFY(writeBytes(metrics, trainLine(2) + "\n{\"type\":\"train\",\"step\":4,\"wall_seconds\":4,\"loss\""));

    MainWindow window(m_dir.filePath(QStringLiteral("runs-damaged-live")));
    window.following().setInterval(20);
    window.show();
    QVERIFY(window.openRun(run));
    const RunRecord* record = window.runs().record(QDir(run).absolutePath());
    QVERIFY(record != nullptr);
    QCOMPARE(stepsOf(record->curves.value(QStringLiteral("loss"))), QVector<qint64>{2});

    QVERIFY(appendBytes(metrics, ":0.5}\n"                                                             // line 2 completed
                                 "\xff\xfe junk\n"                                                     // 3: not UTF-8
                                 "{\"type\":\"train\",\"step\":1e308,\"loss\":1}\n"                    // 4: step
                                 "{\"type\":\"probe\",\"step\":4,\"text\":\"x\",\"tokens\":[],\"attention\":[]}\n"  // 5
                                 + trainLine(6) + '\n'));                                             // 6
    QTRY_COMPARE(stepsOf(record->curves.value(QStringLiteral("loss"))), (QVector<qint64>{2, 4, 6}));
    QCOMPARE(record->lastStep(), 6.0);

    auto warningsFor = [&](int line) {
        QStringList found;
        for (const QString& shown : window.log()->visibleLines())
            if (shown.contains(QStringLiteral("metrics.jsonl, line %1:").arg(line)))
                found.append(shown);
        return found;
    };
    const qint64 looks = window.following().follower()->looks();
    QTRY_VERIFY(window.following().follower()->looks() > looks + 10);  // looked again and again: still one warning each
    const QList<QPair<int, QString>> expected{
        {3, QStringLiteral("not valid UTF-8")}, {4, QStringLiteral("2^53")}, {5, QStringLiteral("no tokens")}};
    for (const auto& [line, why] : expected) {
        const QStringList found = warningsFor(line);
        QVERIFY2(found.size() == 1 && found.front().contains(why),
                 qPrintable(QStringLiteral("line %1: %2").arg(line).arg(found.join(QLatin1Char('\n')))));
    }
    for (const int good : {1, 2, 6})
        QVERIFY(warningsFor(good).isEmpty());
    QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("3 damaged lines")),
             qPrintable(window.statusBar()->currentMessage()));
    // The chart's x range is the good steps', not 1e308's.
    CurvePlot* loss = window.curves()->chart(window.curves()->chartKeyForMetric(QStringLiteral("loss")));
    QVERIFY(loss != nullptr);
    loss->refreshNow();
    QCOMPARE(loss->xAxis->range().upper, 6.0);
}

// A run added for comparison while another process writes it (issue 37): its
// curves keep growing, the Runs panel says it trains, then that it finished;
// opened as the window's run, the comparison lets go of it.
void TestFollow::aComparedRunStaysLiveAndSaysWhenItEnds()
{
    const QString open = m_dir.filePath(QStringLiteral("compared-open"));
    const QString other = m_dir.filePath(QStringLiteral("compared-live"));
    for (const QString& run : {open, other}) {
        QVERIFY(QDir().mkpath(run));
        QVERIFY(writeBytes(run + QStringLiteral("/config.json"), QJsonDocument(tinyDocument(100)).toJson()));
        QVERIFY(writeBytes(run + QStringLiteral("/metrics.jsonl"), trainLine(2) + '\n'));
    }
    const qint64 me = QCoreApplication::applicationPid();
    writeStatus(other, RunState::Training, me, 2, QDateTime::currentSecsSinceEpoch());

    MainWindow window(m_dir.filePath(QStringLiteral("runs-compared")));
    window.compared().setInterval(20);
    window.show();
    QVERIFY(window.openRun(open));
    QVERIFY(window.compared().add(other));
    const QString id = QDir(other).absolutePath();
    QVERIFY(window.compared().follower(id));
    const RunRecord* record = window.runs().record(id);
    QVERIFY(record);
    auto itemText = [&window, &id] {
        for (int row = 0; row < window.runsList()->count(); ++row)
            if (window.runsList()->item(row)->data(Qt::UserRole).toString() == id)
                return window.runsList()->item(row)->text();
        return QString();
    };
    QTRY_COMPARE(itemText(), QStringLiteral("compared-live · training"));

    // Written on: read on, without re-adding it.
    QVERIFY(appendBytes(other + QStringLiteral("/metrics.jsonl"), trainLine(4) + '\n' + trainLine(6) + '\n'));
    QTRY_COMPARE(stepsOf(record->curves.value(QStringLiteral("loss"))), (QVector<qint64>{2, 4, 6}));
    CurvePlot* loss = window.curves()->chart(window.curves()->chartKeyForMetric(QStringLiteral("loss")));
    loss->refreshNow();
    QCOMPARE(loss->xAxis->range().upper, 6.0);

    // Its trainer ends: said in the Runs panel, the name kept.
    writeStatus(other, RunState::Finished, me, 6, QDateTime::currentSecsSinceEpoch());
    QTRY_COMPARE(itemText(), QStringLiteral("compared-live · finished"));
    QVERIFY(window.runsList()->findItems(QStringLiteral("compared-live · finished"), Qt::MatchExactly).size() == 1);

    // Opened as the window's run: its own follower takes over, the comparison's goes.
    QVERIFY(window.openRun(other));
    QVERIFY(!window.compared().follower(id));
    QVERIFY(window.compared().add(other));  // the open run added again: still one follower, the window's
    QVERIFY(!window.compared().follower(id));
    // The first run, no longer the open one, compared; then removed: followed no more.
    const QString openId = QDir(open).absolutePath();
    QVERIFY(window.compared().add(open));
    QVERIFY(window.compared().follower(openId));
    window.runs().remove(openId);
    QVERIFY(!window.compared().follower(openId));
}

// The status bar's label for a distributed run's processes.
QLabel* processesLabel(MainWindow& window)
{
    for (QLabel* label : window.findChildren<QLabel*>())
        if (label->accessibleName() == QLatin1String("Processes"))
            return label;
    return nullptr;
}

// Two processes of widelab-cli, followed: the window says how many, which rank
// is slowest and each one's pace (docs/distributed.md).
void TestFollow::theWindowShowsADistributedRunsProcesses()
{
    if (!distributedTrainingAvailable())
        QSKIP("this build trains in one process only");
    const QString run = m_dir.filePath(QStringLiteral("two"));
    const QString config = m_dir.filePath(QStringLiteral("two.json"));
    QVERIFY(writeBytes(config, QJsonDocument(tinyDocument(400)).toJson()));
    MainWindow window;
    window.following().setInterval(100);
    window.show();
    QProcess trainer;
    trainer.setProcessChannelMode(QProcess::MergedChannels);
    trainer.start(QStringLiteral(WIDELAB_CLI), {QStringLiteral("train"), config, QStringLiteral("--out"), run,
                                                QStringLiteral("--nproc"), QStringLiteral("2")});
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(run + QStringLiteral("/config.json")), 60000);
    QVERIFY(window.openRun(run));
    QLabel* label = processesLabel(window);
    QVERIFY(label != nullptr);
    QTRY_VERIFY2_WITH_TIMEOUT(label->text().contains(QRegularExpression(QStringLiteral("^2 processes, slowest rank [01] \\("))),
                              qPrintable(label->text()), 60000);
    QVERIFY2(label->toolTip().contains(QStringLiteral("rank 0: ")) && label->toolTip().contains(QStringLiteral("rank 1: ")),
             qPrintable(label->toolTip()));
    trainer.terminate();  // as Ctrl-C: one checkpoint, every rank exits 0
    QVERIFY(trainer.waitForFinished(60000));
    QCOMPARE(trainer.exitCode(), 0);
}

// A document that asks for two processes trains through widelab-cli; the
// controller tells it as it tells an in-process run, and Stop ends it with a checkpoint.
void TestFollow::severalProcessesTrainThroughTheController()
{
    if (!distributedTrainingAvailable())
        QSKIP("this build trains in one process only");
    qputenv("WIDELAB_CLI", WIDELAB_CLI);
    QJsonObject document = tinyDocument(40);
    QJsonObject train = document.value(QStringLiteral("train")).toObject();
    train.insert(QStringLiteral("processes"), 2);
    document.insert(QStringLiteral("train"), train);
    QString json = QString::fromUtf8(QJsonDocument(document).toJson());
    TrainingController controller;
    QSignalSpy started(&controller, &TrainingController::started);
    test::TrainRecords snapshots(&controller);
    QSignalSpy finished(&controller, &TrainingController::finished);
    const QString run = m_dir.filePath(QStringLiteral("controller"));
    QVERIFY(controller.start(json, run, false));
    QVERIFY(!controller.takesRequests());
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 120000);
    QCOMPARE(finished.at(0).at(0).toString(), QStringLiteral("completed"));
    QVERIFY2(finished.at(0).at(1).toString().contains(QStringLiteral("completed 40 steps")),
             qPrintable(finished.at(0).at(1).toString()));
    QCOMPARE(started.size(), 1);
    QVERIFY(started.at(0).at(0).value<RunStarted>().device.startsWith(QStringLiteral("2 processes")));
    QCOMPARE(snapshots.size(), 20);  // every second step, as log_every says
    const TrainingSnapshot last = snapshots.last();
    QCOMPARE(last.step, std::int64_t{40});
    QCOMPARE(last.world.size, std::int64_t{2});
    QCOMPARE(controller.state(), TrainingController::State::Idle);

    // Stopped: the processes agree on a step and save one checkpoint there.
    QVERIFY(controller.start(json.replace(QStringLiteral("\"steps\": 40"), QStringLiteral("\"steps\": 1000000")),
                             m_dir.filePath(QStringLiteral("stopped")), false));
    QTRY_VERIFY_WITH_TIMEOUT(snapshots.size() >= 25, 120000);
    controller.stop();
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 2, 120000);
    QCOMPARE(finished.at(1).at(0).toString(), QStringLiteral("stopped"));
    const QString message = finished.at(1).at(1).toString();
    const QRegularExpressionMatch step = QRegularExpression(QStringLiteral("stopped at step (\\d+)")).match(message);
    QVERIFY2(step.hasMatch(), qPrintable(message));
    QVERIFY(QFile::exists(m_dir.filePath(QStringLiteral("stopped/checkpoints/step-%1.pt"))
                              .arg(step.captured(1).toLongLong(), 8, 10, QLatin1Char('0'))));
    qunsetenv("WIDELAB_CLI");
}

QTEST_MAIN(TestFollow)
#include "tst_follow.moc"
