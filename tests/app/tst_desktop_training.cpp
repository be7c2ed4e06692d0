// Tests of the desktop app (app/gui) training: the training controller's start, pause, resume, stop and
// teardown sequences on a real training thread, and the main window driven as a user drives it:
// validation that blocks Start, a run too large, a bad data file, a short training run with live
// curves, reopening and continuing the run, pausing, a new run, and closing mid-run.
// Runs offscreen (QT_QPA_PLATFORM=offscreen); no torch header is included here.
#include "DesktopTestSupport.h"

using namespace widelab;
using namespace widelab::desktoptest;

namespace {

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

class TestDesktopTraining : public DesktopTestCase {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { DesktopTestCase::initTestCase(); }
    void controllerStartsPausesResumesAndStops();
    void controllerRefusesASecondStartAndReportsFailures();
    void destroyingTheControllerSavesTheRun();
    void assessmentMarksFieldsAndCountsParameters();
    void invalidConfigurationBlocksStart();
    void aBadDataFileIsAMessageAndTheRunStays();
    void aRunTooLargeAsksToTrainAnyway();
    void trainingThroughTheWindowDrawsCurvesAndReopens();
    void closingDuringTrainingAsksThenStopsAndSaves();
    void aNewRunStartsWithAFreshStatusBarAndLiveViews();
    void startContinuesByTheCoresRuleAndAsksBeforeMovingTheSchedule();
    void pausedTheStatusBarNamesTheLogsStep();
    void pausedTheStatusBarShowsNoTimeLeft();
};

void TestDesktopTraining::controllerStartsPausesResumesAndStops()
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

void TestDesktopTraining::controllerRefusesASecondStartAndReportsFailures()
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

void TestDesktopTraining::destroyingTheControllerSavesTheRun()
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

void TestDesktopTraining::assessmentMarksFieldsAndCountsParameters()
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

void TestDesktopTraining::invalidConfigurationBlocksStart()
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

void TestDesktopTraining::aRunTooLargeAsksToTrainAnyway()
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

void TestDesktopTraining::trainingThroughTheWindowDrawsCurvesAndReopens()
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
    QVERIFY(reopened.compared().add(other));
    QCOMPARE(reopened.curves()->runs().size(), 2);
    QVERIFY(reopened.curves()->runColor(runDirectory) != reopened.curves()->runColor(QDir(other).absolutePath()));
    QVERIFY(!loss->points(QDir(other).absolutePath(), QStringLiteral("loss")).isEmpty());
    // Unticking a run in the runs list takes it out of the charts.
    QListWidgetItem* item = reopened.runsList()->item(1);
    item->setCheckState(Qt::Unchecked);
    QCOMPARE(reopened.curves()->runs().size(), 1);

    // Not a run: a clear message, nothing added.
    QVERIFY(!reopened.compared().add(m_dir.filePath(QStringLiteral("nowhere"))));
    QCOMPARE(reopened.runsList()->count(), 2);
}

void TestDesktopTraining::aBadDataFileIsAMessageAndTheRunStays()
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

void TestDesktopTraining::closingDuringTrainingAsksThenStopsAndSaves()
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

void TestDesktopTraining::aNewRunStartsWithAFreshStatusBarAndLiveViews()
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

// Start continues the open run exactly when the core's rule (run/ResumeRule.h)
// says so, as the trainer and the CLI decide: changing what is only inspected
// (train.probes, train.probe_every) keeps Continue, another learning rate is a new
// run. Continuing with another length asks first, naming the step and the rate
// before and after; Cancel starts nothing.
void TestDesktopTraining::startContinuesByTheCoresRuleAndAsksBeforeMovingTheSchedule()
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
void TestDesktopTraining::pausedTheStatusBarNamesTheLogsStep()
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

// Paused, no time passes: the status bar shows no time left until training goes on.
void TestDesktopTraining::pausedTheStatusBarShowsNoTimeLeft()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-pause-left")));
    window.show();
    const QString file = m_dir.filePath(QStringLiteral("tiny-pause-left.json"));
    QVERIFY(writeJson(file, tinyDocument(100000, 1)));  // a snapshot every step
    QVERIFY(window.openConfiguration(file));
    QLabel* left = nullptr;
    for (QLabel* candidate : window.findChildren<QLabel*>())
        if (candidate->accessibleName() == QStringLiteral("Time left"))
            left = candidate;
    QVERIFY(left);
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QSignalSpy paused(&window.controller(), &TrainingController::paused);
    QVERIFY(window.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(left->text().endsWith(QStringLiteral(" left")), 60000);
    window.action(QStringLiteral("pause"))->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(paused.count(), 1, 60000);
    QTest::qWait(500);  // a snapshot of the step in flight may still arrive
    QCOMPARE(left->text(), QString());
    window.action(QStringLiteral("pause"))->trigger();  // resume
    QTRY_VERIFY_WITH_TIMEOUT(left->text().endsWith(QStringLiteral(" left")), 60000);
    window.action(QStringLiteral("stop"))->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
}

QTEST_MAIN(TestDesktopTraining)
#include "tst_desktop_training.moc"
