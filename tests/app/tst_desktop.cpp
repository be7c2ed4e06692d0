// Tests of the desktop app (app/gui): the training controller's start, pause,
// resume, stop and teardown sequences on a real training thread, and the main
// window driven as a user drives it: validation that blocks Start, a short
// training run with live curves, reopening the run, and closing mid-run.
// Runs offscreen (QT_QPA_PLATFORM=offscreen); no torch header is included here.
#include "insights/AttentionView.h"
#include "ConfigAssessment.h"
#include "insights/ExpertsView.h"
#include "insights/InsightHistory.h"
#include "InsightFacts.h"
#include "insights/InsightsView.h"
#include "configuration/ConfigPanel.h"
#include "curves/CurvePlot.h"
#include "curves/CurvesView.h"
#include "configuration/LogPanel.h"
#include "MainWindow.h"
#include "insights/PatchMaps.h"
#include "SampleSnapshot.h"
#include "SavedRunProbe.h"
#include "TrainingController.h"
#include "TrainRecords.h"
#include "config/Presets.h"
#include "runtime/Runtime.h"
#include "vocab/MetricsCodec.h"
#include "vocab/Snapshot.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTimer>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QtTest>

#include <cmath>
#include <functional>
#include <numbers>

using namespace widelab;

namespace {

// A metrics.jsonl line through the core's reader, as RunRecord::addMetricsLine reads it.
std::optional<MetricsRecord> decodedLine(const QByteArray& line, QString* reason)
{
    std::string why;
    std::optional<MetricsRecord> record =
        decodeMetricsLine(std::string_view(line.constData(), static_cast<std::size_t>(line.size())), &why);
    if (!record && reason)
        *reason = QString::fromStdString(why);
    return record;
}

// `line` as a line of `type` ("type" may be left out), read by the core's checked
// reader as RunRecord::add is given it: nullopt, saying why, for a line the
// reader refuses or one of another type.
std::optional<MetricsRecord> lineOfType(QJsonObject line, const char* type, QString* reason)
{
    if (!line.contains(QStringLiteral("type")))
        line.insert(QStringLiteral("type"), QLatin1String(type));
    std::optional<MetricsRecord> record = decodedLine(QJsonDocument(line).toJson(QJsonDocument::Compact), reason);
    if (record && record->typeName != type) {
        if (reason)
            *reason = QStringLiteral("a %1 line, not a %2 line").arg(QString::fromStdString(record->typeName), QLatin1String(type));
        return std::nullopt;
    }
    return record;
}

std::optional<TrainingSnapshot> snapshotFromJson(const QJsonObject& line, QString* reason)
{
    const std::optional<MetricsRecord> record = lineOfType(line, "train", reason);
    return record ? std::optional<TrainingSnapshot>(record->train) : std::nullopt;
}

std::optional<ProbeResult> probeFromJson(const QJsonObject& line, QString* reason)
{
    const std::optional<MetricsRecord> record = lineOfType(line, "probe", reason);
    return record ? std::optional<ProbeResult>(record->probe) : std::nullopt;
}

// A ListOps run small enough for a test: two blocks of width 32 with four experts.
QJsonObject tinyDocument(int steps, int logEvery = 2)
{
    const QByteArray json = QStringLiteral(R"({
        "name": "tiny",
        "model": {"vocab_size": 20, "max_len": 40, "d_model": 32, "layers": 2, "heads": 4, "ffn_dim": 64,
                  "num_classes": 10, "experts": 4, "top_k": 2, "pooling": "mean",
                  "share_attention": true, "share_ffn": true},
        "task": {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 256,
                 "validation_size": 64, "test_size": 64},
        "train": {"steps": %1, "batch_size": 16, "learning_rate": 0.003, "warmup_steps": 5,
                  "log_every": %2, "eval_every": 10, "checkpoint_every": 1000, "threads": 1}})")
                                .arg(steps)
                                .arg(logEvery)
                                .toUtf8();
    return QJsonDocument::fromJson(json).object();
}

// Writes `document` to `path`; false when the file cannot be written.
bool writeJson(const QString& path, const QJsonObject& document)
{
    QFile out(path);
    return out.open(QIODevice::WriteOnly) && out.write(QJsonDocument(document).toJson()) > 0;
}

QString compact(const QJsonObject& object) { return QString::fromUtf8(QJsonDocument(object).toJson(QJsonDocument::Compact)); }

QStringList checkpoints(const QString& run)
{
    return QDir(run + QStringLiteral("/checkpoints")).entryList({QStringLiteral("step-*.pt")}, QDir::Files, QDir::Name);
}

// Clicks the button of `box` that reads `text`; false when there is no such box or button.
bool clickButton(QMessageBox* box, const QString& text)
{
    if (box == nullptr)
        return false;
    for (QAbstractButton* button : box->buttons()) {
        if (button->text() == text) {
            button->click();
            return true;
        }
    }
    return false;
}

int metricLines(const QString& run, const QString& type)
{
    QFile in(run + QStringLiteral("/metrics.jsonl"));
    if (!in.open(QIODevice::ReadOnly))
        return 0;
    int count = 0;
    while (!in.atEnd())
        count += QJsonDocument::fromJson(in.readLine()).object().value(QStringLiteral("type")).toString() == type;
    return count;
}

}  // namespace

class TestDesktop : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void controllerStartsPausesResumesAndStops();
    void controllerRefusesASecondStartAndReportsFailures();
    void destroyingTheControllerSavesTheRun();
    void assessmentMarksFieldsAndCountsParameters();
    void invalidConfigurationBlocksStart();
    void aBadDataFileIsAMessageAndTheRunStays();
    void aRunTooLargeAsksToTrainAnyway();
    void trainingThroughTheWindowDrawsCurvesAndReopens();
    void snapshotsAndMetricsLinesGiveTheSameInsights();
    void metricsLinesAreCheckedAtTheBoundary();
    void aDamagedMetricsFileIsReadWithOneWarningPerBadLine();
    void damagedRunFilesAreMessagesNamingTheFile();
    void closingDuringTrainingAsksThenStopsAndSaves();
    void theWindowReportsWhatProductsRunOn();
    // Defects of a first hour (issue 16).
    void savingAShippedPresetAsksWhereAndLeavesItAsShipped();
    void pickingAPresetAsksBeforeDiscardingEdits();
    void theWindowFitsA1280x720Screen();
    void aNewRunStartsWithAFreshStatusBarAndLiveViews();
    void probeLinesCarryTheTrueClassWhenKnown();
    void theUserPresetsFolderFollowsTheEnvironment();
    void theThemeSwitchesEveryViewAndIsKept();
    void startContinuesByTheCoresRuleAndAsksBeforeMovingTheSchedule();
    void pausedTheStatusBarNamesTheLogsStep();
    void theConfigurationSaysWhatEachHeadsMapIsAndWhetherProbesAreImages();
    void anImageProbeGivesTheSamePictureLiveAndReadBack();

private:
    QTemporaryDir m_dir;
};

void TestDesktop::initTestCase()
{
    QVERIFY(m_dir.isValid());
    // Keep the user's settings out of it.
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("WideLabTests"));
    QSettings().clear();
    // The user's presets folder (Presets.h: userPresetDirectory) is the test's own.
    qputenv("WIDELAB_USER_PRESETS", m_dir.filePath(QStringLiteral("user-presets")).toLocal8Bit());
}

void TestDesktop::controllerStartsPausesResumesAndStops()
{
    TrainingController controller;
    test::TrainRecords snapshots(&controller);
    QSignalSpy finished(&controller, &TrainingController::finished);
    const QString run = m_dir.filePath(QStringLiteral("controller"));
    QVERIFY(controller.start(compact(tinyDocument(100000, 1)), run, false));
    QCOMPARE(controller.state(), TrainingController::State::Starting);
    QTRY_VERIFY_WITH_TIMEOUT(snapshots.count() >= 3, 60000);
    QCOMPARE(controller.state(), TrainingController::State::Running);

    controller.pause();
    QCOMPARE(controller.state(), TrainingController::State::Paused);
    // At most the step in flight finishes; then nothing arrives while paused.
    QTest::qWait(300);
    const qsizetype paused = snapshots.count();
    QTest::qWait(500);
    QCOMPARE(snapshots.count(), paused);

    controller.saveCheckpoint();  // served while paused
    QTRY_VERIFY_WITH_TIMEOUT(!checkpoints(run).isEmpty(), 30000);

    controller.resume();
    QCOMPARE(controller.state(), TrainingController::State::Running);
    QTRY_VERIFY_WITH_TIMEOUT(snapshots.count() > paused + 2, 30000);

    controller.stop();
    QCOMPARE(controller.state(), TrainingController::State::Stopping);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QCOMPARE(finished.first().at(0).toString(), QStringLiteral("stopped"));
    QCOMPARE(controller.state(), TrainingController::State::Idle);
    const auto last = snapshots.last();
    QVERIFY(checkpoints(run).contains(QStringLiteral("step-%1.pt").arg(last.step, 8, 10, QLatin1Char('0'))));

    // The same controller trains again, continuing the run: no leftover stop or pause.
    QVERIFY(controller.start(compact(tinyDocument(last.step + 3, 1)), run, true));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
    QCOMPARE(finished.last().at(0).toString(), QStringLiteral("completed"));
    QCOMPARE(snapshots.last().step, last.step + 3);
}

void TestDesktop::controllerRefusesASecondStartAndReportsFailures()
{
    TrainingController controller;
    QSignalSpy finished(&controller, &TrainingController::finished);
    const QString run = m_dir.filePath(QStringLiteral("busy"));
    QVERIFY(controller.start(compact(tinyDocument(100000)), run, false));
    QVERIFY(!controller.start(compact(tinyDocument(10)), m_dir.filePath(QStringLiteral("other")), false));
    controller.stop();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);

    // A language model on a file that is not there: the run fails with the key and the file.
    QJsonObject document = tinyDocument(10);
    QJsonObject task = document.value(QStringLiteral("task")).toObject();
    task.insert(QStringLiteral("kind"), QStringLiteral("language_model"));
    task.insert(QStringLiteral("path"), m_dir.filePath(QStringLiteral("no-such-file.txt")));
    document.insert(QStringLiteral("task"), task);
    QVERIFY(controller.start(compact(document), m_dir.filePath(QStringLiteral("failing")), false));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
    QCOMPARE(finished.last().at(0).toString(), QStringLiteral("failed"));
    const QString message = finished.last().at(1).toString();
    QVERIFY2(message.contains(QStringLiteral("task.path")) && message.contains(QStringLiteral("no-such-file.txt")),
             qPrintable(message));
    QCOMPARE(controller.state(), TrainingController::State::Idle);

    // A run directory another run holds: the lock's message reaches the user.
    QVERIFY(controller.start(compact(tinyDocument(100000)), m_dir.filePath(QStringLiteral("held")), false));
    QTRY_COMPARE_WITH_TIMEOUT(controller.state(), TrainingController::State::Running, 60000);
    TrainingController second;
    QSignalSpy secondFinished(&second, &TrainingController::finished);
    QVERIFY(second.start(compact(tinyDocument(100000)), m_dir.filePath(QStringLiteral("held")), true));
    QTRY_COMPARE_WITH_TIMEOUT(secondFinished.count(), 1, 60000);
    QVERIFY2(secondFinished.first().at(1).toString().contains(QStringLiteral("in use by another training run")),
             qPrintable(secondFinished.first().at(1).toString()));
    controller.stop();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 60000);
}

void TestDesktop::destroyingTheControllerSavesTheRun()
{
    const QString run = m_dir.filePath(QStringLiteral("teardown"));
    {
        TrainingController controller;
        test::TrainRecords snapshots(&controller);
        QVERIFY(controller.start(compact(tinyDocument(100000, 1)), run, false));
        QTRY_VERIFY_WITH_TIMEOUT(snapshots.count() >= 2, 60000);
    }  // the destructor stops the run and waits for its checkpoint
    QCOMPARE(checkpoints(run).size(), 1);
}

void TestDesktop::assessmentMarksFieldsAndCountsParameters()
{
    // WideNet's sharing: attention and MoE once, LayerNorms per block. By hand:
    // token 20*32 + position 40*32 = 1920; attention 3*32*32+96 + 32*32+32 = 4224;
    // experts 4*(64*32+64) + 4*(32*64+32) = 16768; router 4*32 = 128;
    // LayerNorms 2 blocks * 2 * 64 = 256 and the final 64; classifier 32*10+10 = 330.
    const ConfigAssessment tiny = assessDocument(tinyDocument(10));
    QVERIFY(tiny.valid);
    QCOMPARE(tiny.cost.stored, qint64{1920 + 4224 + 16768 + 128 + 256 + 64 + 330});
    QCOMPARE(tiny.sketch.layers, 2);
    QVERIFY(tiny.sketch.shareAttention && tiny.sketch.shareFfn && !tiny.sketch.shareLayerNorm);
    QCOMPARE(tiny.sketch.experts, 4);

    QJsonObject broken = tinyDocument(10);
    QJsonObject model = broken.value(QStringLiteral("model")).toObject();
    model.insert(QStringLiteral("top_k"), 5);
    model.insert(QStringLiteral("expertz"), 3);
    broken.insert(QStringLiteral("model"), model);
    const ConfigAssessment bad = assessDocument(broken);
    QVERIFY(!bad.valid);
    QStringList keys;
    for (const FieldIssue& issue : bad.issues)
        keys.append(issue.key);
    QVERIFY2(keys.contains(QStringLiteral("model.top_k")), qPrintable(keys.join(QLatin1Char(' '))));
    QVERIFY2(keys.contains(QStringLiteral("model.expertz")), qPrintable(keys.join(QLatin1Char(' '))));
}

void TestDesktop::invalidConfigurationBlocksStart()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-invalid")));
    const QString file = m_dir.filePath(QStringLiteral("tiny.json"));
    QVERIFY(writeJson(file, tinyDocument(10)));
    QVERIFY(window.openConfiguration(file));
    QVERIFY(window.action(QStringLiteral("start"))->isEnabled());

    // Two experts with top-2 is fine; then one expert fewer than top_k asks for is not.
    auto* experts = qobject_cast<QAbstractSpinBox*>(window.configPanel()->field(QStringLiteral("model.experts")));
    QVERIFY(experts);
    auto* topK = window.configPanel()->field(QStringLiteral("model.top_k"));
    QVERIFY(topK);
    QJsonObject document = window.configPanel()->document();
    QJsonObject model = document.value(QStringLiteral("model")).toObject();
    model.insert(QStringLiteral("experts"), 2);
    model.insert(QStringLiteral("top_k"), 3);
    document.insert(QStringLiteral("model"), model);
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    QTRY_VERIFY(!window.action(QStringLiteral("start"))->isEnabled());
    QVERIFY2(window.startBlockedReason().contains(QStringLiteral("model.top_k")), qPrintable(window.startBlockedReason()));
    QVERIFY(window.action(QStringLiteral("start"))->toolTip().contains(QStringLiteral("model.top_k")));
    QVERIFY(!window.startTraining());
    QVERIFY(window.runsList()->count() == 0);

    // Typing a valid number back into the experts field (as a user does) unblocks Start.
    experts->setFocus();
    experts->selectAll();
    QTest::keyClicks(experts, QStringLiteral("4"));
    QTest::keyClick(experts, Qt::Key_Tab);
    QTRY_VERIFY(window.action(QStringLiteral("start"))->isEnabled());
    QVERIFY(window.startBlockedReason().isEmpty());
}

void TestDesktop::aRunTooLargeAsksToTrainAnyway()
{
    // A language model whose logits for one batch (32 x 512 tokens over 2^20 ids)
    // take 128 GiB with their gradient: refused up front on a machine with less
    // (skipped on one with more); trained anyway, it runs out of memory cleanly.
    QFile meminfo(QStringLiteral("/proc/meminfo"));
    if (meminfo.open(QIODevice::ReadOnly)) {
        const QRegularExpressionMatch available =
            QRegularExpression(QStringLiteral("MemAvailable:\\s+(\\d+) kB")).match(QString::fromLatin1(meminfo.readAll()));
        if (available.hasMatch() && available.captured(1).toLongLong() > (qint64{140} << 20))
            QSKIP("this machine has more than 128 GiB available");
    }
    const QString data = m_dir.filePath(QStringLiteral("letters.txt"));
    QFile text(data);
    QVERIFY(text.open(QIODevice::WriteOnly));
    text.write(QByteArray("abcdefghij").repeated(4000));  // 78 windows of 513 bytes: every split has some
    text.close();
    QJsonObject document = tinyDocument(2);
    QJsonObject model = document.value(QStringLiteral("model")).toObject();
    model.insert(QStringLiteral("head"), QStringLiteral("language_model"));
    model.insert(QStringLiteral("vocab_size"), 1 << 20);
    model.insert(QStringLiteral("max_len"), 512);
    model.insert(QStringLiteral("d_model"), 8);
    model.insert(QStringLiteral("heads"), 1);
    model.insert(QStringLiteral("ffn_dim"), 8);
    model.insert(QStringLiteral("layers"), 1);
    for (const char* key : {"num_classes", "experts", "top_k", "pooling", "share_attention", "share_ffn"})
        model.remove(QLatin1String(key));
    document.insert(QStringLiteral("model"), model);
    document.insert(QStringLiteral("task"), QJsonObject{{QStringLiteral("kind"), QStringLiteral("language_model")},
                                                         {QStringLiteral("path"), data}});
    QJsonObject train = document.value(QStringLiteral("train")).toObject();
    train.insert(QStringLiteral("batch_size"), 32);
    document.insert(QStringLiteral("train"), train);
    const QString file = m_dir.filePath(QStringLiteral("too-large.json"));
    QVERIFY(writeJson(file, document));

    MainWindow window(m_dir.filePath(QStringLiteral("runs-too-large")));
    window.show();
    QVERIFY(window.openConfiguration(file));
    QVERIFY2(window.startBlockedReason().isEmpty(), qPrintable(window.startBlockedReason()));
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QVERIFY(window.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QCOMPARE(finished.first().at(0).toString(), QStringLiteral("insufficient-memory"));
    auto* question = window.findChild<QMessageBox*>(QStringLiteral("memoryQuestion"));
    QVERIFY(question);
    QVERIFY2(question->text().contains(QStringLiteral("GiB")) && question->text().contains(QStringLiteral("train.batch_size")),
             qPrintable(question->text()));
    QVERIFY(window.findChild<QMessageBox*>(QStringLiteral("problem")) == nullptr);
    const QString run = window.runs().current();

    // Train Anyway: the same run folder, past the estimate, into a clean out-of-memory stop.
    QAbstractButton* anyway = nullptr;
    for (QAbstractButton* button : question->buttons())
        if (button->text() == QStringLiteral("Train Anyway"))
            anyway = button;
    QVERIFY(anyway);
    anyway->click();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 120000);
    QVERIFY2(finished.at(1).at(0).toString() == QStringLiteral("out-of-memory"),
             qPrintable(finished.at(1).at(0).toString() + QStringLiteral(": ") + finished.at(1).at(1).toString()));
    QCOMPARE(window.runs().current(), run);
    QCOMPARE(window.runsList()->count(), 1);
    QVERIFY(!window.controller().busy());
}

void TestDesktop::trainingThroughTheWindowDrawsCurvesAndReopens()
{
    const QString runs = m_dir.filePath(QStringLiteral("runs-window"));
    QString runDirectory;
    int lossPoints = 0;
    {
        MainWindow window(runs);
        window.show();
        const QString file = m_dir.filePath(QStringLiteral("tiny20.json"));
        QVERIFY(writeJson(file, tinyDocument(20)));
        QVERIFY(window.openConfiguration(file));
        QSignalSpy finished(&window.controller(), &TrainingController::finished);
        window.action(QStringLiteral("start"))->trigger();
        QVERIFY(window.configPanel()->isReadOnly());
        QVERIFY(!window.action(QStringLiteral("start"))->isEnabled());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
        QCOMPARE(finished.first().at(0).toString(), QStringLiteral("completed"));
        QVERIFY(!window.configPanel()->isReadOnly());

        runDirectory = window.runs().current();
        QVERIFY(runDirectory.startsWith(runs));
        // 20 steps logged every 2: ten training points, two validation points (steps 10, 20).
        CurvePlot* loss = window.curves()->chart(QStringLiteral("loss"));
        QVERIFY(loss);
        lossPoints = static_cast<int>(loss->points(runDirectory, QStringLiteral("loss")).size());
        QCOMPARE(lossPoints, 10);
        QCOMPARE(loss->points(runDirectory, QStringLiteral("validation_loss")).size(), qsizetype{2});
        QCOMPARE(loss->points(runDirectory, QStringLiteral("loss")).last().step, 20.0);
        QCOMPARE(metricLines(runDirectory, QStringLiteral("train")), 10);
        // The log panel shows the run's log: what setting up said (the document's
        // warning that checkpoint_every exceeds the steps, then the device), then
        // each validation as it happened.
        const QStringList logLines = window.log()->visibleLines();
        QVERIFY2(logLines.size() >= 2 && logLines.at(0).contains(QStringLiteral("checkpoint_every"))
                     && logLines.at(1).contains(QStringLiteral("device cpu")),
                 qPrintable(logLines.join(QLatin1Char('\n'))));
        QCOMPARE(logLines.filter(QStringLiteral("validation at step")).size(), 2);
        // The insight views got every snapshot and the default probe at the
        // start and with each validation.
        const RunRecord* live = window.runs().record(runDirectory);
        QVERIFY(live);
        QCOMPARE(live->insights->states().size(), qsizetype{10});
        QCOMPARE(live->insights->states().last().routing.size(), qsizetype{2});  // both blocks route
        QCOMPARE(live->insights->probeTexts().size(), qsizetype{1});
        const QString probe = live->insights->probeTexts().first();
        QList<qint64> captured;
        for (const ProbeResult& c : live->insights->captures(probe))
            captured << c.step;
        QCOMPARE(captured, (QList<qint64>{0, 10, 20}));
        window.action(QStringLiteral("view1"))->trigger();  // Alt+2: attention
        QCOMPARE(window.centralTabs()->currentWidget(), static_cast<QWidget*>(window.insights()));
        window.insights()->refreshNow();
        const ProbeResult* shown = window.insights()->attention()->primaryPane()->capture();
        QVERIFY(shown);
        QCOMPARE(shown->step, qint64{20});
        QCOMPARE(probeHeads(*shown), 4);
        window.insights()->setStep(10);  // frozen on an earlier step
        QCOMPARE(window.insights()->attention()->primaryPane()->capture()->step, qint64{10});
        window.action(QStringLiteral("live"))->trigger();
        QCOMPARE(window.insights()->shownStep(), qint64{-1});
        // The run has done its 20 steps: Start would continue it, and says why it cannot.
        QAction* start = window.action(QStringLiteral("start"));
        QCOMPARE(start->text(), QStringLiteral("&Continue"));
        QVERIFY(!start->isEnabled());
        QVERIFY2(window.startBlockedReason().contains(QStringLiteral("done all its 20 steps")),
                 qPrintable(window.startBlockedReason()));
        // Raising train.steps continues the same run from its checkpoint.
        QJsonObject document = window.configPanel()->document();
        QJsonObject train = document.value(QStringLiteral("train")).toObject();
        train.insert(QStringLiteral("steps"), 24);
        document.insert(QStringLiteral("train"), train);
        window.configPanel()->setDocument(document);
        Q_EMIT window.configPanel()->documentChanged();
        QTRY_VERIFY(start->isEnabled());
        QCOMPARE(start->text(), QStringLiteral("&Continue"));
        start->trigger();
        QVERIFY(clickButton(window.findChild<QMessageBox*>(QStringLiteral("scheduleQuestion")), QStringLiteral("Continue")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 120000);
        QCOMPARE(finished.last().at(0).toString(), QStringLiteral("completed"));
        QCOMPARE(window.runs().current(), runDirectory);
        QCOMPARE(window.runsList()->count(), 1);
        lossPoints = static_cast<int>(loss->points(runDirectory, QStringLiteral("loss")).size());
        QCOMPARE(lossPoints, 12);
        QCOMPARE(loss->points(runDirectory, QStringLiteral("loss")).last().step, 24.0);
        QVERIFY(!window.log()->visibleLines().filter(QStringLiteral("resumed from step-00000020.pt")).isEmpty());
        captured.clear();
        for (const ProbeResult& c : window.runs().record(runDirectory)->insights->captures(probe))
            captured << c.step;
        QCOMPARE(captured, (QList<qint64>{0, 10, 20, 24}));
    }
    // Reopened in a new window: the same curves, read from the run directory.
    MainWindow reopened(runs);
    QVERIFY(reopened.openRun(runDirectory));
    CurvePlot* loss = reopened.curves()->chart(QStringLiteral("loss"));
    QCOMPARE(static_cast<int>(loss->points(runDirectory, QStringLiteral("loss")).size()), lossPoints);
    QCOMPARE(reopened.configPanel()->document().value(QStringLiteral("name")).toString(), QStringLiteral("tiny"));
    QCOMPARE(reopened.log()->visibleLines().filter(QStringLiteral("validation at step 20")).size(), 1);
    // The insights read back from metrics.jsonl: 12 states, 4 captures.
    const RunRecord* read = reopened.runs().record(runDirectory);
    QCOMPARE(read->insights->states().size(), qsizetype{12});
    QCOMPARE(read->insights->captures(read->insights->probeTexts().value(0)).size(), qsizetype{4});
    QCOMPARE(reopened.insights()->currentRun(), runDirectory);
    // A text probed on the saved run: read from its newest checkpoint off the
    // GUI thread, shown at that checkpoint's step, and kept in config.json.
    const QString text = QStringLiteral("[MAX 1 [MIN 2 3 ] ]");
    Q_EMIT reopened.insights()->probeRequested({runDirectory}, text);
    QTRY_COMPARE_WITH_TIMEOUT(read->insights->captures(text).size(), qsizetype{1}, 30000);
    QCOMPARE(read->insights->captures(text).first().step, qint64{24});
    QFile config(runDirectory + QStringLiteral("/config.json"));
    QVERIFY(config.open(QIODevice::ReadOnly));
    const QJsonArray probes =
        QJsonDocument::fromJson(config.readAll()).object().value(QStringLiteral("train")).toObject().value(QStringLiteral("probes")).toArray();
    QCOMPARE(probes.size(), 2);
    QCOMPARE(probes.last().toString(), text);
    // ... and its capture with the run's metrics: a window opened later shows it.
    MainWindow again(runs);
    QVERIFY(again.openRun(runDirectory));
    QCOMPARE(again.runs().record(runDirectory)->insights->captures(text).size(), qsizetype{1});
    QCOMPARE(again.runs().record(runDirectory)->insights->captures(text).first().step, qint64{24});

    // Overlaid with a second run: both in the charts, each its own colour.
    const QString other = m_dir.filePath(QStringLiteral("controller"));  // trained by the first test
    QVERIFY(reopened.runs().addToComparison(other));
    QCOMPARE(reopened.curves()->runs().size(), 2);
    QVERIFY(reopened.curves()->runColor(runDirectory) != reopened.curves()->runColor(QDir(other).absolutePath()));
    QVERIFY(!loss->points(QDir(other).absolutePath(), QStringLiteral("loss")).isEmpty());
    // Unticking a run in the runs list takes it out of the charts.
    QListWidgetItem* item = reopened.runsList()->item(1);
    item->setCheckState(Qt::Unchecked);
    QCOMPARE(reopened.curves()->runs().size(), 1);

    // Not a run: a clear message, nothing added.
    QVERIFY(!reopened.runs().addToComparison(m_dir.filePath(QStringLiteral("nowhere"))));
    QCOMPARE(reopened.runsList()->count(), 2);
}

// The views see the same data live (the core's snapshot and probe as they are)
// and read back (parsed from the metrics.jsonl line the core writes for it).
void TestDesktop::snapshotsAndMetricsLinesGiveTheSameInsights()
{
    const TrainingSnapshot s = test::snapshotWithInsights(30);

    ProbeResult probe;
    probe.step = 30;
    probe.text = "a b";
    probe.tokens = {"a", "b"};
    probe.attention = {{{{0.25f, 0.75f}, {1.0f, 0.0f}}}};  // one layer, one head
    probe.experts = {{{2, -1}, {0, 1}}};
    probe.prediction = {0.125f, 0.875f};
    probe.predictionLabels = {"0", "1"};

    const QJsonObject line = QJsonDocument::fromJson(QByteArray::fromStdString(toJson(s).dump())).object();
    QString reason;
    const std::optional<TrainingSnapshot> read = snapshotFromJson(line, &reason);
    QVERIFY2(read.has_value(), qPrintable(reason));
    for (const TrainingSnapshot& state : {s, *read}) {
        QCOMPARE(state.step, std::int64_t{30});
        QCOMPARE(state.routing.size(), std::size_t{1});
        QCOMPARE(state.routing[0].block, std::int64_t{1});
        QVERIFY(state.routing[0].tokensPerExpert == (std::vector<std::int64_t>{5, 0, 7}));
        QVERIFY(state.routing[0].droppedPercentPerChoice == (std::vector<double>{12.5, 40.0}));
        QCOMPARE(state.routing[0].unusedExperts, std::int64_t{1});
        QCOMPARE(state.routing[0].routerEntropy, 0.75);
        QVERIFY(state.routing[0].loadVsFair == (std::vector<double>{1.25, 0.0, 1.75}));
        QCOMPARE(state.routing[0].share(2), 7.0 / 12.0);
        QVERIFY(state.attentionGamma == (std::vector<std::vector<float>>{{1.0f, 0.5f}, {2.0f, 1.5f}}));
        QVERIFY(state.ffnBeta == (std::vector<std::vector<float>>{{0.125f, 0.0f}, {0.0f, -0.125f}}));
        QCOMPARE(state.divergence.gammaAllPairs, 0.25);
        QCOMPARE(state.divergence.betaElementwise, 0.0625);
        QCOMPARE(state.attentionDivergence.gammaElementwise, 3.5);
        QCOMPARE(state.paths.size(), std::size_t{1});
        QCOMPARE(state.paths[0].sublayer, std::string("ffn"));
        QCOMPARE(state.paths[0].paths, std::int64_t{2});
        QVERIFY(state.paths[0].alpha == (std::vector<float>{0.5f, 0.25f, 0.125f, 0.0625f}));
        QCOMPARE(state.paths[0].featureName(3), std::string("mean without path 2"));
        QCOMPARE(state.paths[0].beta, 0.75f);
        QCOMPARE(state.paths[0].diversity, 0.375);
    }
    const QJsonObject probeLine = QJsonDocument::fromJson(QByteArray::fromStdString(toJson(probe).dump())).object();
    const std::optional<ProbeResult> readProbe = probeFromJson(probeLine, &reason);
    QVERIFY2(readProbe.has_value(), qPrintable(reason));
    for (const ProbeResult& c : {probe, *readProbe}) {
        QCOMPARE(c.step, std::int64_t{30});
        QCOMPARE(probeTextOf(c), QStringLiteral("a b"));
        QCOMPARE(probeTokens(c), (QStringList{"a", "b"}));
        QCOMPARE(probeLayers(c), 1);
        QCOMPARE(probeHeads(c), 1);
        QCOMPARE(probeWeight(c, 0, 0, 0, 1), 0.75f);  // row = query
        QCOMPARE(probeWeight(c, 0, 0, 1, 0), 1.0f);
        QVERIFY(c.experts == (std::vector<std::vector<std::vector<std::int64_t>>>{{{2, -1}, {0, 1}}}));
        QVERIFY(c.prediction == (std::vector<float>{0.125f, 0.875f}));
        QCOMPARE(probeLabels(c), (QStringList{"0", "1"}));
    }
}

void TestDesktop::aBadDataFileIsAMessageAndTheRunStays()
{
    // A language model on a file that is not UTF-8, read with the word tokenizer:
    // valid as a configuration, it fails once training reads the file.
    const QString data = m_dir.filePath(QStringLiteral("notes.bin"));
    QFile bytes(data);
    QVERIFY(bytes.open(QIODevice::WriteOnly));
    bytes.write(QByteArray("some words \xFF\xFE then more words\n").repeated(20));
    bytes.close();
    QJsonObject document = tinyDocument(10);
    document.insert(QStringLiteral("name"), QStringLiteral("Transformer 6x8 (Wide Attention, laptop scale)"));
    QJsonObject model = document.value(QStringLiteral("model")).toObject();
    model.insert(QStringLiteral("head"), QStringLiteral("language_model"));
    model.insert(QStringLiteral("vocab_size"), 64);
    document.insert(QStringLiteral("model"), model);
    document.insert(QStringLiteral("task"), QJsonObject{{QStringLiteral("kind"), QStringLiteral("language_model")},
                                                         {QStringLiteral("path"), data},
                                                         {QStringLiteral("tokenizer"), QStringLiteral("word")}});
    const QString file = m_dir.filePath(QStringLiteral("bad-data.json"));
    QVERIFY(writeJson(file, document));

    MainWindow window(m_dir.filePath(QStringLiteral("runs-bad-data")));
    window.show();
    QVERIFY(window.openConfiguration(file));
    QVERIFY2(window.startBlockedReason().isEmpty(), qPrintable(window.startBlockedReason()));
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QVERIFY(window.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QCOMPARE(finished.first().at(0).toString(), QStringLiteral("failed"));

    // Told in words, naming the file, the place and what would work; the window goes on.
    auto* problem = window.findChild<QMessageBox*>(QStringLiteral("problem"));
    QVERIFY(problem);
    QVERIFY2(problem->text().contains(data) && problem->text().contains(QStringLiteral("invalid UTF-8"))
                 && problem->text().contains(QStringLiteral("byte tokenizer")),
             qPrintable(problem->text()));
    QVERIFY(!window.controller().busy());
    QVERIFY(!window.configPanel()->isReadOnly());
    // The run stays listed with its log; with no checkpoint there is nothing to
    // continue, so Start starts afresh.
    QCOMPARE(window.runsList()->count(), 1);
    QVERIFY(QFileInfo::exists(window.runs().current() + QStringLiteral("/log.txt")));
    // Named after the configuration, in whole words short enough for a legend, and the time.
    const QString folder = QFileInfo(window.runs().current()).fileName();
    QVERIFY2(QRegularExpression(QStringLiteral("^transformer-6x8-wide-\\d{8}-\\d{6}$")).match(folder).hasMatch(),
             qPrintable(folder));
    QCOMPARE(window.action(QStringLiteral("start"))->text(), QStringLiteral("&Start"));
    QVERIFY(window.action(QStringLiteral("start"))->isEnabled());
}

namespace {

// metrics.jsonl lines as the trainer writes them (docs/run-directory.md), small.
const QByteArray kGoodTrain =
    R"({"type":"train","step":2,"wall_seconds":1.5,"loss":2.5,"accuracy":0.25,)"
    R"("routing":[{"block":1,"tokens_per_expert":[5,0,7],"dropped_percent_per_choice":[12.5,40],"unused_experts":1,)"
    R"("router_entropy":0.75,"load_vs_fair":[1.25,0,1.75]}],)"
    R"("layernorm":{"attention_gamma":[[1,0.5],[2,1.5]],"attention_beta":[[0,-0.25],[0.25,0.5]],)"
    R"("ffn_gamma":[[1,1],[0.75,1.25]],"ffn_beta":[[0.125,0],[0,-0.125]]},)"
    R"("paths":[{"block":0,"sublayer":"ffn","paths":2,"alpha":[0.5,0.25,0.125,0.0625],"beta":0.75,"diversity":0.375}]})";
const QByteArray kGoodProbe =
    R"({"type":"probe","step":4,"text":"a b","tokens":["a","b"],"attention":[[[[0.25,0.75],[1,0]]]],)"
    R"("experts":[[[2,-1],[0,1]]],"prediction":[0.125,0.875],"prediction_labels":["0","1"]})";

QByteArray trainAt(qint64 step, double loss)
{
    return QStringLiteral(R"({"type":"train","step":%1,"wall_seconds":%1,"loss":%2})").arg(step).arg(loss).toUtf8();
}

// The log lines that name `line` of metrics.jsonl.
QStringList warningsFor(const LogPanel* log, int line)
{
    QStringList found;
    for (const QString& shown : log->visibleLines())
        if (shown.contains(QStringLiteral("metrics.jsonl, line %1:").arg(line)))
            found.append(shown);
    return found;
}

}  // namespace

// Every line is checked where it is decoded: types, finite numbers, a step from
// 0 to 2^53, and shapes that agree; the reason says what is wrong, and where.
void TestDesktop::metricsLinesAreCheckedAtTheBoundary()
{
    QString reason;
    const std::optional<MetricsRecord> train = decodedLine(kGoodTrain, &reason);
    QVERIFY2(train.has_value(), qPrintable(reason));
    QCOMPARE(train->type, MetricsRecord::Type::Train);
    QCOMPARE(train->step, qint64{2});
    QCOMPARE(train->train.wallSeconds, 1.5);
    QCOMPARE(train->values.at("loss"), 2.5);
    QVERIFY(!train->values.count("gradient_norm"));  // not written: no point, not a 0
    QCOMPARE(train->train.routing.size(), std::size_t{1});
    QCOMPARE(train->train.paths.size(), std::size_t{1});
    const std::optional<MetricsRecord> probe = decodedLine(kGoodProbe, &reason);
    QVERIFY2(probe.has_value(), qPrintable(reason));
    QCOMPARE(probeTokenCount(probe->probe), 2);
    QCOMPARE(probeWeight(probe->probe, 0, 0, 0, 1), 0.75f);
    // null is how the trainer writes NaN: a gap, not an error.
    const std::optional<MetricsRecord> diverged = decodedLine(R"({"type":"train","step":3,"loss":null})", &reason);
    QVERIFY2(diverged.has_value(), qPrintable(reason));
    QVERIFY(std::isnan(diverged->values.at("loss")));
    // A type this version does not know passes untouched.
    QCOMPARE(decodedLine(R"({"type":"note","text":1})", &reason)->type, MetricsRecord::Type::Other);

    auto replaced = [](QByteArray line, const char* from, const char* to) { return line.replace(from, to); };
    const QList<QPair<QByteArray, QString>> bad{
        {"not JSON at all", QStringLiteral("not JSON")},
        {QByteArray("\x00\x01\x02\x03 blob", 9), QStringLiteral("not JSON")},
        {QByteArray("PK\x03\x04\xde\xad\xbe\xef", 8), QStringLiteral("not valid UTF-8 (byte 7")},
        {R"({"type":"probe","step":1,"text":"caf)" + QByteArray("\xe9") + R"(","tokens":["a"]})",
         QStringLiteral("not valid UTF-8")},
        {"[1, 2]", QStringLiteral("not a JSON object")},
        {R"({"step":1})", QStringLiteral("\"type\" is missing")},
        {R"({"type":"train","step":1e308,"loss":1})", QStringLiteral("\"step\" is 1e+308, not a whole number from 0 to 2^53")},
        {R"({"type":"train","step":9007199254740994})", QStringLiteral("2^53")},  // 2^53 + 2
        {R"({"type":"eval","step":-2,"split":"validation","loss":1,"accuracy":0})", QStringLiteral("\"step\" is -2")},
        {R"({"type":"train","step":2.5})", QStringLiteral("not a whole number")},
        {R"({"type":"train","step":"7"})", QStringLiteral("\"step\" is \"7\"")},
        {R"({"type":"train","loss":1})", QStringLiteral("no \"step\"")},
        {R"({"type":"train","step":1,"loss":"low"})", QStringLiteral("\"loss\" is \"low\", not a number")},
        {R"({"type":"train","step":1,"wall_seconds":-5})", QStringLiteral("below 0")},
        {replaced(kGoodTrain, "\"load_vs_fair\":[1.25,0,1.75]", "\"load_vs_fair\":[1.25]"),
         QStringLiteral("\"routing[0].load_vs_fair\" has 1 values for 3 experts")},
        {replaced(kGoodTrain, "\"tokens_per_expert\":[5,0,7]", "\"tokens_per_expert\":[]"), QStringLiteral("0 experts")},
        {replaced(kGoodTrain, "\"tokens_per_expert\":[5,0,7]", "\"tokens_per_expert\":[5,-1,7]"),
         QStringLiteral("\"routing[0].tokens_per_expert[1]\" is -1")},
        {replaced(kGoodTrain, "\"ffn_gamma\":[[1,1],[0.75,1.25]]", "\"ffn_gamma\":[[1,1],[0.75]]"),
         QStringLiteral("\"layernorm.ffn_gamma[1]\" has 1 channels but")},
        {replaced(kGoodTrain, "\"ffn_beta\":[[0.125,0],[0,-0.125]]", "\"ffn_beta\":[[0.125,0]]"),
         QStringLiteral("\"layernorm.ffn_gamma\" is 2 x 2 but \"layernorm.ffn_beta\" is 1 x 2")},
        {replaced(kGoodTrain, "\"alpha\":[0.5,0.25,0.125,0.0625]", "\"alpha\":[0.5,0.25,0.125]"),
         QStringLiteral("has 3 weights for 2 paths")},
        {replaced(kGoodTrain, "\"sublayer\":\"ffn\"", "\"sublayer\":\"mlp\""), QStringLiteral("not \"attention\" or \"ffn\"")},
        {replaced(kGoodTrain, "\"block\":0,", "\"block\":100000,"), QStringLiteral("\"paths[0].block\" is 100000")},
        {R"({"type":"probe","step":1,"text":"","tokens":[],"attention":[[[]]]})", QStringLiteral("the probe has no tokens")},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1,0],[0,1]]]]"),
         QStringLiteral("\"attention[0][0]\" has 3 rows for 2 tokens")},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1]]]]"),
         QStringLiteral("\"attention[0][0][1]\" has 1 weights for 2 tokens")},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1,0]]],[[[1,0],[0,1]],[[1,0],[0,1]]]]"),
         QStringLiteral("\"attention[1]\" has 2 heads but \"attention[0]\" has 1")},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1500,0]]]]"),
         QStringLiteral("is 1500, not an attention weight")},
        {replaced(kGoodProbe, "[[[2,-1],[0,1]]]", "[[[2,-1]]]"), QStringLiteral("\"experts[0]\" has 1 entries for 2 tokens")},
        {replaced(kGoodProbe, "[[[2,-1],[0,1]]]", "[[[2,-1],[0]]]"), QStringLiteral("has 1 choices but")},
        {replaced(kGoodProbe, "[[[2,-1],[0,1]]]", "[[[2,-7],[0,1]]]"), QStringLiteral("is -7")},
        {replaced(kGoodProbe, "\"prediction_labels\":[\"0\",\"1\"]", "\"prediction_labels\":[\"0\"]"),
         QStringLiteral("has 1 labels for 2 predictions")},
        {replaced(kGoodProbe, "\"text\":\"a b\"", "\"text\":7"), QStringLiteral("\"text\" is 7, not a text")},
        {R"({"type":"eval","step":4,"split":"validation","loss":"x","accuracy":0.5})", QStringLiteral("\"loss\" is \"x\"")},
    };
    for (const auto& [line, expected] : bad) {
        reason.clear();
        QVERIFY2(!decodedLine(line, &reason).has_value(), line.constData());
        QVERIFY2(reason.contains(expected), qPrintable(QStringLiteral("%1\n  reason: %2\n  expected: %3")
                                                          .arg(QString::fromUtf8(line), reason, expected)));
    }
}

// A saved run whose metrics.jsonl holds garbage among its lines opens: each bad
// line is skipped with one warning in the log naming the file and the line, the
// status bar counts them, no dialog per line, and the good lines are all shown
// with chart ranges that only they set.
void TestDesktop::aDamagedMetricsFileIsReadWithOneWarningPerBadLine()
{
    const QString run = m_dir.filePath(QStringLiteral("damaged-metrics"));
    QVERIFY(QDir().mkpath(run));
    QVERIFY(writeJson(run + QStringLiteral("/config.json"), tinyDocument(10)));
    const QList<QByteArray> lines{
        kGoodTrain,                                                                  // 1
        "garbage that is not JSON",                                                  // 2: bad
        R"({"type":"train","step":1e308,"wall_seconds":3,"loss":0.1})",              // 3: bad
        R"({"type":"probe","step":2,"text":"","tokens":[],"attention":[[[]]]})",     // 4: bad
        QByteArray("\x00\x7f\x10\x02\x00\x00 binary", 13),                           // 5: bad
        R"({"type":"probe","step":2,"text":"caf)" + QByteArray("\xe9\"}"),            // 6: bad (invalid UTF-8)
        "",                                                                          // 7: empty, ignored
        trainAt(4, 2.0),                                                             // 8
        trainAt(3, 9.0),                                                             // 9: bad (goes back)
        R"({"type":"eval","step":4,"split":"validation","loss":2.25,"accuracy":0.5})",  // 10
        kGoodProbe,                                                                  // 11
        R"({"type":"train","step":5,"lo)",                                           // 12: bad (cut off)
        trainAt(6, 1.5),                                                             // 13
    };
    QByteArray bytes;
    for (const QByteArray& line : lines)
        bytes += line + '\n';
    bytes += R"({"type":"train","step":8,"loss")";  // 14: still being written: waits, no warning
    QFile out(run + QStringLiteral("/metrics.jsonl"));
    QVERIFY(out.open(QIODevice::WriteOnly) && out.write(bytes) == bytes.size());
    out.close();

    MainWindow window(m_dir.filePath(QStringLiteral("runs-damaged")));
    window.show();
    QVERIFY(window.openRun(run));
    QVERIFY(window.findChildren<QMessageBox*>().isEmpty());  // no dialog per line, nor for the file
    const RunRecord* record = window.runs().record(QDir(run).absolutePath());
    QVERIFY(record != nullptr);

    // The good lines, all of them.
    QVector<double> steps;
    for (const CurvePoint& point : record->curves.value(QStringLiteral("loss")))
        steps.append(point.step);
    QCOMPARE(steps, (QVector<double>{2, 4, 6}));
    QCOMPARE(record->curves.value(QStringLiteral("validation_loss")).size(), qsizetype{1});
    QCOMPARE(record->lastStep(), 6.0);
    QCOMPARE(record->insights->states().size(), qsizetype{3});
    QCOMPARE(record->insights->probeTexts(), QStringList{QStringLiteral("a b")});  // not the one without tokens

    // One warning per bad line, naming the file, the line and the reason; none for the others.
    const QString file = QDir::toNativeSeparators(QDir(run).absoluteFilePath(QStringLiteral("metrics.jsonl")));
    const QList<QPair<int, QString>> expected{{2, QStringLiteral("not JSON")},
                                              {3, QStringLiteral("2^53")},
                                              {4, QStringLiteral("no tokens")},
                                              {5, QStringLiteral("not JSON")},
                                              {6, QStringLiteral("UTF-8")},
                                              {9, QStringLiteral("before step 4")},
                                              {12, QStringLiteral("not JSON")}};
    for (const auto& [line, why] : expected) {
        const QStringList found = warningsFor(window.log(), line);
        QVERIFY2(found.size() == 1, qPrintable(QStringLiteral("line %1: %2").arg(line).arg(found.join(QLatin1Char('\n')))));
        QVERIFY2(found.front().contains(file) && found.front().contains(why), qPrintable(found.front()));
    }
    for (const int good : {1, 7, 8, 10, 11, 13, 14})
        QVERIFY2(warningsFor(window.log(), good).isEmpty(), qPrintable(warningsFor(window.log(), good).join(QLatin1Char('\n'))));
    QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("7 damaged lines")),
             qPrintable(window.statusBar()->currentMessage()));

    // Chart ranges from the good lines only: steps 2 to 6 (with a little room
    // so that the markers at the ends are whole), losses 1.5 to 2.5.
    CurvePlot* loss = window.curves()->chart(window.curves()->chartKeyForMetric(QStringLiteral("loss")));
    QVERIFY(loss != nullptr);
    loss->refreshNow();
    const QCPRange shown = loss->xAxis->range();
    QVERIFY2(shown.lower <= 2.0 && shown.lower > 1.8 && shown.upper >= 6.0 && shown.upper < 6.2,
             qPrintable(QStringLiteral("%1 .. %2").arg(shown.lower).arg(shown.upper)));
    QVERIFY2(loss->yAxis->range().lower > 1.0 && loss->yAxis->range().upper < 3.0,
             qPrintable(QStringLiteral("%1 .. %2").arg(loss->yAxis->range().lower).arg(loss->yAxis->range().upper)));

    // The interpretability pages draw what is left, without a crash; the scrubber stops at the good steps.
    window.centralTabs()->setCurrentWidget(window.insights());
    window.insights()->refreshNow();
    QCOMPARE(window.insights()->scrubberSteps(), (QVector<qint64>{2, 4, 6}));
    for (const InsightsView::Page page :
         {InsightsView::Page::Attention, InsightsView::Page::Experts, InsightsView::Page::LayerNorm, InsightsView::Page::Paths}) {
        window.insights()->setPage(page);
        window.insights()->refreshNow();
        QVERIFY(!window.grab().isNull());
    }
}

// config.json, tokenizer.json and labels.json that cannot be used are messages
// naming the file; nothing is thrown through the event loop, and the window goes on.
void TestDesktop::damagedRunFilesAreMessagesNamingTheFile()
{
    const QString run = m_dir.filePath(QStringLiteral("damaged-files"));
    QVERIFY(QDir().mkpath(run));
    QVERIFY(writeJson(run + QStringLiteral("/config.json"), tinyDocument(10)));
    auto write = [&](const QString& name, const QByteArray& bytes) {
        QFile out(run + QLatin1Char('/') + name);
        return out.open(QIODevice::WriteOnly) && out.write(bytes) == bytes.size();
    };

    QString error;
    QVERIFY(!probeSavedRun(run, QStringLiteral("a"), false, &error).has_value());  // no tokenizer.json
    QVERIFY2(error.contains(QStringLiteral("tokenizer.json")), qPrintable(error));
    QVERIFY(write(QStringLiteral("tokenizer.json"), "{\"kind\": \"word\", \"tok"));
    QVERIFY(!probeSavedRun(run, QStringLiteral("a"), false, &error).has_value());
    QVERIFY2(error.contains(QStringLiteral("tokenizer.json")), qPrintable(error));
    QVERIFY(write(QStringLiteral("tokenizer.json"), R"({"kind": "word", "tokens": ["a", "b"]})"));
    QVERIFY(write(QStringLiteral("labels.json"), R"({"not": "a list"})"));
    QVERIFY(!probeSavedRun(run, QStringLiteral("a"), false, &error).has_value());
    QVERIFY2(error.contains(QStringLiteral("labels.json")), qPrintable(error));
    QVERIFY(write(QStringLiteral("labels.json"), R"(["zero", "one"])"));
    QVERIFY(!probeSavedRun(run, QStringLiteral("a"), false, &error).has_value());  // no checkpoint: said, not thrown
    QVERIFY2(error.contains(QStringLiteral("checkpoint")), qPrintable(error));

    // A config.json that is not JSON: opening says so, naming it; comparing warns and goes on.
    MainWindow window(m_dir.filePath(QStringLiteral("runs-damaged-files")));
    window.show();
    QVERIFY(write(QStringLiteral("config.json"), QByteArray("{\"model\": \xff\xfe", 12)));
    QVERIFY(!window.openRun(run));
    auto* problem = window.findChild<QMessageBox*>(QStringLiteral("problem"));
    QVERIFY(problem != nullptr);
    QVERIFY2(problem->text().contains(QStringLiteral("config.json")), qPrintable(problem->text()));
    problem->close();
    QVERIFY(window.runs().addToComparison(run));
    const QString log = window.log()->visibleLines().join(QLatin1Char('\n'));
    QVERIFY2(log.contains(QStringLiteral("config.json")) && log.contains(QStringLiteral("size is unknown")), qPrintable(log));
    QCOMPARE(window.runsList()->count(), 1);
}

void TestDesktop::closingDuringTrainingAsksThenStopsAndSaves()
{
    auto* window = new MainWindow(m_dir.filePath(QStringLiteral("runs-close")));
    window->setAttribute(Qt::WA_DeleteOnClose, false);
    window->show();
    const QString file = m_dir.filePath(QStringLiteral("long.json"));
    QVERIFY(writeJson(file, tinyDocument(100000, 1)));
    QVERIFY(window->openConfiguration(file));
    QVERIFY(window->startTraining());
    test::TrainRecords snapshots(&window->controller());
    QTRY_VERIFY_WITH_TIMEOUT(snapshots.count() >= 2, 60000);

    QVERIFY(!window->close());  // refused for now: the question is asked
    auto* question = window->findChild<QMessageBox*>(QStringLiteral("closeQuestion"));
    QVERIFY(question);
    QVERIFY(window->isVisible());
    QVERIFY(window->controller().busy());  // still training while the user decides
    QPushButton* stop = nullptr;
    for (QAbstractButton* button : question->buttons())
        if (button->text() == QStringLiteral("Stop and Close"))
            stop = qobject_cast<QPushButton*>(button);
    QVERIFY(stop);
    stop->click();
    QTRY_VERIFY_WITH_TIMEOUT(!window->isVisible(), 60000);
    QVERIFY(!window->controller().busy());
    QCOMPARE(checkpoints(window->runs().current()).size(), 1);
    delete window;
}

void TestDesktop::theWindowReportsWhatProductsRunOn()
{
    // The check runs on a worker thread; its report names the threads in use and
    // the BLAS, lands in the log, and is what Help > About shows.
    MainWindow window(m_dir.filePath(QStringLiteral("runs-runtime")));
    QVERIFY(window.action(QStringLiteral("about")));
    window.checkRuntime();
    QTRY_VERIFY_WITH_TIMEOUT(!window.runtimeReport().isEmpty(), 30000);
    const QString report = window.runtimeReport();
    const int threads = computeThreads();
    QVERIFY2(report.contains(QStringLiteral(", %1 thread").arg(threads)), qPrintable(report));
    QVERIFY2(report.contains(QStringLiteral("BLAS: ")), qPrintable(report));
    QVERIFY2(report.contains(QStringLiteral("GFLOP/s")), qPrintable(report));
    const QStringList logged = window.log()->visibleLines().filter(QStringLiteral("GFLOP/s"));
    QCOMPARE(logged.size(), 1);
    QVERIFY(logged.first().contains(report.section(QLatin1Char('\n'), 0, 0)));

    // A run's log replaces the panel's lines; the report stays first.
    const QString file = m_dir.filePath(QStringLiteral("tiny-runtime.json"));
    QVERIFY(writeJson(file, tinyDocument(4)));
    QVERIFY(window.openConfiguration(file));
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QVERIFY(window.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    const QStringList lines = window.log()->visibleLines();
    QVERIFY2(lines.size() > 1 && lines.first().contains(QStringLiteral("GFLOP/s")), qPrintable(lines.join('\n')));
    QCOMPARE(lines.filter(QStringLiteral("GFLOP/s")).size(), 1);
    QVERIFY(!lines.filter(QStringLiteral("device cpu")).isEmpty());
}

// --- Defects of a first hour (issue 16) ---------------------------------------

namespace {

// Answers the next modal file dialog with `file` (polling until it is open);
// *folder gets the folder it opened in.
void answerFileDialog(const QString& file, QString* folder, int triesLeft = 300)
{
    QTimer::singleShot(10, [file, folder, triesLeft] {
        if (auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget())) {
            *folder = dialog->directory().absolutePath();
            dialog->selectFile(file);
            static_cast<QDialog*>(dialog)->accept();  // public in QDialog
            return;
        }
        if (triesLeft > 0)
            answerFileDialog(file, folder, triesLeft - 1);
    });
}

QByteArray fileBytes(const QString& path)
{
    QFile in(path);
    return in.open(QIODevice::ReadOnly) ? in.readAll() : QByteArray();
}

// The button of `box` with that role.
QAbstractButton* buttonOf(QMessageBox* box, QMessageBox::StandardButton which)
{
    return box ? box->button(which) : nullptr;
}

// A ListOps expression's value, computed here from its text: MIN, MAX, MED
// (the lower middle of an even count, averaged down), SM (sum modulo 10).
int listOpsValue(const QString& text)
{
    static const QRegularExpression token(QStringLiteral("\\[MIN|\\[MAX|\\[MED|\\[SM|\\]|[0-9]"));
    QStringList tokens;
    for (auto it = token.globalMatch(text); it.hasNext();)
        tokens << it.next().captured();
    qsizetype at = 0;
    std::function<int()> value = [&]() -> int {
        const QString t = tokens.value(at++);
        if (t.size() == 1 && t[0].isDigit())
            return t.toInt();
        QVector<int> arguments;
        while (at < tokens.size() && tokens[at] != QStringLiteral("]"))
            arguments << value();
        ++at;  // the closing bracket
        std::sort(arguments.begin(), arguments.end());
        if (arguments.isEmpty())
            return -1;
        if (t == QStringLiteral("[MIN"))
            return arguments.front();
        if (t == QStringLiteral("[MAX"))
            return arguments.back();
        if (t == QStringLiteral("[MED")) {
            const qsizetype n = arguments.size();
            return n % 2 == 1 ? arguments[n / 2] : (arguments[n / 2 - 1] + arguments[n / 2]) / 2;
        }
        int sum = 0;
        for (int a : arguments)
            sum += a;
        return sum % 10;
    };
    return tokens.isEmpty() ? -1 : value();
}

}  // namespace

void TestDesktop::savingAShippedPresetAsksWhereAndLeavesItAsShipped()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-presets")));
    const QString userFolder = QString::fromStdString(userPresetDirectory().string());
    QCOMPARE(userFolder, m_dir.filePath(QStringLiteral("user-presets")));
    // The window opens the WideNet preset; an edit, then Ctrl+S.
    const QString shipped = QString::fromStdString(resolveConfigPath("widenet").string());
    QVERIFY(isShippedPreset(shipped.toStdString()));
    const QByteArray before = fileBytes(shipped);
    QVERIFY(!before.isEmpty());
    QJsonObject document = window.configPanel()->document();
    document.insert(QStringLiteral("name"), QStringLiteral("My WideNet"));
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    QVERIFY(window.isWindowModified());

    QCOMPARE(window.action(QStringLiteral("save"))->shortcut(), QKeySequence(QStringLiteral("Ctrl+S")));
    QCOMPARE(window.action(QStringLiteral("saveAs"))->shortcut(), QKeySequence(QStringLiteral("Ctrl+Shift+S")));
    QString folder;
    const QString mine = QDir(userFolder).filePath(QStringLiteral("my-widenet.json"));
    answerFileDialog(mine, &folder);
    window.action(QStringLiteral("save"))->trigger();
    QCOMPARE(folder, userFolder);  // the dialog opened among the user's presets
    QCOMPARE(fileBytes(shipped), before);
    QVERIFY(QFile::exists(mine));
    QCOMPARE(QJsonDocument::fromJson(fileBytes(mine)).object().value(QStringLiteral("name")).toString(),
             QStringLiteral("My WideNet"));
    QVERIFY(!window.isWindowModified());

    // The picker lists it beside the shipped ones, marked; the CLI's lookup finds it by name.
    const QStringList choices = window.document().presetChoices();
    QVERIFY(choices.contains(QStringLiteral("widenet")));
    QVERIFY2(choices.contains(QStringLiteral("my-widenet (yours)")), qPrintable(choices.join(QStringLiteral(", "))));
    QVERIFY(!choices.contains(QStringLiteral("my-widenet")));
    QCOMPARE(QFileInfo(QString::fromStdString(resolveConfigPath("my-widenet").string())).canonicalFilePath(),
             QFileInfo(mine).canonicalFilePath());
    // Saved again: Ctrl+S writes the user's file without asking.
    document.insert(QStringLiteral("name"), QStringLiteral("My WideNet 2"));
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    QVERIFY(window.document().save());
    QCOMPARE(QJsonDocument::fromJson(fileBytes(mine)).object().value(QStringLiteral("name")).toString(),
             QStringLiteral("My WideNet 2"));

    // Writing over a shipped preset is refused with a message naming it.
    QVERIFY(!window.document().saveConfiguration(shipped));
    QCOMPARE(fileBytes(shipped), before);
    auto* problem = window.findChild<QMessageBox*>(QStringLiteral("problem"));
    QVERIFY(problem);
    QVERIFY2(problem->text().contains(QDir::toNativeSeparators(shipped)), qPrintable(problem->text()));
    problem->close();
}

void TestDesktop::pickingAPresetAsksBeforeDiscardingEdits()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-discard")));
    const QString file = m_dir.filePath(QStringLiteral("edited.json"));
    QVERIFY(writeJson(file, tinyDocument(10)));
    QVERIFY(window.openConfiguration(file));
    QJsonObject document = window.configPanel()->document();
    document.insert(QStringLiteral("name"), QStringLiteral("edited, not saved"));
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    QVERIFY(window.isWindowModified());

    // Cancel keeps the edits.
    Q_EMIT window.configPanel()->presetChosen(QStringLiteral("transformer-6x8"));
    auto* question = window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion"));
    QVERIFY(question);
    QVERIFY(question->isVisible());
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("name")).toString(), QStringLiteral("edited, not saved"));
    buttonOf(question, QMessageBox::Cancel)->click();
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("name")).toString(), QStringLiteral("edited, not saved"));
    QVERIFY(window.isWindowModified());
    QTRY_VERIFY(window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion")) == nullptr);

    // Discard opens the preset.
    const QJsonObject preset =
        QJsonDocument::fromJson(fileBytes(QString::fromStdString(resolveConfigPath("transformer-6x8").string()))).object();
    Q_EMIT window.configPanel()->presetChosen(QStringLiteral("transformer-6x8"));
    question = window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion"));
    QVERIFY(question);
    buttonOf(question, QMessageBox::Discard)->click();
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("name")).toString(),
             preset.value(QStringLiteral("name")).toString());
    QVERIFY(!window.isWindowModified());
    QTRY_VERIFY(window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion")) == nullptr);

    // Save writes the edits to their file first, then opens the preset.
    QVERIFY(window.openConfiguration(file));
    document = window.configPanel()->document();
    document.insert(QStringLiteral("name"), QStringLiteral("saved on the way"));
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    Q_EMIT window.configPanel()->presetChosen(QStringLiteral("transformer-6x8"));
    question = window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion"));
    QVERIFY(question);
    buttonOf(question, QMessageBox::Save)->click();
    QCOMPARE(QJsonDocument::fromJson(fileBytes(file)).object().value(QStringLiteral("name")).toString(),
             QStringLiteral("saved on the way"));
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("name")).toString(),
             preset.value(QStringLiteral("name")).toString());

    // With nothing edited, a pick opens at once.
    QTRY_VERIFY(window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion")) == nullptr);
    Q_EMIT window.configPanel()->presetChosen(QStringLiteral("widenet"));
    QVERIFY(window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion")) == nullptr);
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("model")).toObject().value(QStringLiteral("experts")).toInt(), 4);
}

void TestDesktop::theWindowFitsA1280x720Screen()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-small")));
    // Long texts where a window shows them: a long run name, a state, a reason.
    const QString file = m_dir.filePath(QStringLiteral("a-configuration-with-a-rather-long-file-name.json"));
    QVERIFY(writeJson(file, tinyDocument(10)));
    QVERIFY(window.openConfiguration(file));
    const QSize screen(1280, 720);
    auto sizes = [&window] {
        QStringList parts;
        parts << QStringLiteral("window %1x%2").arg(window.minimumSizeHint().width()).arg(window.minimumSizeHint().height());
        for (QDockWidget* dock : window.findChildren<QDockWidget*>())
            parts << QStringLiteral("%1 %2x%3").arg(dock->objectName()).arg(dock->minimumSizeHint().width()).arg(dock->minimumSizeHint().height());
        for (QToolBar* bar : window.findChildren<QToolBar*>())
            parts << QStringLiteral("%1 %2x%3").arg(bar->objectName()).arg(bar->minimumSizeHint().width()).arg(bar->minimumSizeHint().height());
        parts << QStringLiteral("central %1x%2").arg(window.centralWidget()->minimumSizeHint().width()).arg(window.centralWidget()->minimumSizeHint().height());
        parts << QStringLiteral("status bar %1x%2").arg(window.statusBar()->minimumSizeHint().width()).arg(window.statusBar()->minimumSizeHint().height());
        return parts.join(QStringLiteral("; "));
    };
    QVERIFY2(window.minimumSizeHint().width() <= screen.width() && window.minimumSizeHint().height() <= screen.height(),
             qPrintable(sizes()));

    window.resize(screen);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCOMPARE(window.size(), screen);
    const QRect inside = window.rect();
    auto shownInside = [&](QWidget* widget) {
        return widget->isVisible() && widget->width() > 0 && widget->height() > 0
               && inside.contains(QRect(widget->mapTo(&window, QPoint(0, 0)), widget->size()));
    };
    QVERIFY2(shownInside(window.runsDock()), qPrintable(sizes()));
    QVERIFY2(shownInside(window.configDock()), qPrintable(sizes()));
    QVERIFY2(shownInside(window.statusBar()), qPrintable(sizes()));
    QVERIFY(shownInside(window.stateLabel()));
    // The log's controls: the level, the filter, Clear.
    const QList<QWidget*> controls = window.log()->findChildren<QWidget*>();
    int checked = 0;
    for (QWidget* control : controls)
        if (qobject_cast<QComboBox*>(control) || qobject_cast<QLineEdit*>(control) || qobject_cast<QPushButton*>(control)) {
            QVERIFY2(shownInside(control), qPrintable(control->metaObject()->className() + QStringLiteral(": ") + sizes()));
            ++checked;
        }
    QVERIFY(checked >= 3);
    // Usable: the charts keep most of the width, the log shows a few lines.
    QVERIFY2(window.centralWidget()->width() >= screen.width() / 3, qPrintable(sizes()));
    QVERIFY2(window.log()->height() >= 60, qPrintable(sizes()));
}

void TestDesktop::aNewRunStartsWithAFreshStatusBarAndLiveViews()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-fresh")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const QString file = m_dir.filePath(QStringLiteral("fresh.json"));
    QVERIFY(writeJson(file, tinyDocument(4, 1)));
    QVERIFY(window.openConfiguration(file));
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QVERIFY(window.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QVERIFY2(window.speedLabel()->text().contains(QStringLiteral("tokens/s")), qPrintable(window.speedLabel()->text()));
    const QString first = window.runs().current();

    // The first run's replay, frozen; then a second run.
    window.centralTabs()->setCurrentWidget(window.insights());
    window.insights()->setStep(0);
    QVERIFY(!window.insights()->isLive());
    QVERIFY(!window.action(QStringLiteral("live"))->isChecked());
    // Another learning rate: a new run, not the first one continued.
    QJsonObject document = window.configPanel()->document();
    QJsonObject train = document.value(QStringLiteral("train")).toObject();
    train.insert(QStringLiteral("learning_rate"), 0.002);
    document.insert(QStringLiteral("train"), train);
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    QVERIFY(window.startTraining());
    QVERIFY(window.runs().current() != first);
    QCOMPARE(window.speedLabel()->text(), QString());  // not the first run's speed
    QVERIFY(window.insights()->isLive());
    QVERIFY(window.action(QStringLiteral("live"))->isChecked());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 120000);

    // Reopening the first run shows its own speed, the one its file logged last.
    QVERIFY(window.openRun(first));
    QVERIFY2(window.speedLabel()->text().contains(QStringLiteral("tokens/s")), qPrintable(window.speedLabel()->text()));
}

void TestDesktop::probeLinesCarryTheTrueClassWhenKnown()
{
    // The core writes "label" only when it knows it.
    ProbeResult probe;
    probe.step = 3;
    probe.text = "[MAX 1 2 ]";
    probe.tokens = {"[MAX", "1", "2", "]"};
    probe.prediction = {0.25f, 0.5f, 0.25f};
    QVERIFY(!toJson(probe).contains("label"));
    probe.label = 2;
    QCOMPARE(toJson(probe).value("label", -1), 2);

    // The app reads it back, and refuses one that names no class of the prediction.
    const QJsonObject line = QJsonDocument::fromJson(QByteArray::fromStdString(toJson(probe).dump())).object();
    QString reason;
    const std::optional<ProbeResult> capture = probeFromJson(line, &reason);
    QVERIFY2(capture, qPrintable(reason));
    QCOMPARE(capture->label, std::int64_t{2});
    QJsonObject outside = line;
    outside.insert(QStringLiteral("label"), 3);
    QVERIFY(!probeFromJson(outside, &reason));
    QVERIFY2(reason.contains(QStringLiteral("label")), qPrintable(reason));
    QJsonObject unlabelled = line;
    unlabelled.remove(QStringLiteral("label"));
    const std::optional<ProbeResult> plain = probeFromJson(unlabelled, &reason);
    QVERIFY(plain);
    QCOMPARE(plain->label, std::int64_t{-1});

    // A ListOps run's default probe is a validation example: its label is the
    // expression's value, in the live capture and in metrics.jsonl alike.
    MainWindow window(m_dir.filePath(QStringLiteral("runs-label")));
    const QString file = m_dir.filePath(QStringLiteral("label.json"));
    QVERIFY(writeJson(file, tinyDocument(2)));
    QVERIFY(window.openConfiguration(file));
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QVERIFY(window.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    const RunRecord* record = window.runs().record(window.runs().current());
    QVERIFY(record);
    const QStringList texts = record->insights->probeTexts();
    QCOMPARE(texts.size(), 1);
    const ProbeResult* live = record->insights->captureAt(texts.first(), -1);
    QVERIFY(live);
    const int expected = listOpsValue(texts.first());
    QVERIFY2(expected >= 0, qPrintable(texts.first()));
    QCOMPARE(live->label, std::int64_t{expected});
    RunRecord reread;
    QVERIFY(loadRunRecord(window.runs().current(), reread, &reason));
    const ProbeResult* saved = reread.insights->captureAt(texts.first(), -1);
    QVERIFY(saved);
    QCOMPARE(saved->label, std::int64_t{expected});
}

void TestDesktop::theUserPresetsFolderFollowsTheEnvironment()
{
    // Presets.h: $WIDELAB_USER_PRESETS, else $XDG_CONFIG_HOME/widelab/presets, else ~/.config/widelab/presets.
    const QByteArray saved[] = {qgetenv("WIDELAB_USER_PRESETS"), qgetenv("XDG_CONFIG_HOME"), qgetenv("HOME")};
    auto folder = [] { return QString::fromStdString(userPresetDirectory().string()); };
    qputenv("WIDELAB_USER_PRESETS", "/tmp/chosen");
    qputenv("XDG_CONFIG_HOME", "/tmp/xdg");
    QCOMPARE(folder(), QStringLiteral("/tmp/chosen"));
    qunsetenv("WIDELAB_USER_PRESETS");
    QCOMPARE(folder(), QStringLiteral("/tmp/xdg/widelab/presets"));
    qunsetenv("XDG_CONFIG_HOME");
    qputenv("HOME", "/home/someone");
    QCOMPARE(folder(), QStringLiteral("/home/someone/.config/widelab/presets"));
    // Put back as it was.
    qputenv("WIDELAB_USER_PRESETS", saved[0]);
    if (saved[1].isEmpty())
        qunsetenv("XDG_CONFIG_HOME");
    else
        qputenv("XDG_CONFIG_HOME", saved[1]);
    qputenv("HOME", saved[2]);
    QCOMPARE(folder(), m_dir.filePath(QStringLiteral("user-presets")));
}

// View > Theme: dark and light whatever the desktop says, and back to the
// system's look; the charts follow (light text on a dark plot and the reverse),
// and the choice is kept for the next session.
void TestDesktop::theThemeSwitchesEveryViewAndIsKept()
{
    const QPalette system = QApplication::palette();
    MainWindow window(m_dir.filePath(QStringLiteral("runs-theme")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* dark = window.findChild<QAction*>(QStringLiteral("theme-dark"));
    auto* light = window.findChild<QAction*>(QStringLiteral("theme-light"));
    auto* followSystem = window.findChild<QAction*>(QStringLiteral("theme-system"));
    QVERIFY(dark && light && followSystem);
    QVERIFY(followSystem->isChecked());
    CurvePlot* loss = window.curves()->chart(QStringLiteral("loss"));
    QVERIFY(loss);

    dark->trigger();
    QVERIFY(dark->isChecked());
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 80);
    QCoreApplication::processEvents();
    QVERIFY(window.palette().color(QPalette::WindowText).lightness() > 200);
    QVERIFY(loss->palette().color(QPalette::Base).lightness() < 80);
    QVERIFY2(loss->xAxis->tickLabelColor().lightness() > 150, qPrintable(loss->xAxis->tickLabelColor().name()));
    // The toolbar's icons are painted in the theme's text colour: light on dark.
    auto iconCentre = [&window] {
        const QImage icon = window.action(QStringLiteral("stop"))->icon().pixmap(32, 32).toImage();
        return icon.pixelColor(16, 16);
    };
    QVERIFY2(iconCentre().alpha() > 200 && iconCentre().lightness() > 150, qPrintable(iconCentre().name()));
    QCOMPARE(QSettings().value(QStringLiteral("appearance/theme")).toString(), QStringLiteral("dark"));

    light->trigger();
    QCoreApplication::processEvents();
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() > 200);
    QVERIFY2(loss->xAxis->tickLabelColor().lightness() < 100, qPrintable(loss->xAxis->tickLabelColor().name()));
    QVERIFY2(iconCentre().alpha() > 200 && iconCentre().lightness() < 100, qPrintable(iconCentre().name()));
    QCOMPARE(QSettings().value(QStringLiteral("appearance/theme")).toString(), QStringLiteral("light"));

    followSystem->trigger();
    QCoreApplication::processEvents();
    QCOMPARE(QApplication::palette().color(QPalette::Window), system.color(QPalette::Window));
    QCOMPARE(QApplication::palette().color(QPalette::Text), system.color(QPalette::Text));
    QCOMPARE(QSettings().value(QStringLiteral("appearance/theme")).toString(), QStringLiteral("system"));
}

// Start continues the open run exactly when the core's rule (run/ResumeRule.h)
// says so, as the trainer and the CLI decide: changing what is only inspected
// (train.probes, train.probe_every) keeps Continue, another learning rate is a new
// run. Continuing with another length asks first, naming the step and the rate
// before and after; Cancel starts nothing.
void TestDesktop::startContinuesByTheCoresRuleAndAsksBeforeMovingTheSchedule()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-rule")));
    window.show();
    const QString file = m_dir.filePath(QStringLiteral("tiny-rule.json"));
    QVERIFY(writeJson(file, tinyDocument(20, 10)));
    QVERIFY(window.openConfiguration(file));
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QVERIFY(window.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QCOMPARE(finished.first().at(0).toString(), QStringLiteral("completed"));
    const QString run = window.runs().current();
    QAction* start = window.action(QStringLiteral("start"));
    QCOMPARE(start->text(), QStringLiteral("&Continue"));

    auto edited = [&](const char* key, const QJsonValue& value) {
        QJsonObject document = window.configPanel()->document();
        QJsonObject train = document.value(QStringLiteral("train")).toObject();
        train.insert(QLatin1String(key), value);
        document.insert(QStringLiteral("train"), train);
        window.configPanel()->setDocument(document);
        Q_EMIT window.configPanel()->documentChanged();
    };
    // The app's old rule made these a new run; the core's keeps the run.
    edited("probes", QJsonArray{QStringLiteral("[MAX 2 9 ]")});
    QTRY_COMPARE(start->text(), QStringLiteral("&Continue"));
    edited("probe_every", 5);
    QTRY_COMPARE(start->text(), QStringLiteral("&Continue"));
    edited("learning_rate", 0.01);
    QTRY_COMPARE(start->text(), QStringLiteral("&Start"));
    edited("learning_rate", 0.003);
    QTRY_COMPARE(start->text(), QStringLiteral("&Continue"));

    // 20 steps -> 24: the cosine (warmup 5, no floor) had reached 0 at step 20; over 24
    // steps it is at 0.5 * (1 + cos(pi * 15/19)) of the peak 0.003 there.
    edited("steps", 24);
    QTRY_VERIFY(start->isEnabled());
    start->trigger();
    auto* question = window.findChild<QMessageBox*>(QStringLiteral("scheduleQuestion"));
    QVERIFY(question);
    const double rate = 0.003 * 0.5 * (1.0 + std::cos(std::numbers::pi * 15.0 / 19.0));
    for (const QString& part : {QStringLiteral("spans 20 steps"), QStringLiteral("with 24 steps"),
                                QStringLiteral("At step 20"), QStringLiteral("from 0 to %1").arg(rate, 0, 'g', 4)})
        QVERIFY2(question->text().contains(part), qPrintable(question->text() + QStringLiteral("\n  lacks: ") + part));
    QVERIFY(!window.controller().busy());  // nothing starts while the user decides
    QVERIFY(clickButton(question, QStringLiteral("Cancel")));
    QTRY_VERIFY(!window.findChild<QMessageBox*>(QStringLiteral("scheduleQuestion")));  // closed and gone
    QVERIFY(!window.controller().busy());
    QCOMPARE(finished.count(), 1);

    start->trigger();
    QVERIFY(clickButton(window.findChild<QMessageBox*>(QStringLiteral("scheduleQuestion")), QStringLiteral("Continue")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 120000);
    QCOMPARE(finished.last().at(0).toString(), QStringLiteral("completed"));
    QCOMPARE(window.runs().current(), run);
    QCOMPARE(window.runsList()->count(), 1);
    const QStringList warned = window.log()->visibleLines().filter(QStringLiteral("schedule now spans 24 steps instead of 20"));
    QCOMPARE(warned.size(), 1);
    // The probe added meanwhile stays with the run.
    QFile config(run + QStringLiteral("/config.json"));
    QVERIFY(config.open(QIODevice::ReadOnly));
    const QJsonObject train = QJsonDocument::fromJson(config.readAll()).object().value(QStringLiteral("train")).toObject();
    QVERIFY(train.value(QStringLiteral("probes")).toArray().contains(QStringLiteral("[MAX 2 9 ]")));
    QCOMPARE(train.value(QStringLiteral("steps")).toInt(), 24);
}

// The log says "paused at step N" with N the optimiser updates done; the status
// bar says the same N, though the last snapshot (every log_every steps) is older.
void TestDesktop::pausedTheStatusBarNamesTheLogsStep()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-pause")));
    window.show();
    QJsonObject document = tinyDocument(100000, 1000);  // no snapshot before step 1000
    QJsonObject train = document.value(QStringLiteral("train")).toObject();
    train.insert(QStringLiteral("eval_every"), 3);
    train.insert(QStringLiteral("eval_batches"), 1);
    document.insert(QStringLiteral("train"), train);
    const QString file = m_dir.filePath(QStringLiteral("tiny-pause.json"));
    QVERIFY(writeJson(file, document));
    QVERIFY(window.openConfiguration(file));
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QSignalSpy paused(&window.controller(), &TrainingController::paused);
    QVERIFY(window.startTraining());
    // Past step 3 (its validation is logged), so the step is not the starting 0.
    QTRY_VERIFY_WITH_TIMEOUT(!window.log()->visibleLines().filter(QStringLiteral("validation at step 3")).isEmpty(), 60000);
    window.action(QStringLiteral("pause"))->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(paused.count(), 1, 60000);
    const QStringList logged = window.log()->visibleLines().filter(QStringLiteral("paused at step "));
    QCOMPARE(logged.size(), 1);
    const QRegularExpressionMatch match = QRegularExpression(QStringLiteral("paused at step (\\d+)")).match(logged.first());
    QVERIFY(match.hasMatch());
    const qint64 step = match.captured(1).toLongLong();
    QVERIFY2(step >= 3, qPrintable(logged.first()));
    QCOMPARE(paused.first().at(0).toLongLong(), step);
    QLabel* label = nullptr;
    for (QLabel* candidate : window.findChildren<QLabel*>())
        if (candidate->accessibleName() == QStringLiteral("Step"))
            label = candidate;
    QVERIFY(label);
    QCOMPARE(label->text(), QStringLiteral("Step %1 / 100000").arg(step));
    window.action(QStringLiteral("stop"))->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
}

// The attention view's captions and the probe picker's kind come from the
// configuration, through the core's registry of mechanisms.
void TestDesktop::theConfigurationSaysWhatEachHeadsMapIsAndWhetherProbesAreImages()
{
    const ConfigAssessment assessment = assessDocument(tinyDocument(2));
    QVERIFY(assessment.valid);
    InsightHistory history;
    describeInsights(history, assessment.complete);
    QCOMPARE(history.headCaptions().size(), qsizetype{4});  // model.heads: one per head of a path
    for (const HeadMapCaption& caption : history.headCaptions()) {
        QCOMPARE(caption.mechanism, QStringLiteral("full"));
        QCOMPARE(caption.kind, QStringLiteral("exact"));
    }
    QCOMPARE(headCaptionText(history.headCaptions(), 2, 4, 1), QStringLiteral("full (exact)"));
    QVERIFY(!history.imageInput());

    // A document the core cannot read says nothing about the heads.
    QJsonObject broken = assessment.complete;
    QJsonObject model = broken.value(QStringLiteral("model")).toObject();
    model.insert(QStringLiteral("heads"), -3);
    model.insert(QStringLiteral("input"), QStringLiteral("image"));
    broken.insert(QStringLiteral("model"), model);
    describeInsights(history, broken);
    QVERIFY(history.headCaptions().isEmpty());
    QVERIFY(history.imageInput());  // model.input is read as written
}

// The probe image reaches the views the same way from a live probe and from
// its metrics.jsonl line: the picture as the model saw it, its patch grid, and
// the patch weights and experts the image views draw.
void TestDesktop::anImageProbeGivesTheSamePictureLiveAndReadBack()
{
    const ProbeResult probe = test::imageProbe(40);
    const QJsonObject line = QJsonDocument::fromJson(QByteArray::fromStdString(toJson(probe).dump())).object();
    QString reason;
    const std::optional<ProbeResult> read = probeFromJson(line, &reason);
    QVERIFY2(read.has_value(), qPrintable(reason));
    for (const ProbeResult& c : {probe, *read}) {
        QCOMPARE(probeTextOf(c), QStringLiteral("validation:3"));
        QVERIFY(probeHasImage(c));
        const QImage picture = probeQImage(c.image);
        QCOMPARE(picture.size(), QSize(4, 4));
        QCOMPARE(c.image.gridRows, std::int64_t{2});
        QCOMPARE(c.image.gridCols, std::int64_t{2});
        QCOMPARE(picture.pixelColor(0, 0), QColor(0, 0, 200));
        QCOMPARE(picture.pixelColor(3, 1), QColor(120, 40, 200));
        QCOMPARE(picture.pixelColor(2, 3), QColor(80, 120, 200));
        QCOMPARE(patchSource(c), PatchSource::FromCls);
        QCOMPARE(patchAttention(c, 0, 0), (QVector<float>{0.1f, 0.2f, 0.3f, 0.4f}));
        QCOMPARE(patchExperts(c, 0), (QVector<int>{1, 0, -1, 2}));
    }
    // A text probe has no picture.
    ProbeResult text = probe;
    text.image = ProbeImage();
    QVERIFY(!probeHasImage(text));
    QVERIFY(probeQImage(text.image).isNull());
}

QTEST_MAIN(TestDesktop)
#include "tst_desktop.moc"
