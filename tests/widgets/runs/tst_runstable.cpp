// Tests RunsTable: rows drawn as a user reads them (steps with separators, scores in
// percent or BLEU, a mark for a note), sorted with missing values last, filtered by
// every word typed, and every edit asked of the app by a signal, the rows unchanged
// until the app hands them back.
#include "runs/RunsTable.h"

#include <QAbstractItemModel>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>

using namespace widelab;

namespace {

RunRow row(const QString& id, const QString& name, qint64 step, std::optional<double> loss, qint64 updated)
{
    RunRow r;
    r.id = QStringLiteral("/runs/") + id;
    r.name = name;
    r.family = QStringLiteral("WideNet");
    r.model = QStringLiteral("2 x 4 \u00b7 4 experts, top-2");
    r.state = QStringLiteral("finished");
    r.step = step;
    r.totalSteps = 1200;
    r.bestLoss = loss;
    r.updated = QDateTime::fromSecsSinceEpoch(updated);
    return r;
}

QStringList namesInOrder(const RunsTable& table)
{
    QStringList names;
    for (int i = 0; i < table.visibleRowCount(); ++i)
        names << table.visibleCell(i, RunsTable::Name);
    return names;
}

}  // namespace

class TestRunsTable : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cellsReadAsAUserReadsThem();
    void theLatestRunComesFirstAndMissingValuesSortLast();
    void everyWordOfTheFilterMustMatch();
    void editsAreAskedForNotMade();
    void theSummaryCountsRunsShownAndMatching();
    void newRowsKeepTheSelection();
};

void TestRunsTable::cellsReadAsAUserReadsThem()
{
    RunsTable table;
    RunRow a = row(QStringLiteral("a"), QStringLiteral("baseline"), 1200, 1.23456, 100);
    a.bestScore = 0.8766;
    a.tokensPerSecond = 12345;
    a.note = QStringLiteral("lr too high?");
    a.tags = QStringList{QStringLiteral("paper"), QStringLiteral("seed 1")};
    RunRow b = row(QStringLiteral("b"), QStringLiteral("bible"), 50, std::nullopt, 50);
    b.bestScore = 9.964;
    b.scoreIsBleu = true;
    b.state.clear();
    table.setRows({a, b});
    QCOMPARE(table.visibleRowCount(), 2);
    QCOMPARE(table.visibleCell(0, RunsTable::Name), QStringLiteral("baseline \u270e"));  // it has a note
    QCOMPARE(table.visibleCell(0, RunsTable::Steps), QStringLiteral("1,200 / 1,200"));
    QCOMPARE(table.visibleCell(0, RunsTable::BestLoss), QStringLiteral("1.235"));
    QCOMPARE(table.visibleCell(0, RunsTable::BestScore), QStringLiteral("87.7 %"));
    QCOMPARE(table.visibleCell(0, RunsTable::Speed), QStringLiteral("12.3k"));
    QCOMPARE(table.visibleCell(0, RunsTable::Tags), QStringLiteral("paper, seed 1"));
    QCOMPARE(table.visibleCell(1, RunsTable::BestScore), QStringLiteral("9.96 BLEU"));
    QCOMPARE(table.visibleCell(1, RunsTable::BestLoss), QString());
    QCOMPARE(table.visibleCell(1, RunsTable::State), QStringLiteral("\u2014"));  // no status: a dash
    QCOMPARE(table.visibleCell(1, RunsTable::Steps), QStringLiteral("50 / 1,200"));
}

void TestRunsTable::theLatestRunComesFirstAndMissingValuesSortLast()
{
    RunsTable table;
    table.setRows({row(QStringLiteral("a"), QStringLiteral("old"), 10, 2.0, 100),
                   row(QStringLiteral("b"), QStringLiteral("new"), 30, std::nullopt, 300),
                   row(QStringLiteral("c"), QStringLiteral("mid"), 20, 1.0, 200)});
    QCOMPARE(namesInOrder(table), (QStringList{QStringLiteral("new"), QStringLiteral("mid"), QStringLiteral("old")}));
    table.view()->sortByColumn(RunsTable::BestLoss, Qt::AscendingOrder);
    // The lowest loss first; a run without a validation after every one with.
    QCOMPARE(namesInOrder(table), (QStringList{QStringLiteral("mid"), QStringLiteral("old"), QStringLiteral("new")}));
    table.view()->sortByColumn(RunsTable::Steps, Qt::DescendingOrder);
    QCOMPARE(namesInOrder(table), (QStringList{QStringLiteral("new"), QStringLiteral("mid"), QStringLiteral("old")}));
    table.view()->sortByColumn(RunsTable::Name, Qt::AscendingOrder);
    QCOMPARE(namesInOrder(table), (QStringList{QStringLiteral("mid"), QStringLiteral("new"), QStringLiteral("old")}));
}

void TestRunsTable::everyWordOfTheFilterMustMatch()
{
    RunsTable table;
    RunRow a = row(QStringLiteral("a"), QStringLiteral("baseline"), 10, 2.0, 100);
    a.tags = QStringList{QStringLiteral("paper")};
    RunRow b = row(QStringLiteral("b"), QStringLiteral("wide"), 10, 2.0, 200);
    b.note = QStringLiteral("the Paper's recipe");
    b.state = QStringLiteral("training");
    RunRow c = row(QStringLiteral("c"), QStringLiteral("deep"), 10, 2.0, 300);
    table.setRows({a, b, c});
    table.setFilter(QStringLiteral("PAPER"));  // a tag, a note; case aside
    QCOMPARE(namesInOrder(table), (QStringList{QStringLiteral("wide \u270e"), QStringLiteral("baseline")}));
    table.setFilter(QStringLiteral("paper  training"));
    QCOMPARE(namesInOrder(table), QStringList{QStringLiteral("wide \u270e")});
    table.setFilter(QStringLiteral("/runs/c"));  // not the whole path: the folder's name only
    QCOMPARE(table.visibleRowCount(), 0);
    table.setFilter(QStringLiteral("c"));
    QVERIFY(namesInOrder(table).contains(QStringLiteral("deep")));
    table.setFilter(QString());
    QCOMPARE(table.visibleRowCount(), 3);
}

void TestRunsTable::editsAreAskedForNotMade()
{
    RunsTable table;
    RunRow a = row(QStringLiteral("a"), QStringLiteral("baseline"), 10, 2.0, 100);
    a.tags = QStringList{QStringLiteral("x")};
    table.setRows({a});
    QSignalSpy shown(&table, &RunsTable::shownChanged);
    QSignalSpy renamed(&table, &RunsTable::renameRequested);
    QSignalSpy tagged(&table, &RunsTable::tagsRequested);
    QAbstractItemModel* model = table.view()->model();
    QCOMPARE(model->data(model->index(0, RunsTable::Tags), Qt::EditRole).toString(), QStringLiteral("x"));
    QVERIFY(model->setData(model->index(0, RunsTable::Shown), Qt::Checked, Qt::CheckStateRole));
    QVERIFY(model->setData(model->index(0, RunsTable::Name), QStringLiteral("  better name "), Qt::EditRole));
    QVERIFY(model->setData(model->index(0, RunsTable::Tags), QStringLiteral("x, y"), Qt::EditRole));
    QVERIFY(!model->setData(model->index(0, RunsTable::Steps), 5, Qt::EditRole));  // not editable
    QCOMPARE(shown.size(), 1);
    QCOMPARE(shown[0], (QVariantList{QStringLiteral("/runs/a"), true}));
    QCOMPARE(renamed[0], (QVariantList{QStringLiteral("/runs/a"), QStringLiteral("better name")}));
    QCOMPARE(tagged[0], (QVariantList{QStringLiteral("/runs/a"), QStringLiteral("x, y")}));
    // Until the app hands the rows back, the table shows what the run holds.
    QCOMPARE(table.visibleCell(0, RunsTable::Name), QStringLiteral("baseline"));
    QCOMPARE(model->data(model->index(0, RunsTable::Shown), Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    QVERIFY(!(model->flags(model->index(0, RunsTable::Steps)) & Qt::ItemIsEditable));
    QVERIFY(model->flags(model->index(0, RunsTable::Name)) & Qt::ItemIsEditable);
}

void TestRunsTable::theSummaryCountsRunsShownAndMatching()
{
    RunsTable table;
    table.setFolder(QStringLiteral("/work/runs"));
    QVERIFY2(table.summaryText().startsWith(QStringLiteral("0 runs in /work/runs. Runs you train go here")),
             qPrintable(table.summaryText()));
    RunRow a = row(QStringLiteral("a"), QStringLiteral("baseline"), 10, 2.0, 100);
    a.shown = true;
    table.setRows({a, row(QStringLiteral("b"), QStringLiteral("wide"), 10, 2.0, 200)});
    QCOMPARE(table.summaryText(), QStringLiteral("2 runs in /work/runs, 1 shown in the charts"));
    table.setFilter(QStringLiteral("baseline"));  // not "wide": both are WideNet
    QCOMPARE(table.summaryText(), QStringLiteral("2 runs in /work/runs, 1 shown in the charts; 1 match the filter"));
}

void TestRunsTable::newRowsKeepTheSelection()
{
    RunsTable table;
    table.setRows({row(QStringLiteral("a"), QStringLiteral("a"), 10, 2.0, 100),
                   row(QStringLiteral("b"), QStringLiteral("b"), 10, 2.0, 200)});
    table.selectRun(QStringLiteral("/runs/a"));
    QCOMPARE(table.selectedRunIds(), QStringList{QStringLiteral("/runs/a")});
    // The same runs, one changed: the row is updated in place.
    RunRow changed = row(QStringLiteral("a"), QStringLiteral("a"), 20, 1.0, 100);
    table.setRows({changed, row(QStringLiteral("b"), QStringLiteral("b"), 10, 2.0, 200)});
    QCOMPARE(table.selectedRunIds(), QStringList{QStringLiteral("/runs/a")});
    QCOMPARE(table.visibleCell(1, RunsTable::Steps), QStringLiteral("20 / 1,200"));
    // A run more: the model is rebuilt, the selection put back.
    table.setRows({changed, row(QStringLiteral("b"), QStringLiteral("b"), 10, 2.0, 200),
                   row(QStringLiteral("c"), QStringLiteral("c"), 10, 2.0, 50)});
    QCOMPARE(table.selectedRunIds(), QStringList{QStringLiteral("/runs/a")});
}

QTEST_MAIN(TestRunsTable)
#include "tst_runstable.moc"
