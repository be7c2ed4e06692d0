// Tests InsightsView: runs, history changes and scrubbing, the frozen step, image and CSV export, probe requests, the probe box, following another run live, the shown step, and the head roles and logit lens pages.
// Every expected value below is worked out by hand from the constructed data.
#include "InsightTestData.h"

using namespace widelab;
using namespace widelab::insighttest;

class TestInsightsView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void insightsRunsHistoryChangesAndScrubbing();
    void insightsSetStepFreezesOnARecordedStep();
    void insightsExportsImages();
    void insightsExportsTheCurrentPagesCsv();
    void insightsAskForProbeRequestsBothRuns();
    void insightsProbeBoxHoldsOnlyTheShownRunsTexts();
    void insightsChoosingAnotherRunFollowsItLive();
    void insightsAnnouncesTheShownStep();
    void insightsShowsHeadRolesAndTheLogitLens();
};

void TestInsightsView::insightsRunsHistoryChangesAndScrubbing()
{
    auto history = fullHistory();
    InsightsView view;
    QSignalSpy runChanged(&view, &InsightsView::currentRunChanged);
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), history);
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.runs(), QStringList{QStringLiteral("a")});
    QCOMPARE(view.currentRun(), QStringLiteral("a"));
    QCOMPARE(view.comparisonRun(), QString());
    QCOMPARE(view.probe(), QStringLiteral("probe"));
    QCOMPARE(view.scrubberSteps(), (QVector<qint64>{10, 20, 30}));
    QVERIFY(view.isLive());
    QCOMPARE(view.shownStep(), -1);
    QCOMPARE(view.page(), InsightsView::Page::Attention);
    QCOMPARE(view.attention()->primaryPane()->capture()->step, 20);  // the newest capture

    // New data: redrawn on the refresh timer, not at once.
    history->addCapture(attentionProbe(40));
    view.historyChanged(QStringLiteral("a"));
    QCOMPARE(view.scrubberSteps().back(), 30);
    QTRY_COMPARE(view.scrubberSteps(), (QVector<qint64>{10, 20, 30, 40}));
    QCOMPARE(view.attention()->primaryPane()->capture()->step, 40);

    // Freezing and moving by stops.
    QSignalSpy liveChanged(&view, &InsightsView::liveChanged);
    view.setStep(20);
    QVERIFY(!view.isLive());
    QCOMPARE(view.shownStep(), 20);
    QCOMPARE(liveChanged.size(), 1);
    QCOMPARE(liveChanged.front().front().toBool(), false);
    QCOMPARE(view.attention()->primaryPane()->capture()->step, 20);
    view.stepBy(-1);
    QCOMPARE(view.shownStep(), 10);
    QCOMPARE(view.attention()->primaryPane()->capture()->step, 10);
    view.stepBy(-1);  // already at the first stop
    QCOMPARE(view.shownStep(), 10);
    view.stepBy(2);
    QCOMPARE(view.shownStep(), 30);
    QCOMPARE(view.attention()->primaryPane()->capture()->step, 20);  // the capture at or before 30
    view.setLive(true);
    QVERIFY(view.isLive());
    QCOMPARE(view.shownStep(), -1);
    QCOMPARE(liveChanged.size(), 2);
    QCOMPARE(liveChanged.back().front().toBool(), true);
    QCOMPARE(view.attention()->primaryPane()->capture()->step, 40);

    // Frozen pages follow the step too: the LayerNorm maps at step 20.
    view.setPage(InsightsView::Page::LayerNorm);
    QCOMPARE(view.currentPage(), static_cast<InsightPage*>(view.layerNorm()));
    view.setStep(20);
    QVERIFY2(view.layerNorm()->gammaMap()->title().contains(QStringLiteral("20")),
             qPrintable(view.layerNorm()->gammaMap()->title()));

    // A second run: the comparison, its steps join the scrubber's.
    auto other = std::make_shared<InsightHistory>();
    other->addState(stateAt(15));
    view.addRun(QStringLiteral("b"), QStringLiteral("Run B"), other);
    view.setComparisonRun(QStringLiteral("b"));
    QCOMPARE(view.comparisonRun(), QStringLiteral("b"));
    QCOMPARE(view.scrubberSteps(), (QVector<qint64>{10, 15, 20, 30, 40}));
    view.setCurrentRun(QStringLiteral("b"));
    QCOMPARE(view.currentRun(), QStringLiteral("b"));
    QCOMPARE(runChanged.size(), 1);
    QCOMPARE(runChanged.back().front().toString(), QStringLiteral("b"));
    view.removeRun(QStringLiteral("b"));
    QCOMPARE(view.runs(), QStringList{QStringLiteral("a")});
    QCOMPARE(view.currentRun(), QStringLiteral("a"));
}

void TestInsightsView::insightsSetStepFreezesOnARecordedStep()
{
    // InsightsView.h: setStep "freezes on the newest recorded step at or before `step`".
    InsightsView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), fullHistory());
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setStep(25);
    QVERIFY(!view.isLive());
    QCOMPARE(view.shownStep(), 20);
    view.stepBy(1);
    QCOMPARE(view.shownStep(), 30);
}

void TestInsightsView::insightsExportsImages()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    InsightsView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), fullHistory());
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));

    for (const InsightsView::Page page : {InsightsView::Page::Attention, InsightsView::Page::Experts,
                                          InsightsView::Page::LayerNorm, InsightsView::Page::Paths}) {
        view.setPage(page);
        const QString png = dir.filePath(QStringLiteral("page%1.png").arg(int(page)));
        QString error;
        QVERIFY2(view.exportImage(png, &error), qPrintable(error));
        QImage image(png);
        QVERIFY(!image.isNull());
        const QSize area = view.currentPage()->exportArea()->size();
        QVERIFY(area.width() > 100 && area.height() > 100);
        QCOMPARE(image.size(), area * 2);
    }

    view.setPage(InsightsView::Page::Attention);
    for (const QString& name : {QStringLiteral("view.svg"), QStringLiteral("view.pdf")}) {
        const QString path = dir.filePath(name);
        QString error;
        QVERIFY2(view.exportImage(path, &error), qPrintable(error));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray head = file.read(5);
        QVERIFY(file.size() > 0);
        if (name.endsWith(QStringLiteral(".pdf")))
            QCOMPARE(head, QByteArray("%PDF-"));
        else
            QVERIFY(head.startsWith("<?xml") || head.startsWith("<svg"));
    }

    QString error;
    const QString unknown = dir.filePath(QStringLiteral("view.tiff"));
    QVERIFY(!view.exportImage(unknown, &error));
    QVERIFY2(error.contains(QStringLiteral("tiff")), qPrintable(error));
    QVERIFY(!QFile::exists(unknown));
}

void TestInsightsView::insightsExportsTheCurrentPagesCsv()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    InsightsView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), fullHistory());
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    for (const InsightsView::Page page : {InsightsView::Page::Attention, InsightsView::Page::Experts,
                                          InsightsView::Page::LayerNorm, InsightsView::Page::Paths}) {
        view.setPage(page);
        const QString path = dir.filePath(QStringLiteral("page%1.csv").arg(int(page)));
        QString error;
        QVERIFY2(view.exportCsv(path, &error), qPrintable(error));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray written = file.readAll();
        QCOMPARE(written, view.currentPage()->csv());
        QVERIFY(written.count('\n') > 1);  // more than the header
    }
    // The attention page's numbers: the newest capture (step 20), 36 weights.
    view.setPage(InsightsView::Page::Attention);
    QCOMPARE(view.currentPage()->csv().count('\n'), 1 + 36);
    QVERIFY(view.currentPage()->csv().contains("Run A,20,probe,2,2,1,cat,0,\"x,y\",1\n"));

    QString error;
    QVERIFY(!view.exportCsv(dir.filePath(QStringLiteral("no/such/folder/x.csv")), &error));
    QVERIFY(!error.isEmpty());
}

void TestInsightsView::insightsAskForProbeRequestsBothRuns()
{
    InsightsView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), fullHistory());
    auto other = std::make_shared<InsightHistory>();
    other->addState(stateAt(5));
    view.addRun(QStringLiteral("b"), QStringLiteral("Run B"), other);
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setCurrentRun(QStringLiteral("a"));
    view.setComparisonRun(QStringLiteral("b"));

    QSignalSpy requested(&view, &InsightsView::probeRequested);
    answerInputDialog(QStringLiteral("hello"));
    view.askForProbe();
    QCOMPARE(requested.size(), 1);
    QCOMPARE(requested.front().at(0).toStringList(), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
    QCOMPARE(requested.front().at(1).toString(), QStringLiteral("hello"));
    QCOMPARE(view.probe(), QStringLiteral("hello"));  // shown while it waits for a capture

    // Without a comparison: the current run alone.
    view.setComparisonRun(QString());
    answerInputDialog(QStringLiteral("second"));
    view.askForProbe();
    QCOMPARE(requested.size(), 2);
    QCOMPARE(requested.back().at(0).toStringList(), QStringList{QStringLiteral("a")});
    QCOMPARE(requested.back().at(1).toString(), QStringLiteral("second"));
}

void TestInsightsView::insightsProbeBoxHoldsOnlyTheShownRunsTexts()
{
    auto first = std::make_shared<InsightHistory>();
    first->addCapture(captureOf(10, QStringLiteral("first run's text"), {QStringLiteral("a")}));
    auto second = std::make_shared<InsightHistory>();
    second->addCapture(captureOf(10, QStringLiteral("second run's text"), {QStringLiteral("b")}));
    InsightsView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), first);
    view.addRun(QStringLiteral("b"), QStringLiteral("Run B"), second);
    QComboBox* probes = nullptr;
    for (auto* combo : view.findChildren<QComboBox*>())
        if (combo->accessibleName() == QStringLiteral("Probe text"))
            probes = combo;
    QVERIFY(probes);
    QCOMPARE(view.currentRun(), QStringLiteral("a"));
    QCOMPARE(comboTexts(probes), QStringList{QStringLiteral("first run's text")});
    view.setProbe(QStringLiteral("typed, not captured yet"));
    QCOMPARE(comboTexts(probes), (QStringList{QStringLiteral("first run's text"), QStringLiteral("typed, not captured yet")}));

    // Another run: only its texts, and its own is the one shown.
    view.setCurrentRun(QStringLiteral("b"));
    QCOMPARE(comboTexts(probes), QStringList{QStringLiteral("second run's text")});
    QCOMPARE(view.probe(), QStringLiteral("second run's text"));
    // Back: the text asked of the first run is still there for it.
    view.setCurrentRun(QStringLiteral("a"));
    QCOMPARE(comboTexts(probes), (QStringList{QStringLiteral("first run's text"), QStringLiteral("typed, not captured yet")}));
}

void TestInsightsView::insightsChoosingAnotherRunFollowsItLive()
{
    auto other = std::make_shared<InsightHistory>();
    other->addState(stateAt(5));
    InsightsView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), fullHistory());
    view.addRun(QStringLiteral("b"), QStringLiteral("Run B"), other);
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy liveChanged(&view, &InsightsView::liveChanged);
    view.setStep(20);
    QVERIFY(!view.isLive());
    QCOMPARE(view.shownStep(), 20);
    // Step 20 belongs to run A's replay; run B, a new run training, would follow
    // it up to step 20 while the box said it was not live.
    view.setCurrentRun(QStringLiteral("b"));
    QVERIFY(view.isLive());
    QCOMPARE(view.shownStep(), -1);
    QCOMPARE(liveChanged.size(), 2);
    QCOMPARE(liveChanged.back().front().toBool(), true);
    auto* live = view.findChild<QCheckBox*>();
    QVERIFY(live);
    QVERIFY(live->isChecked());
}

void TestInsightsView::insightsAnnouncesTheShownStep()
{
    auto other = std::make_shared<InsightHistory>();
    other->addState(stateAt(5));
    InsightsView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), fullHistory());  // steps 10, 20, 30
    view.addRun(QStringLiteral("b"), QStringLiteral("Run B"), other);
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy announced(&view, &InsightsView::shownStepChanged);
    auto steps = [&] {
        QVector<qint64> out;
        for (const QList<QVariant>& args : announced)
            out << args.front().toLongLong();
        return out;
    };
    view.setStep(25);  // frozen on the recorded step at or before: 20
    QCOMPARE(steps(), (QVector<qint64>{20}));
    view.setStep(20);  // no change, no signal
    QCOMPARE(steps(), (QVector<qint64>{20}));
    view.stepBy(-1);
    QCOMPARE(steps(), (QVector<qint64>{20, 10}));
    // The user drags the scrubber to its last stop.
    QSlider* scrubber = nullptr;
    for (auto* slider : view.findChildren<QSlider*>())
        if (slider->accessibleName() == QStringLiteral("Step shown"))
            scrubber = slider;
    QVERIFY(scrubber);
    scrubber->setValue(2);
    QCOMPARE(steps(), (QVector<qint64>{20, 10, 30}));
    // Live: -1; frozen again, then another run chosen: live, -1.
    view.setLive(true);
    QCOMPARE(steps(), (QVector<qint64>{20, 10, 30, -1}));
    view.setStep(10);
    view.setCurrentRun(QStringLiteral("b"));
    QCOMPARE(steps(), (QVector<qint64>{20, 10, 30, -1, 10, -1}));
    // Unticking Live freezes on the newest stop (run B's only step, 5).
    view.findChild<QCheckBox*>()->setChecked(false);
    QCOMPARE(steps().back(), 5);
}

void TestInsightsView::insightsShowsHeadRolesAndTheLogitLens()
{
    auto history = fullHistory();
    auto roles = [](double previous) {
        HeadRoleScores h;
        h.roles = {"previous token", "self"};
        h.scores = {{{previous, 0.25}, {0.125, 0.5}}};
        h.dominant = {{0, 1}};
        return h;
    };
    ValidationInsights early, late;
    early.step = 10;
    early.heads = roles(0.5);
    late.step = 30;
    late.heads = roles(0.75);
    history->addValidationInsight(early);
    history->addValidationInsight(late);
    ProbeResult lens = *history->captureAt(QStringLiteral("probe"), 20);
    lens.predictionLabels = {"neg", "pos"};
    lens.logitLens = {LensStage{0, "ffn", {0.75f, 0.25f}}, LensStage{1, "ffn", {0.25f, 0.75f}}};
    history->addCapture(lens);

    InsightsView view;
    view.addRun(QStringLiteral("a"), QStringLiteral("Run A"), history);
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setPage(InsightsView::Page::Heads);
    QCOMPARE(view.currentPage(), static_cast<InsightPage*>(view.headRoles()));
    QCOMPARE(view.headRoles()->grid(0)->dominantScore(0, 0), 0.75);  // live: the validation at 30
    view.setStep(20);
    QCOMPARE(view.headRoles()->grid(0)->dominantScore(0, 0), 0.5);  // the one at 10
    QVERIFY(view.headRoles()->grid(0)->title().contains(QStringLiteral("step 10")));
    QCOMPARE(view.headRoles()->csv(),
             QByteArray("step,run,layer,head,previous token,self,dominant\n"
                        "10,Run A,1,1,0.5,0.25,previous token\n"
                        "10,Run A,1,2,0.125,0.5,self\n"));

    view.setPage(InsightsView::Page::LogitLens);
    QCOMPARE(view.currentPage(), static_cast<InsightPage*>(view.logitLens()));
    QCOMPARE(view.logitLens()->lensMap(0)->topColumns(), (QVector<int>{0, 1}));
    QCOMPARE(view.logitLens()->topLines(0).back(), QStringLiteral("block 2 ffn: predicts pos (0.75)"));
    view.setStep(10);  // the capture at 10 has no lens
    QVERIFY(view.logitLens()->emptyLabel()->text().contains(QStringLiteral("no logit lens")));

    // Both export like every page.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    view.setLive(true);
    for (const InsightsView::Page page : {InsightsView::Page::Heads, InsightsView::Page::LogitLens}) {
        view.setPage(page);
        QString error;
        const QString png = dir.filePath(QStringLiteral("page%1.png").arg(int(page)));
        QVERIFY2(view.exportImage(png, &error), qPrintable(error));
        QCOMPARE(QImage(png).size(), view.currentPage()->exportArea()->size() * 2);
        const QString csv = dir.filePath(QStringLiteral("page%1.csv").arg(int(page)));
        QVERIFY2(view.exportCsv(csv, &error), qPrintable(error));
        QFile file(csv);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(file.readAll(), view.currentPage()->csv());
    }
    QCOMPARE(view.currentPage()->csv().count('\n'), 1 + 4);  // 2 stages x 2 classes
}

int main(int argc, char** argv)
{
    // Runs without a display, also when started by hand rather than by ctest.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestInsightsView test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_insightsview.moc"
