// Tests the interpretability widgets with hand-built data: InsightHistory (order,
// replacement, look-ups, thinning), ProbeCapture, MatrixView, HeadGrid,
// TokenFlowView, PredictionBars and the pages AttentionView, ExpertsView,
// LayerNormView, PathsView, InsightsView (scrubber, export, probe requests,
// the shown step, the head roles and logit lens pages).
// Every expected value below is worked out by hand from the constructed data.
#include "AttentionView.h"
#include "ColorScale.h"
#include "CurvePlot.h"
#include "ExpertsView.h"
#include "HeadRolesView.h"
#include "HeadGrid.h"
#include "InsightHistory.h"
#include "InsightsView.h"
#include "LayerNormView.h"
#include "LogitLensView.h"
#include "MatrixView.h"
#include "PathsView.h"
#include "PredictionBars.h"
#include "TokenFlowView.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QInputDialog>
#include <QLabel>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSlider>
#include <QTableWidget>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <tuple>

using namespace widelab;

namespace {

using Map = QVector<float>;  // tokens x tokens, row = query

ModelState stateAt(qint64 step)
{
    ModelState state;
    state.step = step;
    return state;
}

ProbeCapture captureOf(qint64 step, const QString& text, const QStringList& tokens,
                       const QVector<QVector<Map>>& attention = {})
{
    ProbeCapture capture;
    capture.step = step;
    capture.text = text;
    capture.tokens = tokens;
    capture.attention = attention;
    return capture;
}

QVector<qint64> stepsOf(const QVector<ModelState>& states)
{
    QVector<qint64> steps;
    for (const ModelState& s : states)
        steps << s.step;
    return steps;
}

QVector<qint64> stepsOf(const QVector<ProbeCapture>& captures)
{
    QVector<qint64> steps;
    for (const ProbeCapture& c : captures)
        steps << c.step;
    return steps;
}

bool near(double a, double b, double tolerance = 1e-6) { return std::abs(a - b) <= tolerance; }

bool sameValues(const QVector<float>& actual, const QVector<float>& expected, double tolerance = 1e-6)
{
    if (actual.size() != expected.size()) {
        qWarning() << "sizes differ:" << actual.size() << expected.size();
        return false;
    }
    for (qsizetype i = 0; i < actual.size(); ++i)
        if (!near(actual[i], expected[i], tolerance)) {
            qWarning() << "value" << i << "is" << actual[i] << "expected" << expected[i];
            return false;
        }
    return true;
}

using Curve = QVector<QPair<double, double>>;  // (step or key, value)

bool sameCurve(const Curve& actual, const Curve& expected, double tolerance = 1e-9)
{
    if (actual.size() != expected.size()) {
        qWarning() << "curve sizes differ:" << actual << expected;
        return false;
    }
    for (qsizetype i = 0; i < actual.size(); ++i)
        if (!near(actual[i].first, expected[i].first, tolerance)
            || !near(actual[i].second, expected[i].second, tolerance)) {
            qWarning() << "curves differ:" << actual << expected;
            return false;
        }
    return true;
}

// Three heads over four tokens; head h puts all its weight on key (q + h) % 4 for query q.
ProbeCapture shiftedHeads()
{
    QVector<Map> heads;
    for (int h = 0; h < 3; ++h) {
        Map map(16, 0.0f);
        for (int q = 0; q < 4; ++q)
            map[q * 4 + (q + h) % 4] = 1.0f;
        heads << map;
    }
    return captureOf(7, QStringLiteral("the cat sat down"),
                     {QStringLiteral("the"), QStringLiteral("cat"), QStringLiteral("sat"), QStringLiteral("down")},
                     {heads});
}

// The probe of the attention tests: three tokens (the first holds a comma, so the CSV quotes it),
// two layers of two heads, at step 10. All weights are dyadic, so floats hold them exactly.
const QStringList kTokens{QStringLiteral("x,y"), QStringLiteral("cat"), QStringLiteral("sat")};
const Map kL0H0{0.5f, 0.5f, 0.0f, /**/ 0.0f, 1.0f, 0.0f, /**/ 0.25f, 0.25f, 0.5f};
const Map kL0H1{1.0f, 0.0f, 0.0f, /**/ 0.5f, 0.5f, 0.0f, /**/ 0.0f, 0.5f, 0.5f};
const Map kL1H0{0.0f, 0.0f, 1.0f, /**/ 0.0f, 1.0f, 0.0f, /**/ 1.0f, 0.0f, 0.0f};
const Map kL1H1{0.25f, 0.75f, 0.0f, /**/ 0.125f, 0.375f, 0.5f, /**/ 0.0f, 0.0f, 1.0f};
// Step 20: layer 2, head 2 looks at the first token only.
const Map kL1H1Later{1.0f, 0.0f, 0.0f, /**/ 1.0f, 0.0f, 0.0f, /**/ 1.0f, 0.0f, 0.0f};

ProbeCapture attentionProbe(qint64 step)
{
    return captureOf(step, QStringLiteral("probe"), kTokens,
                     {{kL0H0, kL0H1}, {kL1H0, step == 10 ? kL1H1 : kL1H1Later}});
}

// Finds the visible QInputDialog and answers it with `text` (polling until it is open).
void answerInputDialog(const QString& text, int triesLeft = 200)
{
    QTimer::singleShot(10, [text, triesLeft] {
        for (QWidget* widget : QApplication::topLevelWidgets())
            if (auto* dialog = qobject_cast<QInputDialog*>(widget); dialog != nullptr && dialog->isVisible()) {
                dialog->setTextValue(text);
                dialog->accept();
                return;
            }
        if (triesLeft > 0)
            answerInputDialog(text, triesLeft - 1);
        else if (QWidget* modal = QApplication::activeModalWidget())
            modal->close();  // never leave the test hanging in exec()
    });
}

QLabel* visibleLabelContaining(QWidget* parent, const QString& text)
{
    for (QLabel* label : parent->findChildren<QLabel*>())
        if (label->isVisibleTo(parent) && label->text().contains(text))
            return label;
    return nullptr;
}

}  // namespace

class TestInsights : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // InsightHistory and ProbeCapture.
    void historyKeepsStatesAndCapturesInStepOrder();
    void historyReplacesTheItemOfTheSameStep();
    void historyLooksUpAtOrBeforeAStep();
    void historyStepsAreTheSortedUnion();
    void historyTruncatesAfterAStep();
    void historyThinsPastTheLimitKeepingTheEnds();
    void historyRevisionIncreasesWithEveryChange();
    void probeCaptureWeightAndMeanOverHeads();
    void visibleTokenShowsWhitespace();

    // The drawing widgets.
    void matrixSequentialColoursSpanTheRange();
    void matrixCellGeometryAndReadout();
    void matrixCategoricalAndDivergingColours();
    void headGridHitsReadoutsAndClicks();
    void headGridColourRangeOfTheLayerOrEachHead();
    void tokenFlowLinesFollowTheFocus();
    void predictionBarsSortAndLabel();

    // The pages.
    void attentionOneHeadAndMeanShowTheConstructedMaps();
    void attentionComparisonPaneAndMessages();
    void attentionCsvHoldsEveryWeightOfEveryShownRun();
    void attentionWithoutAProbeShowsBothRunsOnTheSameText();
    void expertsWarningsSharesAndRouting();
    void expertsOverTimeAndFrozenStep();
    void expertsWithoutRoutingShowsTheDenseMessage();
    void layerNormCurvesAndMaps();
    void pathsCurvesAndDiversity();
    void pathsWithoutPathWeightsShowsTheOnePathMessage();

    // Damaged data (a metrics.jsonl written by hand, a bug elsewhere): no crash, no nonsense range.
    void matrixRangesIgnoreNonFiniteValuesAndMismatchesExplainThemselves();
    void attentionWithoutTokensOrWithMismatchedMapsShowsWhy();
    void attentionWithNaNWeightsKeepsAFiniteScale();
    void predictionBarsLeaveOutNaN();
    void expertsWithoutExpertsOrTokensShowWhy();
    void layerNormRowsOfUnequalLengthOrNoneAreDrawnOrExplained();
    void pathsWithDamagedNumbersStayInBounds();
    void curvesLeaveValuesPastTheAxisLimitsOutOfTheFit();

    // InsightsView.
    void insightsRunsHistoryChangesAndScrubbing();
    void insightsSetStepFreezesOnARecordedStep();
    void insightsExportsImages();
    void insightsExportsTheCurrentPagesCsv();
    void insightsAskForProbeRequestsBothRuns();

    // Defects of a first hour (issue 16).
    void expertsFollowTheConfigurationAndShowTheNewestRoutedStep();
    void pathsFollowTheConfigurationAndNameAShippedPreset();
    void insightsProbeBoxHoldsOnlyTheShownRunsTexts();
    void insightsChoosingAnotherRunFollowsItLive();
    void predictionBarsMarkTheTrueClass();

    // Issue 19: the head roles and logit lens pages, the shown step for the curves' cursor.
    void insightsAnnouncesTheShownStep();
    void insightsShowsHeadRolesAndTheLogitLens();
};

// --- InsightHistory ---------------------------------------------------------

void TestInsights::historyKeepsStatesAndCapturesInStepOrder()
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

void TestInsights::historyReplacesTheItemOfTheSameStep()
{
    InsightHistory history;
    history.addState(stateAt(10));
    ModelState replacement = stateAt(10);
    PathWeightState path;
    path.paths = 2;
    replacement.paths << path;
    history.addState(replacement);
    history.addState(stateAt(20));
    QCOMPARE(history.states().size(), 2);
    QCOMPARE(history.states()[0].step, 10);
    QCOMPARE(history.states()[0].paths.size(), 1);  // the second state of step 10 won

    history.addCapture(captureOf(5, QStringLiteral("a"), {QStringLiteral("old")}));
    history.addCapture(captureOf(5, QStringLiteral("a"), {QStringLiteral("new"), QStringLiteral("er")}));
    QCOMPARE(history.captures(QStringLiteral("a")).size(), 1);
    QCOMPARE(history.captures(QStringLiteral("a")).front().tokens,
             (QStringList{QStringLiteral("new"), QStringLiteral("er")}));
    QCOMPARE(history.probeTexts(), QStringList{QStringLiteral("a")});
}

void TestInsights::historyLooksUpAtOrBeforeAStep()
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

void TestInsights::historyStepsAreTheSortedUnion()
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

void TestInsights::historyTruncatesAfterAStep()
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

void TestInsights::historyThinsPastTheLimitKeepingTheEnds()
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
        const QVector<ModelState>& states = history.states();
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
        const QVector<ProbeCapture>& list = history.captures(QStringLiteral("a"));
        QVERIFY(list.size() <= captureLimit);
        QCOMPARE(list.front().step, 0);
        QCOMPARE(list.back().step, i);
    }
    history.addCapture(captureOf(0, QStringLiteral("b"), {QStringLiteral("t")}));
    QCOMPARE(history.captures(QStringLiteral("b")).size(), 1);  // another text's count is its own
}

void TestInsights::historyRevisionIncreasesWithEveryChange()
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

void TestInsights::probeCaptureWeightAndMeanOverHeads()
{
    // Two heads over three tokens.
    const Map head0{0.5f, 0.5f, 0.0f, /**/ 0.25f, 0.25f, 0.5f, /**/ 1.0f, 0.0f, 0.0f};
    const Map head1{0.25f, 0.75f, 0.0f, /**/ 0.5f, 0.0f, 0.5f, /**/ 0.0f, 0.0f, 1.0f};
    const ProbeCapture capture =
        captureOf(3, QStringLiteral("a b c"), {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")},
                  {{head0, head1}});
    QCOMPARE(capture.tokenCount(), 3);
    QCOMPARE(capture.layers(), 1);
    QCOMPARE(capture.heads(), 2);
    QCOMPARE(capture.weight(0, 0, 0, 1), 0.5f);
    QCOMPARE(capture.weight(0, 0, 2, 0), 1.0f);
    QCOMPARE(capture.weight(0, 1, 0, 1), 0.75f);
    QCOMPARE(capture.weight(0, 1, 1, 0), 0.5f);
    QCOMPARE(capture.weight(0, 1, 2, 2), 1.0f);
    // Outside the map: 0.
    QCOMPARE(capture.weight(1, 0, 0, 0), 0.0f);
    QCOMPARE(capture.weight(0, 2, 0, 0), 0.0f);
    QCOMPARE(capture.weight(0, -1, 0, 0), 0.0f);
    QCOMPARE(capture.weight(0, 0, 3, 0), 0.0f);
    QCOMPARE(capture.weight(0, 0, 0, -1), 0.0f);

    // (head0 + head1) / 2, cell by cell.
    const Map mean{0.375f, 0.625f, 0.0f, /**/ 0.375f, 0.125f, 0.5f, /**/ 0.5f, 0.0f, 0.5f};
    QVERIFY(sameValues(capture.meanOverHeads(0), mean));
    QVERIFY(sameValues(capture.meanOverHeads(4), Map(9, 0.0f)));  // no such layer: zeros
}

void TestInsights::visibleTokenShowsWhitespace()
{
    QCOMPARE(visibleToken(QStringLiteral("cat")), QStringLiteral("cat"));
    QCOMPARE(visibleToken(QStringLiteral(" ")), QString(QChar(0x2423)));
    QCOMPARE(visibleToken(QStringLiteral("\n")), QString(QChar(0x23CE)));
    QCOMPARE(visibleToken(QStringLiteral("\t")), QString(QChar(0x21E5)));
    QCOMPARE(visibleToken(QStringLiteral(" cat")), QStringLiteral(" cat"));  // only lone spaces are marked
}

// --- MatrixView -------------------------------------------------------------

void TestInsights::matrixSequentialColoursSpanTheRange()
{
    MatrixView view;
    view.resize(500, 400);
    MatrixView::Matrix m;
    m.rows = 2;
    m.cols = 3;
    m.values = {0, 1, 2, 3, 4, 5};  // low = high = 0: the data's min..max, 0..5
    view.setMatrix(m);
    QCOMPARE(view.cellColor(1, 2), QColor(colorscale::sequential(1.0)));  // the max, 5
    QCOMPARE(view.cellColor(0, 0), QColor(colorscale::sequential(0.0)));  // the min, 0
    QCOMPARE(view.cellColor(0, 1), QColor(colorscale::sequential(0.2)));  // 1 of 0..5
    QCOMPARE(view.cellColor(1, 0), QColor(colorscale::sequential(0.6)));  // 3 of 0..5
    // The ramp's ends are the viridis stops.
    QCOMPARE(colorscale::sequential(0.0), qRgb(68, 1, 84));
    QCOMPARE(colorscale::sequential(1.0), qRgb(253, 231, 37));

    // A fixed range: 0..10, so 5 is the middle and 0 the bottom.
    m.low = 0;
    m.high = 10;
    view.setMatrix(m);
    QCOMPARE(view.cellColor(1, 2), QColor(colorscale::sequential(0.5)));
    QCOMPARE(view.cellColor(0, 0), QColor(colorscale::sequential(0.0)));
    QCOMPARE(view.scaleLowText(), QStringLiteral("0.000"));
    QCOMPARE(view.scaleHighText(), QStringLiteral("10.000"));

    // Equal values: every cell the bottom colour, no division by zero.
    m.low = m.high = 0;
    m.values = {2, 2, 2, 2, 2, 2};
    view.setMatrix(m);
    QCOMPARE(view.cellColor(1, 1), QColor(colorscale::sequential(0.0)));

    view.clear(QStringLiteral("nothing here"));
    QCOMPARE(view.emptyText(), QStringLiteral("nothing here"));
    QVERIFY(!view.cellColor(0, 0).isValid());
    QCOMPARE(view.cellAt(QPointF(250, 200)), QPoint(-1, -1));
}

void TestInsights::matrixCellGeometryAndReadout()
{
    MatrixView view;
    view.resize(500, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    MatrixView::Matrix m;
    m.rows = 2;
    m.cols = 3;
    m.values = {0, 1, 2, 3, 4, 5};
    m.rowLabels = {QStringLiteral("r0"), QStringLiteral("r1")};
    m.columnLabels = {QStringLiteral("c0"), QStringLiteral("c1"), QStringLiteral("c2")};
    m.rowTitle = QStringLiteral("query");
    m.columnTitle = QStringLiteral("key");
    m.valueName = QStringLiteral("weight");
    view.setMatrix(m);

    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) {
            const QRectF cell = view.cellRect(r, c);
            QVERIFY(cell.width() > 4 && cell.height() > 4);
            QVERIFY(view.rect().contains(cell.toRect()));
            QCOMPARE(view.cellAt(cell.center()), QPoint(c, r));
        }
    // Cells tile: the next column starts where this one ends, rows stack downwards.
    QVERIFY(near(view.cellRect(0, 1).left(), view.cellRect(0, 0).right()));
    QVERIFY(near(view.cellRect(1, 0).top(), view.cellRect(0, 0).bottom()));
    QCOMPARE(view.cellAt(QPointF(1, 1)), QPoint(-1, -1));  // the margin

    const QString text = view.readout(1, 2);
    QVERIFY2(text.contains(QStringLiteral("query r1")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("key c2")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("weight 5.000")), qPrintable(text));
    QVERIFY(view.readout(2, 0).isEmpty());  // outside

    // Scaled values with a suffix: 0.25 reads 25.0%.
    m.values = {0.25f, 0.5f, 0.0f, 0.0f, 0.125f, 1.0f};
    m.valueScale = 100;
    m.valueSuffix = QStringLiteral("%");
    m.decimals = 1;
    view.setMatrix(m);
    QVERIFY2(view.readout(0, 0).endsWith(QStringLiteral("25.0%")), qPrintable(view.readout(0, 0)));
    QVERIFY2(view.readout(1, 1).endsWith(QStringLiteral("12.5%")), qPrintable(view.readout(1, 1)));

    // A custom read-out replaces the default.
    view.setReadout([](int row, int col) { return QStringLiteral("cell %1/%2").arg(row).arg(col); });
    QCOMPARE(view.readout(1, 0), QStringLiteral("cell 1/0"));

    // A click on a cell names it (row, column).
    QSignalSpy clicked(&view, &MatrixView::cellClicked);
    QTest::mouseClick(&view, Qt::LeftButton, {}, view.cellRect(1, 0).center().toPoint());
    QCOMPARE(clicked.size(), 1);
    QCOMPARE(clicked.front().at(0).toInt(), 1);
    QCOMPARE(clicked.front().at(1).toInt(), 0);
}

void TestInsights::matrixCategoricalAndDivergingColours()
{
    MatrixView view;
    view.resize(400, 300);
    MatrixView::Matrix m;
    m.scale = MatrixView::Scale::Categorical;
    m.rows = 1;
    m.cols = 4;
    m.categories = {0, 2, -1, 9};
    view.setMatrix(m);
    QCOMPARE(view.cellColor(0, 0).rgb(), colorscale::categorical(0).rgb());
    QCOMPARE(view.cellColor(0, 1).rgb(), colorscale::categorical(2).rgb());
    QCOMPARE(view.cellColor(0, 3).rgb(), colorscale::categorical(9).rgb());
    for (int category = 0; category < 12; ++category)  // -1 (none) is none of the categories' colours
        QVERIFY(view.cellColor(0, 2).rgb() != colorscale::categorical(category).rgb());
    // Categories past the eight base colours are variants, not repeats.
    QVERIFY(colorscale::categorical(9).rgb() != colorscale::categorical(1).rgb());
    QVERIFY(colorscale::categorical(0).rgb() != colorscale::categorical(1).rgb());

    // Diverging around 1: |value - 1| at most 3, so -2 is the blue end, 1 the neutral middle.
    MatrixView::Matrix d;
    d.scale = MatrixView::Scale::Diverging;
    d.rows = 1;
    d.cols = 3;
    d.center = 1;
    d.values = {-2.0f, 1.0f, 2.5f};
    view.setMatrix(d);
    QCOMPARE(view.cellColor(0, 1), QColor(colorscale::diverging(0)));
    QCOMPARE(view.cellColor(0, 0), QColor(colorscale::diverging(-1)));
    QCOMPARE(view.cellColor(0, 2), QColor(colorscale::diverging(0.5)));  // (2.5 - 1) / 3
    QCOMPARE(colorscale::diverging(0), qRgb(236, 236, 236));
    QCOMPARE(view.scaleLowText(), QStringLiteral("-2.000"));
    QCOMPARE(view.scaleHighText(), QStringLiteral("4.000"));

    // A fixed half range of 6: 2.5 is a quarter of the way to orange.
    d.halfRange = 6;
    view.setMatrix(d);
    QCOMPARE(view.cellColor(0, 1), QColor(colorscale::diverging(0)));
    QCOMPARE(view.cellColor(0, 2), QColor(colorscale::diverging(0.25)));
    QCOMPARE(view.cellColor(0, 0), QColor(colorscale::diverging(-0.5)));
}

// --- HeadGrid, TokenFlowView, PredictionBars ----------------------------------

// Head 1 peaks at 1.0, head 2 at 0.25: in one range for the layer head 2's
// peak is a quarter of the way up the scale; in each head's own range it is at the top.
void TestInsights::headGridColourRangeOfTheLayerOrEachHead()
{
    const Map strong{1.0f, 0.0f, 0.0f, 1.0f};
    const Map weak{0.25f, 0.0f, 0.0f, 0.25f};
    const ProbeCapture capture = captureOf(5, QStringLiteral("a b"), {QStringLiteral("a"), QStringLiteral("b")},
                                           {{strong, weak}});
    for (const bool perHead : {false, true}) {
        HeadGrid grid;
        grid.setScalePerHead(perHead);
        grid.setCapture(&capture, 0);
        grid.setCellSize(80);
        grid.resize(400, std::max(300, grid.minimumHeight()));
        const QImage image = grid.grab().toImage();
        auto colourAt = [&](int head, int query, int key) {
            const QRectF r = grid.mapRect(head);
            const QPointF centre(r.left() + (key + 0.5) * r.width() / 2, r.top() + (query + 0.5) * r.height() / 2);
            return QColor(image.pixel(centre.toPoint()));
        };
        QCOMPARE(colourAt(0, 0, 0), QColor(colorscale::sequential(1.0)));
        QCOMPARE(colourAt(0, 0, 1), QColor(colorscale::sequential(0.0)));
        QCOMPARE(colourAt(1, 1, 1), QColor(colorscale::sequential(perHead ? 1.0 : 0.25)));
        QCOMPARE(colourAt(1, 1, 0), QColor(colorscale::sequential(0.0)));
    }
}

void TestInsights::headGridHitsReadoutsAndClicks()
{
    const ProbeCapture capture = shiftedHeads();
    HeadGrid grid;
    grid.setCapture(&capture, 0);
    QCOMPARE(grid.heads(), 3);
    QCOMPARE(grid.tokens(), 4);
    QCOMPARE(grid.maxWeight(), 1.0f);
    grid.setCellSize(80);  // 20 pixels a token: labels shown
    QCOMPARE(grid.cellSize(), 80);
    QVERIFY(grid.showsLabels());
    // Two 80-pixel maps with a 10-pixel gap need 170 pixels plus the label gutter (at most 90);
    // three would need 260 plus the gutter (at least 4): 262 fits two per row whatever the gutter.
    grid.resize(262, std::max(400, grid.minimumHeight()));
    grid.show();
    QVERIFY(QTest::qWaitForWindowExposed(&grid));
    QCOMPARE(grid.columns(), 2);

    const QRectF first = grid.mapRect(0), second = grid.mapRect(1), third = grid.mapRect(2);
    QCOMPARE(first.size(), QSizeF(80, 80));
    QVERIFY(near(second.top(), first.top()));
    QVERIFY(second.left() >= first.right());
    QVERIFY(third.top() > first.bottom());  // the third head wraps to a second row
    QVERIFY(near(third.left(), first.left()));
    QVERIFY(grid.mapRect(3).isNull());
    QVERIFY(grid.height() >= third.bottom());

    const QStringList tokens = capture.tokens;
    for (int h = 0; h < 3; ++h) {
        const QRectF r = grid.mapRect(h);
        for (int q = 0; q < 4; ++q)
            for (int k = 0; k < 4; ++k) {
                const QPointF centre(r.left() + (k + 0.5) * r.width() / 4, r.top() + (q + 0.5) * r.height() / 4);
                const HeadGrid::Hit hit = grid.hitAt(centre);
                QCOMPARE(hit.head, h);
                QCOMPARE(hit.query, q);
                QCOMPARE(hit.key, k);
                if (k == (q + h) % 4) {
                    const QString text = grid.readout(hit);
                    QVERIFY2(text.contains(tokens[q]) && text.contains(tokens[k])
                                 && text.contains(QStringLiteral("1.000")),
                             qPrintable(text));
                }
            }
    }
    const QString zero = grid.readout({2, 0, 0});  // head 3 sends query 0 to key 2, not 0
    QVERIFY2(zero.contains(QStringLiteral("0.000")), qPrintable(zero));
    if (second.left() - first.right() > 2)  // the gap between maps is no map
        QVERIFY(!grid.hitAt(QPointF((first.right() + second.left()) / 2, first.center().y())).valid());

    QSignalSpy clicked(&grid, &HeadGrid::headClicked);
    QTest::mouseClick(&grid, Qt::LeftButton, {}, grid.mapRect(2).center().toPoint());
    QTest::mouseClick(&grid, Qt::LeftButton, {}, grid.mapRect(1).center().toPoint());
    QTest::mouseClick(&grid, Qt::LeftButton, {}, QPoint(1, 1));  // not on a map
    QCOMPARE(clicked.size(), 2);
    QCOMPARE(clicked[0].at(0).toInt(), 2);
    QCOMPARE(clicked[1].at(0).toInt(), 1);

    // A wide grid: all three in one row.
    grid.resize(1000, grid.height());
    QCOMPARE(grid.columns(), 3);
    QVERIFY(near(grid.mapRect(2).top(), grid.mapRect(0).top()));

    grid.setCapture(nullptr, 0);
    QCOMPARE(grid.heads(), 0);
    QVERIFY(!grid.hitAt(first.center()).valid());
}

void TestInsights::tokenFlowLinesFollowTheFocus()
{
    const Map head0{1.0f, 0.0f, 0.0f, /**/ 0.005f, 0.995f, 0.0f, /**/ 0.2f, 0.3f, 0.5f};
    const Map head1{0.6f, 0.4f, 0.0f, /**/ 0.5f, 0.25f, 0.25f, /**/ 0.0f, 0.0f, 1.0f};
    const ProbeCapture capture = captureOf(
        1, QStringLiteral("a b c"), {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")}, {{head0, head1}});
    TokenFlowView view;
    view.resize(360, 480);
    view.setCapture(&capture, 0);

    using Key = std::tuple<int, int, int>;  // query, key, head
    auto linesOf = [&view] {
        std::set<Key> keys;
        for (const TokenFlowView::Line& line : view.lines())
            keys.insert({line.query, line.key, line.head});
        return keys;
    };

    // Query 1: head 1's 0.005 to key 0 and head 1's 0 are below 0.01.
    view.setFocusToken(1, true);
    QCOMPARE(view.focusToken(), 1);
    QVERIFY(view.focusIsQuery());
    QCOMPARE(view.lines().size(), 4);
    QCOMPARE(linesOf(), (std::set<Key>{{1, 1, 0}, {1, 0, 1}, {1, 1, 1}, {1, 2, 1}}));
    for (const TokenFlowView::Line& line : view.lines())
        QCOMPARE(line.weight, capture.attention[0][line.head][line.query * 3 + line.key]);

    // Query 2: head 0's three weights, head 1's one.
    view.setFocusToken(2, true);
    QCOMPARE(linesOf(), (std::set<Key>{{2, 0, 0}, {2, 1, 0}, {2, 2, 0}, {2, 2, 1}}));

    // Key 0 (right side): who looks at token 0.
    view.setFocusToken(0, false);
    QVERIFY(!view.focusIsQuery());
    QCOMPARE(linesOf(), (std::set<Key>{{0, 0, 0}, {2, 0, 0}, {0, 0, 1}, {1, 0, 1}}));

    // No focus: the mean over heads, every pair but (0, 2), whose mean is 0.
    view.setFocusToken(-1, true);
    QCOMPARE(view.lines().size(), 8);
    for (const TokenFlowView::Line& line : view.lines()) {
        QCOMPARE(line.head, -1);
        QVERIFY(!(line.query == 0 && line.key == 2));
        QVERIFY(near(line.weight, (head0[line.query * 3 + line.key] + head1[line.query * 3 + line.key]) / 2));
    }

    // A token's rectangle is where tokenAt finds it, on its side.
    bool left = true;
    QCOMPARE(view.tokenAt(view.tokenRect(2, false).center(), &left), 2);
    QVERIFY(!left);
    QCOMPARE(view.tokenAt(view.tokenRect(1, true).center(), &left), 1);
    QVERIFY(left);
    QVERIFY(view.tokenRect(1, true).top() > view.tokenRect(0, true).top());

    // An out-of-range focus is no focus.
    view.setFocusToken(7, true);
    QCOMPARE(view.focusToken(), -1);
}

void TestInsights::predictionBarsSortAndLabel()
{
    PredictionBars bars;
    bars.setPrediction({0.1f, 0.6f, 0.3f}, {QStringLiteral("a"), QStringLiteral("b")}, QStringLiteral("Prediction"));
    const auto shown = bars.shown();
    QCOMPARE(shown.size(), 3);
    QCOMPARE(shown[0], (QPair<QString, float>(QStringLiteral("b"), 0.6f)));
    QCOMPARE(shown[1], (QPair<QString, float>(QStringLiteral("2"), 0.3f)));  // unlabelled: its index
    QCOMPARE(shown[2], (QPair<QString, float>(QStringLiteral("a"), 0.1f)));

    QVector<float> many(15);
    for (int i = 0; i < 15; ++i)
        many[i] = float(i) / 100.0f;
    bars.setPrediction(many, {}, QString());
    QCOMPARE(bars.shown().size(), PredictionBars::kShown);
    QCOMPARE(bars.shown().front().first, QStringLiteral("14"));
    QCOMPARE(bars.shown().back().first, QStringLiteral("5"));
}

// --- AttentionView ----------------------------------------------------------

void TestInsights::attentionOneHeadAndMeanShowTheConstructedMaps()
{
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(attentionProbe(10));
    history->addCapture(attentionProbe(20));

    AttentionView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setStep(10);
    view.setProbe(QStringLiteral("probe"));
    view.refresh();
    QVERIFY(view.primaryPane()->capture() != nullptr);
    QCOMPARE(view.primaryPane()->capture()->step, 10);
    QVERIFY(view.primaryPane()->header()->text().contains(QStringLiteral("Run A")));
    QVERIFY(!view.comparisonPane()->isVisible());
    QCOMPARE(view.primaryPane()->grid()->heads(), 2);

    view.setLayer(1);
    QCOMPARE(view.layer(), 1);
    view.showHead(1);
    QCOMPARE(view.mode(), AttentionPane::Mode::Head);
    QCOMPARE(view.head(), 1);
    const MatrixView* matrix = view.primaryPane()->matrix();
    QVERIFY(matrix->isVisible());
    QCOMPARE(matrix->matrix().rows, 3);
    QCOMPARE(matrix->matrix().cols, 3);
    QVERIFY(sameValues(matrix->matrix().values, kL1H1));  // step 10's map, not step 20's
    QCOMPARE(matrix->matrix().rowLabels, kTokens);
    QCOMPARE(matrix->matrix().columnLabels, kTokens);
    // Its largest weight, 1 (query 2, key 2), has the top colour; a 0 the bottom one.
    QCOMPARE(matrix->cellColor(2, 2), QColor(colorscale::sequential(1.0)));
    QCOMPARE(matrix->cellColor(0, 2), QColor(colorscale::sequential(0.0)));

    view.showHead(0);
    QVERIFY(sameValues(view.primaryPane()->matrix()->matrix().values, kL1H0));

    // Live: the newest capture, step 20.
    view.setStep(-1);
    view.showHead(1);
    view.refresh();
    QVERIFY(sameValues(view.primaryPane()->matrix()->matrix().values, kL1H1Later));
    view.setStep(10);

    // The mean over layer 2's heads, cell by cell: (kL1H0 + kL1H1) / 2.
    view.setMode(AttentionPane::Mode::Mean);
    const Map mean{0.125f, 0.375f, 0.5f, /**/ 0.0625f, 0.6875f, 0.25f, /**/ 0.5f, 0.0f, 0.5f};
    QVERIFY(sameValues(view.primaryPane()->matrix()->matrix().values, mean));

    // Layer 1's grid: both heads, the layer's largest weight 1.
    view.setLayer(0);
    view.setMode(AttentionPane::Mode::Grid);
    QCOMPARE(view.primaryPane()->shownLayer(), 0);
    QCOMPARE(view.primaryPane()->grid()->heads(), 2);
    QVERIFY(view.primaryPane()->gridArea()->isVisible());
    const HeadGrid* grid = view.primaryPane()->grid();
    const QRectF r = grid->mapRect(1);
    // Head 2 of layer 1 sends query 1 to keys 0 and 1 with 0.5 each.
    const HeadGrid::Hit hit = grid->hitAt(QPointF(r.left() + 0.5 * r.width() / 3, r.top() + 1.5 * r.height() / 3));
    QCOMPARE(hit.head, 1);
    QCOMPARE(hit.query, 1);
    QCOMPARE(hit.key, 0);
    QVERIFY2(grid->readout(hit).contains(QStringLiteral("0.500")), qPrintable(grid->readout(hit)));

    // A layer past the model's is clamped to its last.
    view.setLayer(5);
    QCOMPARE(view.primaryPane()->shownLayer(), 1);
}

void TestInsights::attentionComparisonPaneAndMessages()
{
    auto a = std::make_shared<InsightHistory>();
    a->addCapture(attentionProbe(10));
    auto b = std::make_shared<InsightHistory>();
    b->addCapture(captureOf(8, QStringLiteral("probe"), {QStringLiteral("p"), QStringLiteral("q")},
                            {{Map{0.25f, 0.75f, 1.0f, 0.0f}}}));
    auto c = std::make_shared<InsightHistory>();
    c->addCapture(captureOf(8, QStringLiteral("another text"), {QStringLiteral("p")}, {{Map{1.0f}}}));
    auto late = std::make_shared<InsightHistory>();
    late->addCapture(captureOf(50, QStringLiteral("probe"), {QStringLiteral("p")}, {{Map{1.0f}}}));

    AttentionView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setStep(10);
    view.setProbe(QStringLiteral("probe"));

    // A comparison run with its own capture: the second pane, naming that run.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("b"), QStringLiteral("Run B"), b});
    view.refresh();
    QVERIFY(view.comparisonPane()->isVisible());
    QVERIFY2(view.comparisonPane()->header()->text().contains(QStringLiteral("Run B")),
             qPrintable(view.comparisonPane()->header()->text()));
    QVERIFY(!view.comparisonPane()->header()->text().contains(QStringLiteral("Run A")));
    QVERIFY(view.comparisonPane()->capture() != nullptr);
    QCOMPARE(view.comparisonPane()->capture()->step, 8);
    QCOMPARE(view.comparisonPane()->grid()->tokens(), 2);
    view.setLayer(0);
    view.showHead(0);
    QVERIFY(sameValues(view.comparisonPane()->matrix()->matrix().values, Map{0.25f, 0.75f, 1.0f, 0.0f}));
    QVERIFY(sameValues(view.primaryPane()->matrix()->matrix().values, kL0H0));

    // A comparison run that never captured the text: a message naming the run and the text.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("c"), QStringLiteral("Run C"), c});
    view.refresh();
    QVERIFY(view.comparisonPane()->isVisible());
    QCOMPARE(view.comparisonPane()->capture(), nullptr);
    const QString why = view.comparisonPane()->matrix()->emptyText();
    QVERIFY2(why.contains(QStringLiteral("Run C")) && why.contains(QStringLiteral("\"probe\"")), qPrintable(why));
    QVERIFY(view.primaryPane()->capture() != nullptr);

    // One whose first capture comes after the frozen step: a message naming the step.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("l"), QStringLiteral("Run L"), late});
    view.refresh();
    QCOMPARE(view.comparisonPane()->capture(), nullptr);
    const QString after = view.comparisonPane()->matrix()->emptyText();
    QVERIFY2(after.contains(QStringLiteral("10")), qPrintable(after));

    // No comparison: the second pane goes away.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a}, {});
    view.refresh();
    QVERIFY(!view.comparisonPane()->isVisible());

    // No run at all: a message in the first pane.
    view.setSources({}, {});
    view.refresh();
    QCOMPARE(view.primaryPane()->capture(), nullptr);
    QVERIFY(!view.primaryPane()->matrix()->emptyText().isEmpty());
}

void TestInsights::attentionCsvHoldsEveryWeightOfEveryShownRun()
{
    auto a = std::make_shared<InsightHistory>();
    a->addCapture(attentionProbe(10));
    a->addCapture(attentionProbe(20));
    auto b = std::make_shared<InsightHistory>();
    b->addCapture(captureOf(8, QStringLiteral("probe"), {QStringLiteral("p"), QStringLiteral("q")},
                            {{Map{0.25f, 0.75f, 1.0f, 0.0f}}}));

    AttentionView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("b"), QStringLiteral("Run B"), b});
    view.setStep(10);
    view.setProbe(QStringLiteral("probe"));
    view.refresh();

    const QByteArray csv = view.csv();
    const QList<QByteArray> lines = csv.split('\n');
    // Header + run A: 2 layers x 2 heads x 3 x 3 + run B: 1 x 1 x 2 x 2, each ending in a newline.
    QCOMPARE(csv.count('\n'), 1 + 36 + 4);
    QVERIFY(csv.endsWith('\n'));
    QCOMPARE(lines.front(), QByteArray("run,step,probe,layer,head,query_index,query,key_index,key,weight"));
    // Layer 2, head 2, query 1 "cat" -> key 2 "sat": 0.5 at step 10 (0 at step 20).
    QVERIFY(lines.contains("Run A,10,probe,2,2,1,cat,2,sat,0.5"));
    // Layer 1, head 1, query 0 -> key 0: 0.5; the token with a comma is quoted.
    QVERIFY(lines.contains("Run A,10,probe,1,1,0,\"x,y\",0,\"x,y\",0.5"));
    QVERIFY(lines.contains("Run A,10,probe,2,2,1,cat,0,\"x,y\",0.125"));
    // Run B's map, query 1 "q" -> key 0 "p": 1.
    QVERIFY(lines.contains("Run B,8,probe,1,1,1,q,0,p,1"));
    QVERIFY(lines.contains("Run B,8,probe,1,1,0,p,1,q,0.75"));
    QVERIFY(!csv.contains("Run A,20,"));

    // Without the comparison: run A's 36 lines only.
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a}, {});
    view.refresh();
    QCOMPARE(view.csv().count('\n'), 1 + 36);
    QVERIFY(!view.csv().contains("Run B"));
}

void TestInsights::attentionWithoutAProbeShowsBothRunsOnTheSameText()
{
    // AttentionView.h: "a second run beside the first on the same text". With no probe set, the
    // first run's first text is shown; the comparison run holds that text too (its second one).
    auto a = std::make_shared<InsightHistory>();
    a->addCapture(captureOf(10, QStringLiteral("alpha"), {QStringLiteral("a")}, {{Map{1.0f}}}));
    auto b = std::make_shared<InsightHistory>();
    b->addCapture(captureOf(10, QStringLiteral("beta"), {QStringLiteral("b")}, {{Map{1.0f}}}));
    b->addCapture(captureOf(10, QStringLiteral("alpha"), {QStringLiteral("a")}, {{Map{1.0f}}}));

    AttentionView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), a},
                    {QStringLiteral("b"), QStringLiteral("Run B"), b});
    view.refresh();
    QVERIFY(view.primaryPane()->capture() != nullptr);
    QCOMPARE(view.primaryPane()->capture()->text, QStringLiteral("alpha"));
    QVERIFY(view.comparisonPane()->capture() != nullptr);
    QCOMPARE(view.comparisonPane()->capture()->text, QStringLiteral("alpha"));
}

// --- ExpertsView ------------------------------------------------------------

namespace {

ExpertLoad load(int block, const QVector<qint64>& tokens, int unused, const QVector<double>& loadVsFair,
                double entropy = 0, const QVector<double>& dropped = {})
{
    ExpertLoad l;
    l.block = block;
    l.tokensPerExpert = tokens;
    l.unusedExperts = unused;
    l.loadVsFair = loadVsFair;
    l.routerEntropy = entropy;
    l.droppedPercentPerChoice = dropped;
    return l;
}

// Two blocks of four experts at steps 50 and 100; at 100 block 2 uses experts 1 and 2 only,
// 10 and 30 of 40 tokens: a fair share is 10, so expert 2 has 3x its share.
std::shared_ptr<InsightHistory> routedHistory()
{
    auto history = std::make_shared<InsightHistory>();
    ModelState early = stateAt(50);
    early.routing << load(0, {40, 0, 0, 0}, 3, {4, 0, 0, 0}) << load(1, {0, 0, 40, 0}, 3, {0, 0, 4, 0});
    history->addState(early);
    ModelState state = stateAt(100);
    state.routing << load(0, {20, 20, 20, 20}, 0, {1, 1, 1, 1}, 1.25, {0, 0})
                  << load(1, {10, 30, 0, 0}, 2, {1, 3, 0, 0}, 0.5, {0, 12.5});
    history->addState(state);
    ProbeCapture capture =
        captureOf(100, QStringLiteral("probe"), {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")});
    capture.experts = {{{1, 2}, {0, 3}, {-1, 2}},  // block 1: first choices 2, 1, dropped (1-based)
                       {{3, -1}, {-1, -1}, {2, 0}}};  // block 2: 4, dropped, 3
    history->addCapture(capture);
    return history;
}

}  // namespace

void TestInsights::expertsWarningsSharesAndRouting()
{
    auto history = routedHistory();
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setProbe(QStringLiteral("probe"));
    view.refresh();

    QVERIFY(view.exportArea()->isVisibleTo(&view));
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("no experts")), nullptr);
    const QStringList warnings = view.warnings();
    QCOMPARE(warnings.size(), 2);  // block 2: unused experts, imbalance; block 1 is fine
    QVERIFY(!warnings.join(QLatin1Char('\n')).contains(QStringLiteral("block 1")));
    QVERIFY2(warnings[0].contains(QStringLiteral("block 2")) && warnings[0].contains(QStringLiteral("3, 4")),
             qPrintable(warnings[0]));
    QVERIFY2(warnings[1].contains(QStringLiteral("block 2")) && warnings[1].contains(QStringLiteral("3.0")),
             qPrintable(warnings[1]));

    // Shares: tokens / the block's total.
    const MatrixView::Matrix& share = view.shareMap()->matrix();
    QCOMPARE(share.rows, 2);
    QCOMPARE(share.cols, 4);
    QVERIFY(sameValues(share.values, {0.25f, 0.25f, 0.25f, 0.25f, /**/ 0.25f, 0.75f, 0.0f, 0.0f}));
    QCOMPARE(share.rowLabels, (QStringList{QStringLiteral("1"), QStringLiteral("2")}));
    QCOMPARE(share.columnLabels,
             (QStringList{QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("3"), QStringLiteral("4")}));
    QCOMPARE(view.shareMap()->cellColor(1, 1), QColor(colorscale::sequential(1.0)));  // 75 %, the largest
    QVERIFY2(view.shareMap()->readout(1, 1).contains(QStringLiteral("75.0%")),
             qPrintable(view.shareMap()->readout(1, 1)));

    // Routing of the probe: each token's first choice, -1 where it was dropped.
    const MatrixView::Matrix& routing = view.routingMap()->matrix();
    QCOMPARE(routing.scale, MatrixView::Scale::Categorical);
    QCOMPARE(routing.rows, 2);
    QCOMPARE(routing.cols, 3);
    QCOMPARE(routing.categories, (QVector<int>{1, 0, -1, /**/ 3, -1, 2}));
    QCOMPARE(view.routingMap()->cellColor(1, 0).rgb(), colorscale::categorical(3).rgb());
    QCOMPARE(view.routingMap()->cellColor(0, 1).rgb(), colorscale::categorical(0).rgb());

    // The table: one row per block.
    QCOMPARE(view.table()->rowCount(), 2);

    // CSV: block 2, expert 2: 30 tokens, share 0.75, 3x fair, entropy 0.5, 2 unused, dropped "0 12.5".
    const QList<QByteArray> lines = view.csv().split('\n');
    QCOMPARE(lines.front(),
             QByteArray("run,step,block,expert,tokens,share,load_vs_fair,router_entropy,unused_experts,"
                        "dropped_percent_per_choice"));
    QVERIFY(lines.contains("Run A,100,2,2,30,0.75,3,0.5,2,0 12.5"));
    QVERIFY(lines.contains("Run A,100,1,4,20,0.25,1,1.25,0,0 0"));
    QCOMPARE(view.csv().count('\n'), 1 + 8);
}

void TestInsights::expertsOverTimeAndFrozenStep()
{
    auto history = routedHistory();
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();

    // Over time, the mean of both blocks; rows are experts, columns steps 50 and 100.
    //   step 50: (1 + 0) / 2, 0, (0 + 1) / 2, 0; step 100: (0.25 + 0.25) / 2, (0.25 + 0.75) / 2, 0.25 / 2, 0.25 / 2
    const MatrixView::Matrix& time = view.timeMap()->matrix();
    QCOMPARE(time.rows, 4);
    QCOMPARE(time.cols, 2);
    QCOMPARE(time.columnLabels, (QStringList{QStringLiteral("50"), QStringLiteral("100")}));
    QVERIFY(sameValues(time.values, {0.5f, 0.25f, /**/ 0.0f, 0.5f, /**/ 0.5f, 0.125f, /**/ 0.0f, 0.125f}));

    // Block 2 alone.
    view.setTimeBlock(1);
    QVERIFY(sameValues(view.timeMap()->matrix().values,
                       {0.0f, 0.25f, /**/ 0.0f, 0.75f, /**/ 1.0f, 0.0f, /**/ 0.0f, 0.0f}));
    view.setTimeBlock(-1);

    // Frozen on step 50: that state's shares and flags, and time up to it only.
    view.setStep(50);
    view.refresh();
    QVERIFY(sameValues(view.shareMap()->matrix().values, {1.0f, 0.0f, 0.0f, 0.0f, /**/ 0.0f, 0.0f, 1.0f, 0.0f}));
    QCOMPARE(view.timeMap()->matrix().cols, 1);
    const QString flags = view.warnings().join(QLatin1Char('\n'));
    QVERIFY2(flags.contains(QStringLiteral("block 1")) && flags.contains(QStringLiteral("2, 3, 4")), qPrintable(flags));
    QVERIFY2(flags.contains(QStringLiteral("1, 2, 4")), qPrintable(flags));
    QCOMPARE(view.warnings().size(), 4);  // both blocks: unused experts and 4x imbalance
    // No capture at or before step 50: the routing map explains instead.
    QVERIFY(view.routingMap()->matrix().categories.isEmpty());
    QVERIFY(!view.routingMap()->emptyText().isEmpty());
}

void TestInsights::expertsWithoutRoutingShowsTheDenseMessage()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(stateAt(10));  // a dense model: no routing
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QVERIFY(!view.exportArea()->isVisibleTo(&view));
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("no experts")) != nullptr);
    QVERIFY(view.warnings().isEmpty());
    QCOMPARE(view.csv().count('\n'), 1);  // the header only
}

// --- LayerNormView ----------------------------------------------------------

namespace {

ModelState normState(qint64 step, double base)
{
    ModelState s = stateAt(step);
    s.norms.ffn = {base + 0.1, base + 0.2, base + 0.3, base + 0.4};      // gamma/beta all pairs, elementwise
    s.norms.attention = {base + 1.1, base + 1.2, base + 1.3, base + 1.4};
    const float f = float(step) / 100.0f;
    s.norms.ffnGamma = {{1.0f, 1.0f + f, 1.0f - f}, {0.5f, 1.5f, 1.0f + 2 * f}};
    s.norms.ffnBeta = {{0.0f, f, -f}, {0.25f, -0.25f, 0.0f}};
    s.norms.attentionGamma = {{2.0f, 1.0f + f, 1.0f}, {1.0f, 1.0f, 1.0f}};
    s.norms.attentionBeta = {{f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.5f}};
    return s;
}

}  // namespace

void TestInsights::layerNormCurvesAndMaps()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(normState(10, 0.0));
    history->addState(normState(20, 10.0));
    history->addState(normState(30, 20.0));
    auto other = std::make_shared<InsightHistory>();
    other->addState(normState(10, 100.0));

    LayerNormView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history},
                    {QStringLiteral("b"), QStringLiteral("Run B"), other});
    view.refresh();

    auto curve = [&view](const QString& run, const QString& series) {
        QVector<QPair<double, double>> out;
        for (const CurvePoint& p : view.divergencePlot()->points(run, series))
            out.push_back({p.step, p.value});
        return out;
    };
    QCOMPARE(view.divergencePlot()->runs(), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
    // Before the FFN, all pairs (the defaults).
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("gamma")), Curve{{10, 0.1}, {20, 10.1}, {30, 20.1}}));
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("beta")), Curve{{10, 0.2}, {20, 10.2}, {30, 20.2}}));
    QVERIFY(sameCurve(curve(QStringLiteral("b"), QStringLiteral("gamma")), Curve{{10, 100.1}}));

    view.setReading(LayerNormView::Reading::Elementwise);
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("gamma")), Curve{{10, 0.3}, {20, 10.3}, {30, 20.3}}));
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("beta")), Curve{{10, 0.4}, {20, 10.4}, {30, 20.4}}));

    view.setPosition(LayerNormView::Position::Attention);
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("gamma")), Curve{{10, 1.3}, {20, 11.3}, {30, 21.3}}));
    view.setReading(LayerNormView::Reading::AllPairs);
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("gamma")), Curve{{10, 1.1}, {20, 11.1}, {30, 21.1}}));
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("beta")), Curve{{10, 1.2}, {20, 11.2}, {30, 21.2}}));
    QVERIFY(sameCurve(curve(QStringLiteral("b"), QStringLiteral("beta")), Curve{{10, 101.2}}));

    // Maps at the newest step, 30 (f = 0.3), before attention.
    QCOMPARE(view.gammaMap()->matrix().rows, 2);
    QCOMPARE(view.gammaMap()->matrix().cols, 3);
    QVERIFY(sameValues(view.gammaMap()->matrix().values, {2.0f, 1.3f, 1.0f, /**/ 1.0f, 1.0f, 1.0f}));
    QVERIFY(sameValues(view.betaMap()->matrix().values, {0.3f, 0.0f, 0.0f, /**/ 0.0f, 0.0f, 0.5f}));
    // Gamma is centred on 1, beta on 0: those read as the neutral colour.
    QCOMPARE(view.gammaMap()->cellColor(1, 0), QColor(colorscale::diverging(0)));
    QCOMPARE(view.gammaMap()->cellColor(0, 0), QColor(colorscale::diverging(1)));  // 2, the farthest from 1
    QCOMPARE(view.betaMap()->cellColor(0, 1), QColor(colorscale::diverging(0)));

    view.setPosition(LayerNormView::Position::Ffn);
    QVERIFY(sameValues(view.gammaMap()->matrix().values, {1.0f, 1.3f, 0.7f, /**/ 0.5f, 1.5f, 1.6f}));
    QVERIFY(sameValues(view.betaMap()->matrix().values, {0.0f, 0.3f, -0.3f, /**/ 0.25f, -0.25f, 0.0f}));

    // Frozen on step 25: the state of step 20 (f = 0.2); the curves keep the whole run.
    view.setStep(25);
    view.refresh();
    QVERIFY(sameValues(view.gammaMap()->matrix().values, {1.0f, 1.2f, 0.8f, /**/ 0.5f, 1.5f, 1.4f}));
    QVERIFY2(view.gammaMap()->title().contains(QStringLiteral("20")), qPrintable(view.gammaMap()->title()));
    QCOMPARE(view.divergencePlot()->points(QStringLiteral("a"), QStringLiteral("gamma")).size(), 3);

    // Before the first state: nothing to map.
    view.setStep(5);
    view.refresh();
    QVERIFY(view.gammaMap()->matrix().values.isEmpty());
    QVERIFY(!view.gammaMap()->emptyText().isEmpty());

    // CSV: both runs' divergence rows and the shown gamma and beta.
    view.setStep(-1);
    view.refresh();
    const QList<QByteArray> lines = view.csv().split('\n');
    QVERIFY(lines.contains("Run A,20,ffn,divergence_gamma_all_pairs,,,10.1"));
    QVERIFY(lines.contains("Run A,30,ffn,gamma,2,1,0.5"));
    QVERIFY(lines.contains("Run B,10,ffn,divergence_beta_elementwise,,,100.4"));
    // Per run: 4 divergence rows per state + 2 x 6 gamma/beta cells at the newest state.
    QCOMPARE(view.csv().count('\n'), 1 + (3 * 4 + 12) + (1 * 4 + 12));
}

// --- PathsView --------------------------------------------------------------

namespace {

PathWeightState pathWeights(int block, const QString& sublayer, const QVector<float>& alpha, float beta,
                            double diversity)
{
    PathWeightState p;
    p.block = block;
    p.sublayer = sublayer;
    p.paths = 2;
    p.alpha = alpha;
    p.beta = beta;
    p.diversity = diversity;
    return p;
}

// Two blocks, each with a two-path attention and FFN (two raw paths, two extra features).
ModelState pathState(qint64 step, float shift)
{
    ModelState s = stateAt(step);
    const QString att = QStringLiteral("attention"), ffn = QStringLiteral("ffn");
    s.paths << pathWeights(0, att, {0.5f + shift, 0.25f, 0.125f, 0.0625f}, 1.0f + shift, 0.5 + shift)
            << pathWeights(0, ffn, {2.0f, 3.0f + shift, 4.0f, 5.0f}, 2.0f + shift, 1.5 + shift)
            << pathWeights(1, att, {-1.0f, -2.0f, -3.0f, -4.0f + shift}, 3.0f + shift, 2.5 + shift)
            << pathWeights(1, ffn, {7.0f, 8.0f, 9.0f + shift, 10.0f}, 4.0f + shift, 3.5 + shift);
    return s;
}

}  // namespace

void TestInsights::pathsCurvesAndDiversity()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(pathState(10, 0.0f));
    history->addState(pathState(20, 1.0f));
    PathsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QVERIFY(view.exportArea()->isVisibleTo(&view));
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("one path")), nullptr);

    auto curve = [](const CurvePlot* plot, const QString& run, const QString& series) {
        QVector<QPair<double, double>> out;
        for (const CurvePoint& p : plot->points(run, series))
            out.push_back({p.step, p.value});
        return out;
    };

    // Block 1's attention (the defaults): one run per path, its weight ("alpha")
    // and that of the extra feature leaving it out ("feature", alpha[paths + k]).
    const QStringList paths{QStringLiteral("path 1"), QStringLiteral("path 2")};
    QCOMPARE(view.alphaPlot()->runs(), paths);
    const QString alpha = QStringLiteral("alpha"), feature = QStringLiteral("feature");
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[0], alpha), Curve{{10, 0.5}, {20, 1.5}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[1], alpha), Curve{{10, 0.25}, {20, 0.25}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[0], feature), Curve{{10, 0.125}, {20, 0.125}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[1], feature), Curve{{10, 0.0625}, {20, 0.0625}}));
    QCOMPARE(view.alphaPlot()->seriesPenStyle(paths[0], alpha), Qt::SolidLine);
    QCOMPARE(view.alphaPlot()->seriesPenStyle(paths[0], feature), Qt::DashLine);
    QCOMPARE(view.alphaPlot()->seriesColor(paths[1], alpha), view.alphaPlot()->seriesColor(paths[1], feature));

    // Block 2's FFN.
    view.setBlock(1);
    view.setSublayer(QStringLiteral("ffn"));
    QCOMPARE(view.alphaPlot()->runs(), paths);
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[0], alpha), Curve{{10, 7}, {20, 7}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[0], feature), Curve{{10, 9}, {20, 10}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[1], feature), Curve{{10, 10}, {20, 10}}));

    // Beta: one run per sublayer (2 blocks x attention, FFN), each with its own values.
    QCOMPARE(view.betaPlot()->runs().size(), 4);
    QSet<QString> seen;
    const QVector<Curve> betas{{{10, 1}, {20, 2}}, {{10, 2}, {20, 3}}, {{10, 3}, {20, 4}}, {{10, 4}, {20, 5}}};
    for (const QString& run : view.betaPlot()->runs()) {
        const Curve c = curve(view.betaPlot(), run, QStringLiteral("beta"));
        QVERIFY2(betas.contains(c), qPrintable(run));
        seen.insert(QString::number(c.front().second));
    }
    QCOMPARE(seen.size(), 4);

    // Diversity against depth at the newest step (20): attention 1.5, 3.5; FFN 2.5, 4.5.
    QCustomPlot* plot = view.diversityPlot();
    QCOMPARE(plot->graphCount(), 2);
    auto graphData = [](QCPGraph* graph) {
        QVector<QPair<double, double>> out;
        for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
            out.push_back({it->key, it->value});
        return out;
    };
    QVERIFY(sameCurve(graphData(plot->graph(0)), Curve{{1, 1.5}, {2, 3.5}}));
    QVERIFY(sameCurve(graphData(plot->graph(1)), Curve{{1, 2.5}, {2, 4.5}}));

    // Frozen on step 10: that state's diversity.
    view.setStep(10);
    view.refresh();
    QCOMPARE(plot->graphCount(), 2);
    QVERIFY(sameCurve(graphData(plot->graph(0)), Curve{{1, 0.5}, {2, 2.5}}));
    QVERIFY(sameCurve(graphData(plot->graph(1)), Curve{{1, 1.5}, {2, 3.5}}));

    // CSV: per state and sublayer, 4 alpha rows, beta and diversity.
    const QList<QByteArray> lines = view.csv().split('\n');
    QVERIFY(lines.contains("Run A,20,1,attention,alpha path 1,1.5"));
    QVERIFY(lines.contains("Run A,10,2,ffn,alpha mean without path 1,9"));
    QVERIFY(lines.contains("Run A,20,2,attention,beta,4"));
    QCOMPARE(view.csv().count('\n'), 1 + 2 * 4 * 6);
}

void TestInsights::pathsWithoutPathWeightsShowsTheOnePathMessage()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(stateAt(10));
    PathsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QVERIFY(!view.exportArea()->isVisibleTo(&view));
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("one path")) != nullptr);
}

// --- InsightsView -----------------------------------------------------------

namespace {

// Captures of "probe" at steps 10 and 20 and states (routing, norms, paths) at 10, 20 and 30.
std::shared_ptr<InsightHistory> fullHistory()
{
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(attentionProbe(10));
    history->addCapture(attentionProbe(20));
    for (qint64 step : {10, 20, 30}) {
        ModelState s = pathState(step, float(step) / 10);
        s.norms = normState(step, 0).norms;
        s.routing << load(0, {20, 20, 20, 20}, 0, {1, 1, 1, 1});
        history->addState(s);
    }
    return history;
}

}  // namespace

void TestInsights::insightsRunsHistoryChangesAndScrubbing()
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

void TestInsights::insightsSetStepFreezesOnARecordedStep()
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

void TestInsights::insightsExportsImages()
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

void TestInsights::insightsExportsTheCurrentPagesCsv()
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

void TestInsights::insightsAskForProbeRequestsBothRuns()
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

// --- Damaged data -----------------------------------------------------------

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Whether a scale end as MatrixView prints it is a plain finite number.
bool finiteText(const QString& text)
{
    bool ok = false;
    const double value = QString(text).remove(QLatin1Char('%')).toDouble(&ok);
    return ok && std::isfinite(value);
}

// Paints `widget` offscreen; a crash or an assertion in paintEvent fails the test here.
QImage painted(QWidget* widget)
{
    widget->resize(widget->size().expandedTo(QSize(400, 300)));
    return widget->grab().toImage();
}

}  // namespace

void TestInsights::matrixRangesIgnoreNonFiniteValuesAndMismatchesExplainThemselves()
{
    MatrixView view;
    view.resize(400, 300);
    MatrixView::Matrix m;
    m.rows = 2;
    m.cols = 2;
    m.values = {kNaN, 1.0f, kInf, 3.0f};
    view.setMatrix(m);
    // The automatic range spans the finite values only: 1 to 3.
    QCOMPARE(view.scaleLowText(), QStringLiteral("1.000"));
    QCOMPARE(view.scaleHighText(), QStringLiteral("3.000"));
    QCOMPARE(view.cellColor(0, 1), QColor(colorscale::sequential(0.0)));
    QCOMPARE(view.cellColor(1, 1), QColor(colorscale::sequential(1.0)));
    QVERIFY(!painted(&view).isNull());

    // Diverging around 1: the widest finite distance, |3 - 1| = 2, not infinity.
    m.scale = MatrixView::Scale::Diverging;
    m.center = 1;
    view.setMatrix(m);
    QCOMPARE(view.scaleLowText(), QStringLiteral("-1.000"));
    QCOMPARE(view.scaleHighText(), QStringLiteral("3.000"));

    // Nothing finite at all: a range of 0 to 1 rather than NaN.
    m.scale = MatrixView::Scale::Sequential;
    m.values = {kNaN, kNaN, kInf, -kInf};
    view.setMatrix(m);
    QVERIFY2(finiteText(view.scaleLowText()) && finiteText(view.scaleHighText()),
             qPrintable(view.scaleLowText() + QLatin1Char(' ') + view.scaleHighText()));

    // Fewer values than cells: nothing drawn, and the view says why.
    m.values = {1.0f, 2.0f, 3.0f};
    view.setMatrix(m);
    QVERIFY(!view.cellColor(0, 0).isValid());
    QVERIFY2(view.emptyText().contains(QStringLiteral("3 values")), qPrintable(view.emptyText()));
    QVERIFY(!painted(&view).isNull());
    // No rows: the same.
    m.rows = 0;
    view.setMatrix(m);
    QVERIFY(!view.emptyText().isEmpty());
    QCOMPARE(view.cellAt(QPointF(200, 150)), QPoint(-1, -1));
    QVERIFY(view.readout(0, 0).isEmpty());
}

void TestInsights::attentionWithoutTokensOrWithMismatchedMapsShowsWhy()
{
    // Zero tokens with a layer of one (empty) head: what a damaged probe line would give.
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(captureOf(5, QStringLiteral("probe"), {}, {{Map{}}}));
    AttentionView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setProbe(QStringLiteral("probe"));
    for (const AttentionPane::Mode mode :
         {AttentionPane::Mode::Grid, AttentionPane::Mode::Head, AttentionPane::Mode::Mean, AttentionPane::Mode::Tokens}) {
        view.setMode(mode);
        view.refresh();
        QCOMPARE(view.primaryPane()->grid()->heads(), 0);
        QVERIFY(view.primaryPane()->matrix()->isVisible());
        const QString why = view.primaryPane()->matrix()->emptyText();
        QVERIFY2(why.contains(QStringLiteral("no tokens")) && why.contains(QStringLiteral("step 5")), qPrintable(why));
        QVERIFY(!painted(&view).isNull());
    }
    QCOMPARE(view.csv().count('\n'), 1);  // the header: no weight to export

    // The grid on its own, given such a capture directly.
    HeadGrid grid;
    const ProbeCapture empty = captureOf(5, QStringLiteral("probe"), {}, {{Map{}, Map{}}});
    grid.setCapture(&empty, 0);
    QCOMPARE(grid.heads(), 0);
    QVERIFY(!grid.hitAt(QPointF(50, 50)).valid());
    QVERIFY(!painted(&grid).isNull());
    TokenFlowView flow;
    flow.setCapture(&empty, 0);
    QVERIFY(flow.lines().isEmpty());
    QVERIFY(!painted(&flow).isNull());

    // Three tokens but maps of four weights: nothing is drawn from them, and the pane says so.
    auto mismatched = std::make_shared<InsightHistory>();
    mismatched->addCapture(captureOf(6, QStringLiteral("probe"), kTokens, {{Map{1.0f, 0.0f, 0.0f, 1.0f}}}));
    view.setSources({QStringLiteral("m"), QStringLiteral("Run M"), mismatched}, {});
    view.setMode(AttentionPane::Mode::Grid);
    view.refresh();
    QCOMPARE(view.primaryPane()->grid()->heads(), 0);
    const QString why = view.primaryPane()->matrix()->emptyText();
    QVERIFY2(why.contains(QStringLiteral("do not match")) && why.contains(QStringLiteral("3 tokens")), qPrintable(why));
    QVERIFY(!painted(&view).isNull());

    // Layers with different numbers of heads, one head the wrong size: the good maps are drawn.
    auto ragged = std::make_shared<InsightHistory>();
    ragged->addCapture(captureOf(7, QStringLiteral("probe"), kTokens, {{kL0H0, kL0H1}, {kL1H0, Map{0.5f}}}));
    view.setSources({QStringLiteral("r"), QStringLiteral("Run R"), ragged}, {});
    view.refresh();  // the layer control learns of the second layer
    view.setLayer(1);
    QCOMPARE(view.primaryPane()->shownLayer(), 1);
    QCOMPARE(view.primaryPane()->grid()->heads(), 1);  // kL1H0 alone
    view.showHead(1);  // the short map: the matrix explains instead of drawing
    QVERIFY(!view.primaryPane()->matrix()->emptyText().isEmpty());
    QVERIFY(!painted(&view).isNull());
}

void TestInsights::attentionWithNaNWeightsKeepsAFiniteScale()
{
    auto history = std::make_shared<InsightHistory>();
    const Map diverged{kNaN, 0.5f, 0.25f, /**/ kInf, 0.0f, 1.0f, /**/ kNaN, kNaN, kNaN};
    ProbeCapture capture = captureOf(9, QStringLiteral("probe"), kTokens, {{diverged}});
    capture.prediction = {kNaN, 0.75f, 0.25f};
    history->addCapture(capture);
    AttentionView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setProbe(QStringLiteral("probe"));
    view.refresh();
    // The layer's largest finite weight, 1, sets the grid's scale.
    QCOMPARE(view.primaryPane()->grid()->heads(), 1);
    QCOMPARE(view.primaryPane()->grid()->maxWeight(), 1.0f);
    QVERIFY(!painted(&view).isNull());
    view.showHead(0);
    const MatrixView* matrix = view.primaryPane()->matrix();
    QCOMPARE(matrix->scaleHighText(), QStringLiteral("1.000"));
    QCOMPARE(matrix->cellColor(1, 2), QColor(colorscale::sequential(1.0)));
    QVERIFY(!painted(&view).isNull());
    view.setMode(AttentionPane::Mode::Mean);
    QVERIFY(finiteText(view.primaryPane()->matrix()->scaleHighText()));
    view.setMode(AttentionPane::Mode::Tokens);
    QVERIFY(!painted(&view).isNull());
    // The prediction leaves the NaN out: 75 %, then 25 %.
    const auto bars = view.primaryPane()->prediction()->shown();
    QCOMPARE(bars.size(), 2);
    QCOMPARE(bars[0].second, 0.75f);
}

void TestInsights::predictionBarsLeaveOutNaN()
{
    PredictionBars bars;
    bars.setPrediction({kNaN, 0.25f, kNaN, 0.5f, kInf}, {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c"),
                                                        QStringLiteral("d"), QStringLiteral("e")},
                       QStringLiteral("Prediction"));
    const auto shown = bars.shown();
    QCOMPARE(shown.size(), 2);
    QCOMPARE(shown[0], qMakePair(QStringLiteral("d"), 0.5f));
    QCOMPARE(shown[1], qMakePair(QStringLiteral("b"), 0.25f));
    QVERIFY(!painted(&bars).isNull());
    bars.setPrediction({}, {}, QString());
    QVERIFY(bars.shown().isEmpty());
    QVERIFY(!painted(&bars).isNull());
}

void TestInsights::expertsWithoutExpertsOrTokensShowWhy()
{
    // A routed block that names no expert, and a probe without tokens.
    auto history = std::make_shared<InsightHistory>();
    ModelState state = stateAt(40);
    ExpertLoad load;
    load.block = 0;
    state.routing = {load};
    history->addState(state);
    ProbeCapture capture = captureOf(40, QStringLiteral("probe"), {});
    capture.experts = {{}};
    history->addCapture(capture);
    ExpertsView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setProbe(QStringLiteral("probe"));
    view.refresh();
    QVERIFY2(view.shareMap()->emptyText().contains(QStringLiteral("no experts")), qPrintable(view.shareMap()->emptyText()));
    QVERIFY(!view.timeMap()->emptyText().isEmpty());
    QVERIFY2(view.routingMap()->emptyText().contains(QStringLiteral("no tokens")),
             qPrintable(view.routingMap()->emptyText()));
    QVERIFY(!painted(&view).isNull());

    // Blocks that disagree on the experts (4 and 2) and a NaN balance: drawn at the widest.
    auto ragged = std::make_shared<InsightHistory>();
    ModelState mixed = stateAt(50);
    ExpertLoad four, two;
    four.block = 0;
    four.tokensPerExpert = {1, 1, 1, 1};
    four.loadVsFair = {std::numeric_limits<double>::quiet_NaN(), 3, 1, 1};
    two.block = 1;
    two.tokensPerExpert = {3, 1};
    mixed.routing = {four, two};
    ragged->addState(mixed);
    view.setSources({QStringLiteral("r"), QStringLiteral("Run R"), ragged}, {});
    view.refresh();
    const MatrixView::Matrix& share = view.shareMap()->matrix();
    QCOMPARE(share.rows, 2);
    QCOMPARE(share.cols, 4);
    QVERIFY(sameValues(share.values, {0.25f, 0.25f, 0.25f, 0.25f, /**/ 0.75f, 0.25f, 0.0f, 0.0f}));
    QCOMPARE(view.timeMap()->matrix().rows, 4);
    // The busiest expert is the finite 3x, flagged; NaN neither hides it nor shows as "nan".
    const QString flags = view.warnings().join(QLatin1Char(' '));
    QVERIFY2(flags.contains(QStringLiteral("3.0")) && !flags.contains(QStringLiteral("nan"), Qt::CaseInsensitive),
             qPrintable(flags));
    QCOMPARE(view.table()->item(0, view.table()->columnCount() - 1)->text(), QStringLiteral("3.00×"));
    QVERIFY(!painted(&view).isNull());
}

void TestInsights::layerNormRowsOfUnequalLengthOrNoneAreDrawnOrExplained()
{
    auto history = std::make_shared<InsightHistory>();
    ModelState ragged = stateAt(10);
    ragged.norms.ffnGamma = {{1.0f, 2.0f, 3.0f}, {1.0f}};
    ragged.norms.ffnBeta = {{0.0f, kNaN, 0.5f}, {kInf}};
    ragged.norms.ffn = {std::numeric_limits<double>::quiet_NaN(), 0.5, 0.25, 0.125};
    history->addState(ragged);
    LayerNormView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setPosition(LayerNormView::Position::Ffn);
    view.refresh();
    // The widest row sets the columns; the short one is padded with gaps, which no scale takes in.
    const MatrixView::Matrix& gamma = view.gammaMap()->matrix();
    QCOMPARE(gamma.rows, 2);
    QCOMPARE(gamma.cols, 3);
    QVERIFY(std::isnan(gamma.values[4]) && std::isnan(gamma.values[5]));
    QCOMPARE(view.gammaMap()->scaleHighText(), QStringLiteral("3.000"));  // centred on 1: 1 +- 2
    QVERIFY(finiteText(view.betaMap()->scaleLowText()) && finiteText(view.betaMap()->scaleHighText()));
    QVERIFY(!painted(&view).isNull());

    // Rows without channels: explained, not drawn.
    auto hollow = std::make_shared<InsightHistory>();
    ModelState none = stateAt(20);
    none.norms.ffnGamma = {{}, {}};
    none.norms.ffnBeta = {{}, {}};
    hollow->addState(none);
    view.setSources({QStringLiteral("h"), QStringLiteral("Run H"), hollow}, {});
    view.refresh();
    QVERIFY2(view.gammaMap()->emptyText().contains(QStringLiteral("without channels")),
             qPrintable(view.gammaMap()->emptyText()));
    QVERIFY(!painted(&view).isNull());
}

void TestInsights::pathsWithDamagedNumbersStayInBounds()
{
    auto history = std::make_shared<InsightHistory>();
    ModelState state = stateAt(10);
    PathWeightState huge;  // a block number no model has, and infinite diversity
    huge.block = 1000000;
    huge.sublayer = QStringLiteral("ffn");
    huge.paths = 2;
    huge.alpha = {0.5f, 0.5f, 0.25f, 0.25f};
    huge.diversity = std::numeric_limits<double>::infinity();
    PathWeightState fine;  // more weights than 2 x paths
    fine.block = 0;
    fine.sublayer = QStringLiteral("attention");
    fine.paths = 2;
    fine.alpha = {0.5f, 0.5f, 0.125f, 0.125f, 7.0f};
    fine.diversity = 0.5;
    PathWeightState unknown = fine;
    unknown.sublayer = QStringLiteral("ffn");
    unknown.diversity = std::numeric_limits<double>::quiet_NaN();
    state.paths = {huge, fine, unknown};
    history->addState(state);
    PathsView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    // Only block 1 is offered; the weights past 2 x paths are not drawn.
    QComboBox* blocks = nullptr;
    for (QComboBox* combo : view.findChildren<QComboBox*>())
        if (combo->accessibleName() == QStringLiteral("Block"))
            blocks = combo;
    QVERIFY(blocks != nullptr);
    QCOMPARE(blocks->count(), 1);
    QCOMPARE(view.alphaPlot()->runs(), (QStringList{QStringLiteral("path 1"), QStringLiteral("path 2")}));
    QCOMPARE(view.alphaPlot()->points(QStringLiteral("path 1"), QStringLiteral("feature")).size(), qsizetype{1});
    // Diversity: the finite 0.5 sets the range, not infinity or NaN.
    const QCPRange range = view.diversityPlot()->yAxis->range();
    QVERIFY(std::isfinite(range.upper));
    QVERIFY2(std::abs(range.upper - 0.5 * 1.15) < 1e-9, qPrintable(QString::number(range.upper)));
    QVERIFY(!painted(&view).isNull());
}

void TestInsights::curvesLeaveValuesPastTheAxisLimitsOutOfTheFit()
{
    CurvePlot plot;
    plot.resize(600, 400);
    plot.addRun(QStringLiteral("r"), QStringLiteral("Run"), Qt::blue);
    plot.appendPoints(QStringLiteral("r"), QStringLiteral("loss"),
                      {{1, 1, 2.0}, {2, 2, 1e300}, {3, 3, 1.0}, {4, 4, std::numeric_limits<double>::quiet_NaN()},
                       {1e300, 5, 1.5}, {10, 6, 0.5}});
    plot.refreshNow();
    // x spans the steps a chart can show (1 to 10), y the values (0.5 to 2, with headroom).
    QCOMPARE(plot.xAxis->range().lower, 1.0);
    QCOMPARE(plot.xAxis->range().upper, 10.0);
    QVERIFY2(plot.yAxis->range().lower > 0.4 && plot.yAxis->range().upper < 2.1,
             qPrintable(QStringLiteral("%1 %2").arg(plot.yAxis->range().lower).arg(plot.yAxis->range().upper)));
    QVERIFY(!painted(&plot).isNull());

    // A constant that smoothing leaves differing in its last bits: ranged around it, +-10 %.
    plot.clearRun(QStringLiteral("r"));
    plot.setSmoothing(0.6);
    QVector<CurvePoint> constant;
    for (int step = 1; step <= 50; ++step)
        constant.append({double(step), double(step), 0.003});
    plot.appendPoints(QStringLiteral("r"), QStringLiteral("loss"), constant);
    plot.refreshNow();
    QVERIFY2(std::abs(plot.yAxis->range().lower - 0.0027) < 1e-9 && std::abs(plot.yAxis->range().upper - 0.0033) < 1e-9,
             qPrintable(QStringLiteral("%1 %2").arg(plot.yAxis->range().lower, 0, 'g', 17).arg(plot.yAxis->range().upper, 0, 'g', 17)));
}

// --- Defects of a first hour (issue 16) ---------------------------------------

namespace {

ArchitectureSketch sketchWith(int experts, int paths)
{
    ArchitectureSketch sketch;
    sketch.layers = 2;
    sketch.experts = experts;
    sketch.topK = experts > 1 ? 2 : 1;
    sketch.paths = paths;
    return sketch;
}

QStringList comboTexts(const QComboBox* box)
{
    QStringList texts;
    for (int i = 0; i < box->count(); ++i)
        texts << box->itemText(i);
    return texts;
}

}  // namespace

void TestInsights::expertsFollowTheConfigurationAndShowTheNewestRoutedStep()
{
    // A WideNet run stopped between log steps: its newest state (step 120) has no routing.
    auto history = routedHistory();
    history->addState(stateAt(120));
    history->setArchitecture(sketchWith(4, 1));
    ExpertsView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("no experts")), nullptr);
    QVERIFY(view.exportArea()->isVisibleTo(&view));
    QVERIFY2(view.shareMap()->title().contains(QStringLiteral("100")), qPrintable(view.shareMap()->title()));
    // Frozen on the stop's step: the routing measured last before it.
    view.setStep(120);
    view.refresh();
    QVERIFY2(view.shareMap()->title().contains(QStringLiteral("100")), qPrintable(view.shareMap()->title()));
    // Frozen before any routing was measured: said so, not "no experts".
    view.setStep(20);
    view.refresh();
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("no experts")), nullptr);
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("20")) != nullptr);

    // A model with experts before its first measurement, and a dense one.
    auto fresh = std::make_shared<InsightHistory>();
    fresh->setArchitecture(sketchWith(4, 1));
    view.setSources({QStringLiteral("b"), QStringLiteral("Run B"), fresh}, {});
    view.setStep(-1);
    view.refresh();
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("no experts")), nullptr);
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("No measurement yet")) != nullptr);
    auto dense = std::make_shared<InsightHistory>();
    dense->addState(stateAt(10));
    dense->setArchitecture(sketchWith(1, 1));
    view.setSources({QStringLiteral("c"), QStringLiteral("Run C"), dense}, {});
    view.refresh();
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("no experts")) != nullptr);
    // An MoE layer on no block is no expert either.
    ArchitectureSketch nowhere = sketchWith(4, 1);
    nowhere.moeAtBlock = {false, false};
    dense->setArchitecture(nowhere);
    QVERIFY(!dense->hasExperts());
}

void TestInsights::pathsFollowTheConfigurationAndNameAShippedPreset()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(pathState(10, 0.0f));
    history->addState(stateAt(20));  // a stop between log steps: no path weights
    history->setArchitecture(sketchWith(1, 4));
    PathsView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QVERIFY(view.exportArea()->isVisibleTo(&view));
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("one path")), nullptr);

    // A one-path model: the message names a preset that has path weights, and it ships.
    auto onePath = std::make_shared<InsightHistory>();
    onePath->addState(stateAt(10));
    onePath->setArchitecture(sketchWith(1, 1));
    view.setSources({QStringLiteral("b"), QStringLiteral("Run B"), onePath}, {});
    view.refresh();
    QLabel* message = visibleLabelContaining(&view, QStringLiteral("one path"));
    QVERIFY(message);
    const QRegularExpressionMatch named = QRegularExpression(QStringLiteral("e\\.g\\. ([a-z0-9-]+)")).match(message->text());
    QVERIFY2(named.hasMatch(), qPrintable(message->text()));
    const QString preset = QStringLiteral(WIDELAB_PRESETS_DIR "/") + named.captured(1) + QStringLiteral(".json");
    QVERIFY2(QFile::exists(preset), qPrintable(preset));
    QFile file(preset);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY2(file.readAll().contains("\"paths\""), qPrintable(preset));

    // A multi-path model before its first snapshot: not called one-path.
    auto fresh = std::make_shared<InsightHistory>();
    fresh->setArchitecture(sketchWith(1, 3));
    view.setSources({QStringLiteral("c"), QStringLiteral("Run C"), fresh}, {});
    view.refresh();
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("one path")), nullptr);
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("No measurement yet")) != nullptr);
}

void TestInsights::insightsProbeBoxHoldsOnlyTheShownRunsTexts()
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

void TestInsights::insightsChoosingAnotherRunFollowsItLive()
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

void TestInsights::predictionBarsMarkTheTrueClass()
{
    PredictionBars bars;
    bars.resize(300, 300);
    bars.setPrediction({0.1f, 0.6f, 0.3f}, {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")},
                       QStringLiteral("Prediction"), 2);
    QCOMPARE(bars.shown().size(), 3);
    QCOMPARE(bars.trueBar(), 1);  // c, the second most likely
    QCOMPARE(bars.shown()[bars.trueBar()].first, QStringLiteral("c"));
    QVERIFY(!bars.grab().isNull());

    // A true class outside the most likely: shown below them.
    QVector<float> many(15);
    for (int i = 0; i < 15; ++i)
        many[i] = float(i) / 100.0f;
    bars.setPrediction(many, {}, QString(), 0);
    QCOMPARE(bars.shown().size(), PredictionBars::kShown + 1);
    QCOMPARE(bars.trueBar(), PredictionBars::kShown);
    QCOMPARE(bars.shown().back(), (QPair<QString, float>(QStringLiteral("0"), 0.0f)));

    // Unknown, or out of range: nothing marked.
    bars.setPrediction(many, {}, QString());
    QCOMPARE(bars.trueBar(), -1);
    QCOMPARE(bars.shown().size(), PredictionBars::kShown);
    bars.setPrediction(many, {}, QString(), 99);
    QCOMPARE(bars.trueBar(), -1);
}

void TestInsights::insightsAnnouncesTheShownStep()
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

void TestInsights::insightsShowsHeadRolesAndTheLogitLens()
{
    auto history = fullHistory();
    auto roles = [](double previous) {
        HeadRoleState h;
        h.roles = {QStringLiteral("previous token"), QStringLiteral("self")};
        h.scores = {{{previous, 0.25}, {0.125, 0.5}}};
        h.dominant = {{0, 1}};
        return h;
    };
    ValidationInsight early, late;
    early.step = 10;
    early.heads = roles(0.5);
    late.step = 30;
    late.heads = roles(0.75);
    history->addValidationInsight(early);
    history->addValidationInsight(late);
    ProbeCapture lens = *history->captureAt(QStringLiteral("probe"), 20);
    lens.predictionLabels = {QStringLiteral("neg"), QStringLiteral("pos")};
    lens.lensStages = {QStringLiteral("block 1 ffn"), QStringLiteral("output")};
    lens.logitLens = {{0.75f, 0.25f}, {0.25f, 0.75f}};
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
    QCOMPARE(view.logitLens()->topLines(0).back(), QStringLiteral("output: predicts pos (0.75)"));
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
    TestInsights test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_insights.moc"
