// Tests the router-health side of the Experts page and the path-weight alarms of
// the Paths page with hand-built states: the health table's numbers and colours,
// the health chart, which alarms are in force at a step (AlarmList), the marks
// they leave, and what each expert receives (ExpertSpecialisationPanel).
// Every expected value below is worked out by hand from the constructed data.
#include "insights/AlarmList.h"
#include "curves/CurvePlot.h"
#include "insights/ExpertSpecialisationPanel.h"
#include "insights/ExpertsView.h"
#include "insights/InsightHistory.h"
#include "insights/MatrixView.h"
#include "common/Palette.h"
#include "insights/PathsView.h"
#include "insights/RouterHealthPanel.h"

#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include <cmath>
#include <memory>

using namespace widelab;

namespace {

RoutingStats healthLoad(int block, const std::vector<std::int64_t>& tokens, double maxViolation, double effective,
                        double zLoss, double dead, double consistency)
{
    RoutingStats l;
    l.block = block;
    l.tokensPerExpert = tokens;
    l.loadVsFair = std::vector<double>(tokens.size(), 1.0);
    l.maxViolation = maxViolation;
    l.effectiveExperts = effective;
    l.zLoss = zLoss;
    l.deadFraction = dead;
    l.consistency = consistency;
    for (const std::int64_t t : tokens)
        l.unusedExperts += t == 0 ? 1 : 0;
    return l;
}

HealthEvent alarm(const QString& kind, const QString& level, int block, int index, const QString& text)
{
    return {kind.toStdString(), level.toStdString(), block, index, std::string(), text.toStdString()};
}

// Routing blocks 1 and 3 (0-based 0 and 2) of four experts at steps 50, 100, 200, 300.
//   step 100: block 3's expert 4 dead (warning) and block 3 collapsing (warning)
//   step 200: the dead expert cleared (info)
//   step 300: z-loss of block 1 (warning)
// Block 3's MaxVio rises 1.0, 1.5, 2.0, 2.5 over the four steps.
std::shared_ptr<InsightHistory> healthHistory()
{
    auto history = std::make_shared<InsightHistory>();
    const qint64 steps[] = {50, 100, 200, 300};
    for (int i = 0; i < 4; ++i) {
        TrainingSnapshot s;
        s.step = steps[i];
        s.routing.insert(s.routing.end(), {healthLoad(0, {10, 10, 10, 10}, 0.25, 0.9, 4.5, 0.0, -1),
            healthLoad(2, {20, 10, 10, 0}, 1.0 + 0.5 * i, 0.4, 12.25, 0.25, 0.625)});
        if (steps[i] == 100)
            s.alarms.insert(s.alarms.end(), {alarm(QStringLiteral("dead expert"), QStringLiteral("warning"), 2, 3,
                              QStringLiteral("block 3: expert 4 received no token")),
                alarm(QStringLiteral("collapse"), QStringLiteral("warning"), 2, -1,
                              QStringLiteral("block 3: the router is collapsing"))});
        if (steps[i] == 200)
            s.alarms.push_back(alarm(QStringLiteral("dead expert"), QStringLiteral("info"), 2, 3,
                              QStringLiteral("block 3: expert 4 receives tokens again")));
        if (steps[i] == 300)
            s.alarms.push_back(alarm(QStringLiteral("z-loss"), QStringLiteral("warning"), 0, -1,
                              QStringLiteral("block 1: router z-loss is growing")));
        history->addState(s);
    }
    return history;
}

QStringList rowTexts(const QTableWidget* table, int row)
{
    QStringList texts;
    for (int c = 0; c < table->columnCount(); ++c)
        texts << (table->item(row, c) ? table->item(row, c)->text() : QString());
    return texts;
}

QColor tint(const QWidget* w, int series, double t)
{
    return palette::blend(w->palette().color(QPalette::Base), palette::seriesColor(series), t);
}

using Curve = QVector<QPair<double, double>>;

Curve curveOf(const CurvePlot* plot, const QString& run)
{
    Curve out;
    for (const CurvePoint& p : plot->points(run, QStringLiteral("health")))
        out << qMakePair(p.step, p.value);
    return out;
}

}  // namespace

class TestRouterHealth : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void healthTableHoldsTheConstructedNumbersAndColours();
    void healthChartFollowsTheChosenMeasure();
    void alarmsInForceAndCleared();
    void scrubbingBackHidesLaterAlarms();
    void alarmedExpertIsOutlinedAndBadged();
    void specialisationTopTokensAndClassMix();
    void specialisationWithoutValidationOrClasses();
    void pathWeightAlarmsMarkTheirPath();
};

void TestRouterHealth::healthTableHoldsTheConstructedNumbersAndColours()
{
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), healthHistory()}, {});
    view.setStep(100);
    view.refresh();
    const QTableWidget* table = view.health()->table();
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(table->columnCount(), 6);
    // Block 1: MaxVio 0.25, exp(H)/E 0.9, z 4.5, no dead, first routing block: no consistency.
    QCOMPARE(rowTexts(table, 0), (QStringList{QStringLiteral("1"), QStringLiteral("0.250"), QStringLiteral("0.900"),
                                              QStringLiteral("4.500"), QStringLiteral("0.0%"), QStringLiteral("–")}));
    // Block 3 at step 100 (the second state): MaxVio 1.5; two alarms in force, so ⚠.
    QCOMPARE(rowTexts(table, 1), (QStringList{QStringLiteral("⚠ 3"), QStringLiteral("1.500"), QStringLiteral("0.400"),
                                              QStringLiteral("12.250"), QStringLiteral("25.0%"), QStringLiteral("62.5%")}));
    for (int c = 1; c < 6; ++c)
        QVERIFY(!table->horizontalHeaderItem(c)->toolTip().isEmpty());

    const QColor good = tint(table, 2, 0.25), bad = tint(table, 5, 0.35);
    // Block 1: MaxVio 0.25 <= 0.5 good, exp(H)/E 0.9 >= 0.8 good, sqrt(4.5) = 2.12 <= ln 4 + 2 = 3.39 good,
    // nothing dead good, consistency never coloured.
    for (int c = 1; c <= 4; ++c)
        QCOMPARE(table->item(0, c)->background().color(), good);
    QCOMPARE(table->item(0, 5)->background().style(), Qt::NoBrush);
    // Block 3: MaxVio 1.5 > 1 bad, exp(H)/E 0.4 < 0.5 bad, sqrt(12.25) = 3.5 between 3.39 and 7.39 neutral,
    // a quarter dead bad.
    QCOMPARE(table->item(1, 1)->background().color(), bad);
    QCOMPARE(table->item(1, 2)->background().color(), bad);
    QCOMPARE(table->item(1, 3)->background().style(), Qt::NoBrush);
    QCOMPARE(table->item(1, 4)->background().color(), bad);
    QVERIFY2(table->item(1, 1)->toolTip().contains(QStringLiteral("1.500")), qPrintable(table->item(1, 1)->toolTip()));

    // At step 300 block 1's z-loss has an alarm in force: its cell turns bad.
    view.setStep(300);
    view.refresh();
    QCOMPARE(rowTexts(table, 0).front(), QStringLiteral("⚠ 1"));
    QCOMPARE(table->item(0, 3)->background().color(), bad);
    QCOMPARE(rowTexts(table, 1)[1], QStringLiteral("2.500"));

    // The CSV of the health section: the shown state's numbers, consistency empty for the first block.
    view.setSection(ExpertsView::Section::Health);
    QCOMPARE(view.csv(), QByteArray("run,step,block,max_violation,effective_experts,z_loss,dead_fraction,consistency\n"
                                    "Run A,300,1,0.25,0.9,4.5,0,\n"
                                    "Run A,300,3,2.5,0.4,12.25,0.25,0.625\n"));
}

void TestRouterHealth::healthChartFollowsTheChosenMeasure()
{
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), healthHistory()}, {});
    view.setStep(200);
    view.refresh();
    const CurvePlot* plot = view.health()->plot();
    QCOMPARE(plot->runs(), (QStringList{QStringLiteral("0"), QStringLiteral("2")}));
    // Over the whole run (the cursor marks the step shown).
    QCOMPARE(curveOf(plot, QStringLiteral("2")), (Curve{{50, 1.0}, {100, 1.5}, {200, 2.0}, {300, 2.5}}));
    QCOMPARE(curveOf(plot, QStringLiteral("0")), (Curve{{50, 0.25}, {100, 0.25}, {200, 0.25}, {300, 0.25}}));
    QCOMPARE(plot->stepMarker(), 200.0);

    // Consistency, in percent: the first routing block has none, so no line.
    view.health()->setMeasure(RouterHealthPanel::Measure::Consistency);
    QCOMPARE(plot->runs(), QStringList{QStringLiteral("2")});
    QCOMPARE(curveOf(plot, QStringLiteral("2")), (Curve{{50, 62.5}, {100, 62.5}, {200, 62.5}, {300, 62.5}}));
    QCOMPARE(plot->stepMarker(), 200.0);
}

void TestRouterHealth::alarmsInForceAndCleared()
{
    auto history = healthHistory();
    // Newest first; within step 100 the later-listed alarm first.
    QVector<AlarmEntry> entries = alarmsUpTo(*history, -1);
    QCOMPARE(entries.size(), 4);
    QCOMPARE(entries[0].step, 300);
    QCOMPARE(entries[0].alarm.kind, std::string("z-loss"));
    QVERIFY(entries[0].active);
    QCOMPARE(entries[1].step, 200);
    QCOMPARE(entries[1].alarm.level, std::string("info"));
    QVERIFY(!entries[1].active);  // an info never is
    QCOMPARE(entries[2].alarm.kind, std::string("collapse"));
    QVERIFY(entries[2].active);   // nothing later about block 3's collapse
    QCOMPARE(entries[3].alarm.kind, std::string("dead expert"));
    QVERIFY(!entries[3].active);  // cleared at step 200
    const QVector<HealthEvent> active = activeAlarms(entries);
    QCOMPARE(active.size(), 2);
    QCOMPARE(active[0].kind, std::string("z-loss"));
    QCOMPARE(active[1].kind, std::string("collapse"));

    // Up to step 100 only: the dead expert is still in force.
    entries = alarmsUpTo(*history, 100);
    QCOMPARE(entries.size(), 2);
    QVERIFY(entries[0].active && entries[1].active);
    // Only some kinds.
    entries = alarmsUpTo(*history, -1, {QStringLiteral("dead expert")});
    QCOMPARE(entries.size(), 2);
    QVERIFY(!entries[0].active && !entries[1].active);
    QVERIFY(activeAlarms(entries).isEmpty());

    // A warning raised again after an info is in force again.
    TrainingSnapshot again;
    again.step = 400;
    again.alarms.push_back(alarm(QStringLiteral("dead expert"), QStringLiteral("warning"), 2, 3, QStringLiteral("again")));
    history->addState(again);
    entries = alarmsUpTo(*history, -1, {QStringLiteral("dead expert")});
    QCOMPARE(entries.size(), 3);
    QVERIFY(entries[0].active && !entries[1].active && !entries[2].active);

    // The list widget: one item per entry, in force ones bold with the warning icon's text.
    AlarmList list;
    list.setHistory(history.get(), 300);
    QCOMPARE(list.list()->count(), 4);
    QCOMPARE(list.list()->item(0)->text(), QStringLiteral("step 300: block 1: router z-loss is growing"));
    QVERIFY(list.list()->item(0)->font().bold());
    QVERIFY(!list.list()->item(1)->font().bold());
    QVERIFY(list.list()->item(2)->font().bold());
    QVERIFY(!list.list()->item(3)->font().bold());
    QVERIFY2(list.titleLabel()->text().contains(QStringLiteral("2 alarm")), qPrintable(list.titleLabel()->text()));
}

void TestRouterHealth::scrubbingBackHidesLaterAlarms()
{
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), healthHistory()}, {});
    view.refresh();  // live: everything
    QCOMPARE(view.health()->alarms()->entries().size(), 4);
    QCOMPARE(view.activeAlarms().size(), 2);

    view.setStep(100);
    view.refresh();
    QCOMPARE(view.health()->alarms()->entries().size(), 2);
    QCOMPARE(view.activeAlarms().size(), 2);  // dead expert and collapse
    QVERIFY(hasAlarm(view.activeAlarms(), QStringLiteral("dead expert"), 2, 3));

    view.setStep(200);
    view.refresh();
    QCOMPARE(view.health()->alarms()->entries().size(), 3);
    QCOMPARE(view.activeAlarms().size(), 1);
    QVERIFY(!hasAlarm(view.activeAlarms(), QStringLiteral("dead expert"), 2));

    view.setStep(50);  // before any alarm
    view.refresh();
    QVERIFY(view.health()->alarms()->entries().isEmpty());
    QVERIFY(view.activeAlarms().isEmpty());
    QVERIFY(!view.alarmBadge()->isVisibleTo(&view));
}

void TestRouterHealth::alarmedExpertIsOutlinedAndBadged()
{
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), healthHistory()}, {});
    view.setStep(100);
    view.refresh();
    // The dead expert (block 3 = row 2 of the share map, expert 4 = column 4) is outlined; the
    // collapse names no expert, so it outlines nothing.
    QCOMPARE(view.shareMap()->matrix().marked, (QVector<QPoint>{QPoint(3, 1)}));
    QVERIFY2(view.shareMap()->readout(1, 3).contains(QStringLiteral("expert 4 received no token")),
             qPrintable(view.shareMap()->readout(1, 3)));
    QVERIFY(view.alarmBadge()->isVisibleTo(&view));
    QVERIFY2(view.alarmBadge()->text().contains(QStringLiteral("2 alarms in force")), qPrintable(view.alarmBadge()->text()));
    const auto* tabs = view.findChild<QTabWidget*>();
    QVERIFY(tabs != nullptr);
    QCOMPARE(tabs->tabText(1), QStringLiteral("Router health ⚠ 2"));

    // Cleared at step 200: no outline; the collapse keeps the badge.
    view.setStep(200);
    view.refresh();
    QVERIFY(view.shareMap()->matrix().marked.isEmpty());
    QCOMPARE(tabs->tabText(1), QStringLiteral("Router health ⚠ 1"));
}

namespace {

ValidationInsights specialisationAt(qint64 step, bool classes)
{
    ValidationInsights v;
    v.step = step;
    ExpertIntake s;
    s.block = 2;
    s.topTokens = {{{"the", 50}, {"a", 30}, {" ", 5}}, {{"\n", 7}}, {}};
    if (classes) {
        v.classNames = {"neg", "pos"};
        s.classCounts = {{30, 10}, {0, 20}, {0, 0}};
    }
    ExpertIntake first;
    first.block = 0;
    first.topTokens = {{{"x", 1}}};
    v.experts = {first, s};
    return v;
}

}  // namespace

void TestRouterHealth::specialisationTopTokensAndClassMix()
{
    auto history = healthHistory();
    history->addValidationInsight(specialisationAt(150, true));
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setSection(ExpertsView::Section::Specialisation);
    view.setStep(200);
    view.refresh();
    ExpertSpecialisationPanel* panel = view.specialisation();
    panel->setBlock(2);
    QCOMPARE(panel->block(), 2);
    const QTableWidget* table = panel->table();
    QCOMPARE(table->rowCount(), 3);
    // Most frequent first, as constructed; a lone space shown as ␣ and a line break as ⏎.
    QCOMPARE(table->item(0, 3)->text(), QStringLiteral("the ×50   a ×30   ␣ ×5"));
    QCOMPARE(table->item(1, 3)->text(), QStringLiteral("⏎ ×7"));
    QCOMPARE(table->item(2, 3)->text(), QStringLiteral("no tokens"));
    // Class mix: counts over the expert's total (30 + 10 = 40; 0 + 20 = 20).
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("40"));
    QCOMPARE(panel->classShares(0), (QVector<double>{0.75, 0.25}));
    QCOMPARE(panel->classShares(1), (QVector<double>{0.0, 1.0}));
    QVERIFY(panel->classShares(2).isEmpty());  // no tokens: no bar
    QVERIFY(!table->isColumnHidden(2));
    QVERIFY2(table->item(0, 2)->toolTip().contains(QStringLiteral("neg: 30 tokens (75.0%)")),
             qPrintable(table->item(0, 2)->toolTip()));
    QVERIFY(panel->legend()->isVisibleTo(panel));
    QVERIFY(panel->legend()->text().contains(QStringLiteral("neg")) && panel->legend()->text().contains(QStringLiteral("pos")));
    // The other block: its own experts.
    panel->setBlock(0);
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->item(0, 3)->text(), QStringLiteral("x ×1"));

    // An alarm in force about expert 2 of block 3 (raised at step 160) marks that expert's row.
    TrainingSnapshot s;
    s.step = 160;
    s.routing = history->states().back().routing;
    s.alarms.push_back(alarm(QStringLiteral("dead expert"), QStringLiteral("warning"), 2, 1, QStringLiteral("block 3: expert 2 idle")));
    history->addState(s);
    panel->setBlock(2);
    view.setStep(160);
    view.refresh();
    QCOMPARE(table->item(1, 0)->text(), QStringLiteral("⚠ 2"));
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("1"));
}

void TestRouterHealth::specialisationWithoutValidationOrClasses()
{
    auto history = healthHistory();
    history->addValidationInsight(specialisationAt(150, false));
    ExpertsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setSection(ExpertsView::Section::Specialisation);
    view.setStep(100);  // before the validation
    view.refresh();
    ExpertSpecialisationPanel* panel = view.specialisation();
    QVERIFY(panel->emptyLabel()->isVisibleTo(panel));
    QVERIFY2(panel->emptyLabel()->text().contains(QStringLiteral("No validation at or before step 100")),
             qPrintable(panel->emptyLabel()->text()));
    // A language model: no class column, no legend, tokens only.
    view.setStep(-1);
    view.refresh();
    QVERIFY(!panel->emptyLabel()->isVisibleTo(panel));
    panel->setBlock(2);
    QVERIFY(panel->table()->isColumnHidden(2));
    QVERIFY(!panel->legend()->isVisibleTo(panel));
    QVERIFY(panel->classShares(0).isEmpty());
    QCOMPARE(panel->table()->item(0, 3)->text(), QStringLiteral("the ×50   a ×30   ␣ ×5"));

    // A run with no validation at all.
    auto fresh = healthHistory();
    view.setSources({QStringLiteral("b"), QStringLiteral("Run B"), fresh}, {});
    view.refresh();
    QVERIFY(panel->emptyLabel()->text().startsWith(QStringLiteral("No validation yet")));
}

namespace {

PathWeights twoPaths(int block, const QString& sublayer, float a)
{
    PathWeights p;
    p.block = block;
    p.sublayer = sublayer.toStdString();
    p.paths = 2;
    p.alpha = {a, 1.0f - a, 0.5f, 0.5f};
    return p;
}

QStringList alphaNames(const CurvePlot* plot)
{
    QStringList names;
    for (const QString& run : plot->runs())
        if (const QCPGraph* graph = plot->lineGraph(run, QStringLiteral("alpha")))
            names << graph->name();
    return names;
}

}  // namespace

void TestRouterHealth::pathWeightAlarmsMarkTheirPath()
{
    auto history = std::make_shared<InsightHistory>();
    for (qint64 step : {10, 20, 30}) {
        TrainingSnapshot s;
        s.step = step;
        s.paths.insert(s.paths.end(), {twoPaths(0, QStringLiteral("attention"), 0.5f),
            twoPaths(0, QStringLiteral("ffn"), 0.1f)});
        if (step == 20)
            s.alarms.insert(s.alarms.end(), {alarm(QStringLiteral("path weight"), QStringLiteral("warning"), 0, 1,
                              QStringLiteral("block 1 ffn: path 2's weight dominates")),
                alarm(QStringLiteral("dead expert"), QStringLiteral("warning"), 0, 1,
                              QStringLiteral("not a path alarm"))});
        if (step == 30)
            s.alarms.push_back(alarm(QStringLiteral("path weight"), QStringLiteral("info"), 0, 1,
                              QStringLiteral("block 1 ffn: path weights balanced again")));
        history->addState(s);
    }
    PathsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setBlock(0);
    view.setSublayer(QStringLiteral("ffn"));
    view.setStep(20);
    view.refresh();
    // Only path-weight alarms are listed.
    QCOMPARE(view.alarms()->entries().size(), 1);
    QCOMPARE(view.alarms()->active().size(), 1);
    QCOMPARE(alphaNames(view.alphaPlot()), (QStringList{QStringLiteral("path 1"), QStringLiteral("path 2 ⚠")}));
    QVERIFY2(view.alphaPlot()->title().contains(QStringLiteral("dominates")), qPrintable(view.alphaPlot()->title()));
    // The alarm names the FFN: the attention paths stay unmarked.
    view.setSublayer(QStringLiteral("attention"));
    QCOMPARE(alphaNames(view.alphaPlot()), (QStringList{QStringLiteral("path 1"), QStringLiteral("path 2")}));
    // Cleared at step 30 (live): listed, not in force, nothing marked.
    view.setSublayer(QStringLiteral("ffn"));
    view.setStep(-1);
    view.refresh();
    QCOMPARE(view.alarms()->entries().size(), 2);
    QVERIFY(view.alarms()->active().isEmpty());
    QCOMPARE(alphaNames(view.alphaPlot()), (QStringList{QStringLiteral("path 1"), QStringLiteral("path 2")}));

    // Which sublayer an alarm concerns: the one its text names, or either.
    const HealthEvent named = alarm(QStringLiteral("path weight"), QStringLiteral("warning"), 3, 0, QStringLiteral("block 4 attention"));
    QVERIFY(PathsView::concerns(named, 3, QStringLiteral("attention")));
    QVERIFY(!PathsView::concerns(named, 3, QStringLiteral("ffn")));
    QVERIFY(!PathsView::concerns(named, 2, QStringLiteral("attention")));
    const HealthEvent unnamed = alarm(QStringLiteral("path weight"), QStringLiteral("warning"), 3, 0, QStringLiteral("path 1"));
    QVERIFY(PathsView::concerns(unnamed, 3, QStringLiteral("attention")));
    QVERIFY(PathsView::concerns(unnamed, 3, QStringLiteral("ffn")));
}

QTEST_MAIN(TestRouterHealth)
#include "tst_routerhealth.moc"
