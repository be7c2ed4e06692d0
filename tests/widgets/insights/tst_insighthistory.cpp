// Tests InsightHistory and the readings of a ProbeResult: order, replacement, look-ups, thinning, revisions; a probe's text, tokens, maps, weights, mean over heads and lens stage names; tokens shown with their whitespace.
// Every expected value below is worked out by hand from the constructed data.
#include "InsightTestData.h"

using namespace widelab;
using namespace widelab::insighttest;

class TestInsightHistory : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void historyKeepsStatesAndCapturesInStepOrder();
    void historyReplacesTheItemOfTheSameStep();
    void historyLooksUpAtOrBeforeAStep();
    void historyStepsAreTheSortedUnion();
    void historyTruncatesAfterAStep();
    void historyThinsPastTheLimitKeepingTheEnds();
    void historyRevisionIncreasesWithEveryChange();
    void probeCaptureWeightAndMeanOverHeads();
    void probeTextTokensAndStagesAsShown();
    void visibleTokenShowsWhitespace();
};

void TestInsightHistory::historyKeepsStatesAndCapturesInStepOrder()
{
    InsightHistory history;
    QVERIFY(history.isEmpty());
    history.addState(stateAt(30));
    history.addState(stateAt(10));
    history.addState(stateAt(20));
    history.addCapture(captureOf(20, QStringLiteral("b"), {QStringLiteral("t")}));
    history.addCapture(captureOf(5, QStringLiteral("a"), {QStringLiteral("t")}));
    history.addCapture(captureOf(15, QStringLiteral("b"), {QStringLiteral("t")}));
    history.addCapture(captureOf(1, QStringLiteral("b"), {QStringLiteral("t")}));

    QVERIFY(!history.isEmpty());
    QCOMPARE(stepsOf(history.states()), (QVector<qint64>{10, 20, 30}));
    QCOMPARE(history.probeTexts(), (QStringList{QStringLiteral("b"), QStringLiteral("a")}));  // order first seen
    QCOMPARE(stepsOf(history.captures(QStringLiteral("b"))), (QVector<qint64>{1, 15, 20}));
    QCOMPARE(stepsOf(history.captures(QStringLiteral("a"))), (QVector<qint64>{5}));
    QVERIFY(history.captures(QStringLiteral("never")).isEmpty());
}

void TestInsightHistory::historyReplacesTheItemOfTheSameStep()
{
    InsightHistory history;
    history.addState(stateAt(10));
    TrainingSnapshot replacement = stateAt(10);
    PathWeights path;
    path.paths = 2;
    replacement.paths.push_back(path);
    history.addState(replacement);
    history.addState(stateAt(20));
    QCOMPARE(history.states().size(), 2);
    QCOMPARE(history.states()[0].step, 10);
    QCOMPARE(history.states()[0].paths.size(), std::size_t{1});  // the second state of step 10 won

    history.addCapture(captureOf(5, QStringLiteral("a"), {QStringLiteral("old")}));
    history.addCapture(captureOf(5, QStringLiteral("a"), {QStringLiteral("new"), QStringLiteral("er")}));
    QCOMPARE(history.captures(QStringLiteral("a")).size(), 1);
    QCOMPARE(probeTokens(history.captures(QStringLiteral("a")).front()),
             (QStringList{QStringLiteral("new"), QStringLiteral("er")}));
    QCOMPARE(history.probeTexts(), QStringList{QStringLiteral("a")});
}

void TestInsightHistory::historyLooksUpAtOrBeforeAStep()
{
    InsightHistory history;
    QCOMPARE(history.stateAt(-1), nullptr);
    QCOMPARE(history.captureAt(QStringLiteral("a"), -1), nullptr);
    for (qint64 step : {10, 20, 30})
        history.addState(stateAt(step));
    history.addCapture(captureOf(5, QStringLiteral("a"), {QStringLiteral("t")}));
    history.addCapture(captureOf(25, QStringLiteral("a"), {QStringLiteral("t")}));

    QCOMPARE(history.stateAt(9), nullptr);  // before the first
    QCOMPARE(history.stateAt(0), nullptr);
    QCOMPARE(history.stateAt(10)->step, 10);
    QCOMPARE(history.stateAt(19)->step, 10);
    QCOMPARE(history.stateAt(20)->step, 20);
    QCOMPARE(history.stateAt(29)->step, 20);
    QCOMPARE(history.stateAt(30)->step, 30);
    QCOMPARE(history.stateAt(1000)->step, 30);
    QCOMPARE(history.stateAt(-1)->step, 30);  // the newest

    QCOMPARE(history.captureAt(QStringLiteral("a"), 4), nullptr);
    QCOMPARE(history.captureAt(QStringLiteral("a"), 5)->step, 5);
    QCOMPARE(history.captureAt(QStringLiteral("a"), 24)->step, 5);
    QCOMPARE(history.captureAt(QStringLiteral("a"), 25)->step, 25);
    QCOMPARE(history.captureAt(QStringLiteral("a"), 99)->step, 25);
    QCOMPARE(history.captureAt(QStringLiteral("a"), -1)->step, 25);
    QCOMPARE(history.captureAt(QStringLiteral("b"), -1), nullptr);
}

void TestInsightHistory::historyStepsAreTheSortedUnion()
{
    InsightHistory history;
    QCOMPARE(history.lastStep(), -1);
    QVERIFY(history.steps().isEmpty());
    for (qint64 step : {30, 10, 20})
        history.addState(stateAt(step));
    history.addCapture(captureOf(20, QStringLiteral("a"), {QStringLiteral("t")}));
    history.addCapture(captureOf(5, QStringLiteral("a"), {QStringLiteral("t")}));
    history.addCapture(captureOf(15, QStringLiteral("b"), {QStringLiteral("t")}));
    history.addCapture(captureOf(30, QStringLiteral("b"), {QStringLiteral("t")}));
    QCOMPARE(history.steps(), (QVector<qint64>{5, 10, 15, 20, 30}));
    QCOMPARE(history.lastStep(), 30);

    InsightHistory capturesOnly;
    capturesOnly.addCapture(captureOf(40, QStringLiteral("a"), {QStringLiteral("t")}));
    QVERIFY(!capturesOnly.isEmpty());
    QCOMPARE(capturesOnly.steps(), QVector<qint64>{40});
    QCOMPARE(capturesOnly.lastStep(), 40);
}

void TestInsightHistory::historyTruncatesAfterAStep()
{
    InsightHistory history;
    for (qint64 step : {10, 20, 30})
        history.addState(stateAt(step));
    history.addCapture(captureOf(5, QStringLiteral("a"), {QStringLiteral("t")}));
    history.addCapture(captureOf(20, QStringLiteral("a"), {QStringLiteral("t")}));
    history.addCapture(captureOf(25, QStringLiteral("b"), {QStringLiteral("t")}));

    history.truncateAfter(20);  // 20 itself stays
    QCOMPARE(stepsOf(history.states()), (QVector<qint64>{10, 20}));
    QCOMPARE(stepsOf(history.captures(QStringLiteral("a"))), (QVector<qint64>{5, 20}));
    QVERIFY(history.captures(QStringLiteral("b")).isEmpty());
    QCOMPARE(history.steps(), (QVector<qint64>{5, 10, 20}));
    QCOMPARE(history.lastStep(), 20);

    history.truncateAfter(9);
    QCOMPARE(stepsOf(history.states()), QVector<qint64>{});
    QCOMPARE(history.steps(), QVector<qint64>{5});
    QCOMPARE(history.stateAt(-1), nullptr);

    // A resumed run retraces: the steps after the checkpoint come again.
    history.addState(stateAt(12));
    QCOMPARE(history.steps(), (QVector<qint64>{5, 12}));

    history.clear();
    QVERIFY(history.isEmpty());
    QCOMPARE(history.lastStep(), -1);
}

void TestInsightHistory::historyThinsPastTheLimitKeepingTheEnds()
{
    InsightHistory history;
    const int limit = InsightHistory::kMaxStates;
    // Up to the limit everything is kept.
    for (int i = 0; i < limit; ++i)
        history.addState(stateAt(qint64(i) * 10));
    QCOMPARE(history.states().size(), limit);
    QCOMPARE(history.states().front().step, 0);
    QCOMPARE(history.states().back().step, qint64(limit - 1) * 10);

    // Past it: bounded, first and newest kept, still strictly ascending.
    for (int i = limit; i < 3 * limit; ++i) {
        history.addState(stateAt(qint64(i) * 10));
        const QVector<TrainingSnapshot>& states = history.states();
        if (states.size() > limit || states.front().step != 0 || states.back().step != qint64(i) * 10)
            QFAIL(qPrintable(QStringLiteral("after adding step %1: %2 states, first %3, last %4")
                                 .arg(qint64(i) * 10)
                                 .arg(states.size())
                                 .arg(states.front().step)
                                 .arg(states.back().step)));
    }
    const QVector<qint64> steps = stepsOf(history.states());
    QVERIFY(std::adjacent_find(steps.begin(), steps.end(), [](qint64 a, qint64 b) { return a >= b; }) == steps.end());
    QVERIFY(steps.size() < 3 * limit);
    // The newest stretch keeps its full grain: the last two steps added are both there.
    QCOMPARE(steps[steps.size() - 2], qint64(3 * limit - 2) * 10);

    // Captures: per text, the same rule at kMaxCapturesPerText.
    const int captureLimit = InsightHistory::kMaxCapturesPerText;
    for (int i = 0; i < 4 * captureLimit; ++i) {
        history.addCapture(captureOf(i, QStringLiteral("a"), {QStringLiteral("t")}));
        const QVector<ProbeResult>& list = history.captures(QStringLiteral("a"));
        QVERIFY(list.size() <= captureLimit);
        QCOMPARE(list.front().step, 0);
        QCOMPARE(list.back().step, i);
    }
    history.addCapture(captureOf(0, QStringLiteral("b"), {QStringLiteral("t")}));
    QCOMPARE(history.captures(QStringLiteral("b")).size(), 1);  // another text's count is its own
}

void TestInsightHistory::historyRevisionIncreasesWithEveryChange()
{
    InsightHistory history;
    quint64 last = history.revision();
    auto increased = [&] {
        const bool up = history.revision() > last;
        last = history.revision();
        return up;
    };
    history.addState(stateAt(10));
    QVERIFY(increased());
    history.addState(stateAt(10));  // a replacement is a change too
    QVERIFY(increased());
    history.addCapture(captureOf(10, QStringLiteral("a"), {QStringLiteral("t")}));
    QVERIFY(increased());
    history.truncateAfter(5);
    QVERIFY(increased());
    history.clear();
    QVERIFY(increased());
}

void TestInsightHistory::probeCaptureWeightAndMeanOverHeads()
{
    // Two heads over three tokens.
    const Map head0{0.5f, 0.5f, 0.0f, /**/ 0.25f, 0.25f, 0.5f, /**/ 1.0f, 0.0f, 0.0f};
    const Map head1{0.25f, 0.75f, 0.0f, /**/ 0.5f, 0.0f, 0.5f, /**/ 0.0f, 0.0f, 1.0f};
    const ProbeResult capture =
        captureOf(3, QStringLiteral("a b c"), {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")},
                  {{head0, head1}});
    QCOMPARE(probeTokenCount(capture), 3);
    QCOMPARE(probeLayers(capture), 1);
    QCOMPARE(probeHeads(capture), 2);
    QCOMPARE(probeWeight(capture, 0, 0, 0, 1), 0.5f);
    QCOMPARE(probeWeight(capture, 0, 0, 2, 0), 1.0f);
    QCOMPARE(probeWeight(capture, 0, 1, 0, 1), 0.75f);
    QCOMPARE(probeWeight(capture, 0, 1, 1, 0), 0.5f);
    QCOMPARE(probeWeight(capture, 0, 1, 2, 2), 1.0f);
    // Outside the map: 0.
    QCOMPARE(probeWeight(capture, 1, 0, 0, 0), 0.0f);
    QCOMPARE(probeWeight(capture, 0, 2, 0, 0), 0.0f);
    QCOMPARE(probeWeight(capture, 0, -1, 0, 0), 0.0f);
    QCOMPARE(probeWeight(capture, 0, 0, 3, 0), 0.0f);
    QCOMPARE(probeWeight(capture, 0, 0, 0, -1), 0.0f);

    // A head's map row-major, as the views draw it; nothing outside the layers and heads.
    QVERIFY(sameValues(headMap(capture, 0, 1), head1));
    QVERIFY(headMap(capture, 0, 2).isEmpty());
    QVERIFY(headMap(capture, 1, 0).isEmpty());
    QCOMPARE(layerMaps(capture, 0).size(), 2);
    QVERIFY(sameValues(layerMaps(capture, 0).at(0), head0));
    QVERIFY(layerMaps(capture, -1).isEmpty());

    // (head0 + head1) / 2, cell by cell.
    const Map mean{0.375f, 0.625f, 0.0f, /**/ 0.375f, 0.125f, 0.5f, /**/ 0.5f, 0.0f, 0.5f};
    QVERIFY(sameValues(meanOverHeads(capture, 0), mean));
    QVERIFY(sameValues(meanOverHeads(capture, 4), Map(9, 0.0f)));  // no such layer: zeros
}

void TestInsightHistory::probeTextTokensAndStagesAsShown()
{
    ProbeResult probe;
    probe.step = 7;
    probe.text = std::string("caf\xc3", 4);  // "café" cut inside its last character
    probe.tokens = {"caf", std::string("\xc3", 1)};
    probe.predictionLabels = {"négatif", "positive"};
    probe.logitLens = {LensStage{0, "attention", {0.5f, 0.5f}}, LensStage{2, "ffn", {0.25f, 0.75f}}};
    QCOMPARE(probeTextOf(probe), QStringLiteral("caf\\xc3"));  // legibleBytes: the lone byte in hex
    QCOMPARE(probeLabels(probe), (QStringList{QStringLiteral("négatif"), QStringLiteral("positive")}));
    QCOMPARE(probeTokens(probe).size(), 2);
    QCOMPARE(probeTokens(probe).front(), QStringLiteral("caf"));
    QCOMPARE(lensStageName(probe.logitLens[0]), QStringLiteral("block 1 attention"));
    QCOMPARE(lensStageName(probe.logitLens[1]), QStringLiteral("block 3 ffn"));

    // The history keys the probe by the text as shown.
    InsightHistory history;
    history.addCapture(probe);
    QCOMPARE(history.probeTexts(), QStringList{QStringLiteral("caf\\xc3")});
    QCOMPARE(history.captureAt(QStringLiteral("caf\\xc3"), -1)->step, 7);
    QCOMPARE(history.captureAt(QStringLiteral("caf\\xc3"), -1)->text, probe.text);  // the bytes as they came
}

void TestInsightHistory::visibleTokenShowsWhitespace()
{
    QCOMPARE(visibleToken(QStringLiteral("cat")), QStringLiteral("cat"));
    QCOMPARE(visibleToken(QStringLiteral(" ")), QString(QChar(0x2423)));
    QCOMPARE(visibleToken(QStringLiteral("\n")), QString(QChar(0x23CE)));
    QCOMPARE(visibleToken(QStringLiteral("\t")), QString(QChar(0x21E5)));
    QCOMPARE(visibleToken(QStringLiteral(" cat")), QStringLiteral(" cat"));  // only lone spaces are marked
}

int main(int argc, char** argv)
{
    // Runs without a display, also when started by hand rather than by ctest.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestInsightHistory test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_insighthistory.moc"
