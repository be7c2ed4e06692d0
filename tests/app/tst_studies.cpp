// Tests of the desktop app's Studies tab: the chart of a study from known member
// results (means, spreads, categories, the papers' values beside them, the Pareto
// front, all worked out by hand), the builder's values and check, a tiny study
// run from the tab (table, member curves, chart and paper figures filled), and the
// real app killed halfway through a study, reopened, continuing it to the end
// without training the finished member again.
// Runs offscreen; no torch header is included here.
#include "MainWindow.h"
#include "StudiesPage.h"
#include "studies/StudiesView.h"

#include <QLabel>
#include "studies/StudyBuilderDialog.h"
#include "studies/StudyChart.h"
#include "StudyData.h"
#include "curves/CurvePlot.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QScopeGuard>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace widelab;

namespace {

// Two shapes (2x2 and 1x4, named) at two seeds on a tiny ListOps task.
QByteArray tinyStudy(int steps)
{
    const QString text = QStringLiteral(R"({
      "name": "Tiny aspect ratio", "description": "Two shapes of a tiny model.",
      "base": {
        "model": {"vocab_size": 20, "max_len": 24, "d_model": 16, "layers": 2, "heads": 2, "ffn_dim": 32,
                  "dropout": 0.0, "num_classes": 10},
        "task": {"kind": "listops", "min_length": 5, "max_length": 20, "train_size": 96, "validation_size": 16,
                 "test_size": 16},
        "train": {"steps": %1, "batch_size": 8, "learning_rate": 0.003, "warmup_steps": 1, "log_every": 1,
                  "eval_every": 5, "checkpoint_every": 5, "eval_batches": 0, "threads": 1, "device": "cpu"}},
      "axes": [{"keys": ["model.layers", "model.heads"], "values": [[2, 2], [1, 4]], "label": "aspect ratio",
                "names": ["2x2", "1x4"]}],
      "seeds": 2})")
                             .arg(steps);
    return text.toUtf8();
}

// A paper figure for the tiny study's shapes: 30 % deep, 40 % wide.
const char* kTinyFigure = R"({
  "paper": "A tiny paper", "source": "Table 1, test accuracy", "measure": "test_accuracy", "scale": 0.01,
  "when": {"task.kind": "listops"},
  "columns": [{"label": "2-2", "settings": {"model.layers": 2, "model.heads": 2}},
              {"label": "1-4", "settings": {"model.layers": 1, "model.heads": 4}}],
  "rows": [{"label": "Full", "settings": {"model.attention": "full"}, "values": [[30, 2], 40]}]})";

bool writeText(const QString& path, const QByteArray& text)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(text) == text.size();
}

QByteArray readAll(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

StudyMemberRow member(const QString& point, int axisValue, qint64 seed, double accuracy, double parameters, double ms,
                      const QString& status = QStringLiteral("completed"))
{
    StudyMemberRow row;
    row.point = point;
    row.name = point + QStringLiteral(",seed=%1").arg(seed);
    row.seed = seed;
    row.status = status;
    row.axisValues = {axisValue};
    row.settings = {{QStringLiteral("model.layers"), point.section(QLatin1Char(','), 0, 0).section(QLatin1Char('='), 1)},
                    {QStringLiteral("model.heads"), point.section(QLatin1Char(','), 1, 1).section(QLatin1Char('='), 1)}};
    if (status == QLatin1String("completed")) {
        row.measures.insert(QStringLiteral("test_accuracy"), accuracy);
        row.measures.insert(QStringLiteral("stored_parameters"), parameters);
        row.measures.insert(QStringLiteral("latency_ms"), ms);
    }
    return row;
}

// Three shapes: 6x8 (seeds at 30 % and 34 %), 3x16 (one seed, 38 %), 1x48 (not finished).
StudyData knownStudy()
{
    StudyData study;
    study.directory = QStringLiteral("/nowhere");
    study.title = QStringLiteral("known");
    study.axes = {{QStringLiteral("aspect ratio"), {QStringLiteral("model.layers"), QStringLiteral("model.heads")},
                   {QStringLiteral("6x8"), QStringLiteral("3x16"), QStringLiteral("1x48")}}};
    study.measures = {{QStringLiteral("test_accuracy"), QStringLiteral("test acc %"), 1, 100.0},
                      {QStringLiteral("stored_parameters"), QStringLiteral("stored params"), 0, 1.0},
                      {QStringLiteral("latency_ms"), QStringLiteral("latency ms"), 2, 1.0}};
    study.members = {member(QStringLiteral("layers=6,heads=8"), 0, 1, 0.30, 1000, 12.0),
                     member(QStringLiteral("layers=3,heads=16"), 1, 1, 0.38, 1000, 8.0),
                     member(QStringLiteral("layers=1,heads=48"), 2, 1, 0, 0, 0, QStringLiteral("pending")),
                     member(QStringLiteral("layers=6,heads=8"), 0, 2, 0.34, 1000, 14.0)};
    study.papers = {{QStringLiteral("P"), QStringLiteral("Table 4, ListOps"), QStringLiteral("test_accuracy"), QString(),
                     {{QStringLiteral("layers=6,heads=8"), QStringLiteral("T, 6-8"), 0.357, 0.012},
                      {QStringLiteral("layers=1,heads=48"), QStringLiteral("T, 1-48"), 0.372, std::nan("")}}}};
    // What the app takes from the core for each point (its completed seeds), worked out by hand:
    // 6x8's accuracy 30 and 34 % (mean 32, deviation sqrt(8) points), its latency 12 and 14 ms.
    const double none = std::nan("");
    study.pointMeasures[QStringLiteral("layers=6,heads=8")] = {
        {QStringLiteral("test_accuracy"), {0.32, std::sqrt(0.0008), 2}},
        {QStringLiteral("stored_parameters"), {1000, 0, 2}},
        {QStringLiteral("latency_ms"), {13.0, std::sqrt(2.0), 2}}};
    study.pointMeasures[QStringLiteral("layers=3,heads=16")] = {
        {QStringLiteral("test_accuracy"), {0.38, none, 1}},
        {QStringLiteral("stored_parameters"), {1000, none, 1}},
        {QStringLiteral("latency_ms"), {8.0, none, 1}}};
    return study;
}

}  // namespace

class TestStudies : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void chartAgainstTheAxisWithThePaperBeside();
    void chartParetoFront();
    void theTableGroupsParameterCounts();
    void builderReadsValuesAndChecks();
    void aStudyRunsFromTheTab();
    void stoppedFromTheTabItContinuesWithWholeCurves();
    void theAppKilledHalfwayContinuesTheStudy();

private:
    QTemporaryDir m_dir;
    QString m_studies;  // WIDELAB_STUDIES: the tiny study and its paper figure
};

void TestStudies::initTestCase()
{
    QVERIFY(m_dir.isValid());
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("WideLabStudiesTests"));
    QSettings().clear();
    m_studies = m_dir.filePath(QStringLiteral("builtin"));
    QVERIFY(writeText(m_studies + QStringLiteral("/tiny.json"), tinyStudy(30)));
    QVERIFY(writeText(m_studies + QStringLiteral("/papers/tiny-paper.json"), kTinyFigure));
    qputenv("WIDELAB_STUDIES", m_studies.toUtf8());
}

void TestStudies::chartAgainstTheAxisWithThePaperBeside()
{
    StudyChart chart;
    chart.setStudy(knownStudy());
    chart.setMeasure(QStringLiteral("test_accuracy"));
    QCOMPARE(chart.categories(), (QStringList{QStringLiteral("6x8"), QStringLiteral("3x16"), QStringLiteral("1x48")}));
    QVector<StudyChart::Point> study, paper;
    for (const StudyChart::Point& p : chart.points())
        (p.paper ? paper : study).push_back(p);
    // 6x8: mean of 30 and 34 = 32, sample deviation sqrt(8) = 2.83; 3x16: 38 alone; 1x48: nothing finished.
    QCOMPARE(study.size(), 2);
    QCOMPARE(study[0].x, 0.0);
    QVERIFY(std::abs(study[0].y - 32.0) < 1e-9);
    QVERIFY(std::abs(study[0].spread - std::sqrt(8.0)) < 1e-9);
    QCOMPARE(study[0].seeds, 2);
    QCOMPARE(study[1].x, 1.0);
    QVERIFY(std::abs(study[1].y - 38.0) < 1e-9);
    QVERIFY(std::isnan(study[1].spread));
    // The paper's values at their categories, the unfinished 1x48 included.
    QCOMPARE(paper.size(), 2);
    QCOMPARE(paper[0].x, 0.0);
    QVERIFY(std::abs(paper[0].y - 35.7) < 1e-9);
    QVERIFY(std::abs(paper[0].spread - 1.2) < 1e-9);
    QCOMPARE(paper[1].x, 2.0);
    QVERIFY(paper[1].series.contains(QStringLiteral("Table 4")));
    QCOMPARE(chart.plottableCount() > 0, true);

    QTemporaryDir dir;
    const QString csvPath = dir.filePath(QStringLiteral("chart.csv"));
    QString error;
    QVERIFY2(chart.exportCsv(csvPath, &error), qPrintable(error));
    const QList<QByteArray> lines = readAll(csvPath).trimmed().split('\n');
    QCOMPARE(lines.size(), 5);  // header, two of the study, two of the paper
    QVERIFY(lines[0].startsWith("series,point,x_label,category_index,test_accuracy,spread,seeds,source"));
    QVERIFY(chart.exportImage(dir.filePath(QStringLiteral("chart.png")), &error));
    QVERIFY(QFileInfo(dir.filePath(QStringLiteral("chart.png"))).size() > 1000);
}

void TestStudies::chartParetoFront()
{
    StudyData study = knownStudy();
    // Parameters against accuracy: 6x8 (1000, 32 %), 3x16 (2000, 38 %), 2x24 (1500, 30 %): 2x24 is dominated.
    study.members[1].measures[QStringLiteral("stored_parameters")] = 2000;
    study.pointMeasures[QStringLiteral("layers=3,heads=16")][QStringLiteral("stored_parameters")].mean = 2000;
    StudyMemberRow extra = member(QStringLiteral("layers=2,heads=24"), -1, 1, 0.30, 1500, 9.0);
    study.members.push_back(extra);
    study.pointMeasures[QStringLiteral("layers=2,heads=24")] = {
        {QStringLiteral("test_accuracy"), {0.30, std::nan(""), 1}},
        {QStringLiteral("stored_parameters"), {1500, std::nan(""), 1}},
        {QStringLiteral("latency_ms"), {9.0, std::nan(""), 1}}};
    StudyChart chart;
    chart.setStudy(study);
    chart.setMeasure(QStringLiteral("test_accuracy"));
    chart.setKind(StudyChart::Kind::AgainstParameters);
    QCOMPARE(chart.points().size(), 3);
    QCOMPARE(chart.paretoFront(), (QStringList{QStringLiteral("layers=6,heads=8"), QStringLiteral("layers=3,heads=16")}));
    // Against latency: 6x8 at 13 ms (32 %), 3x16 at 8 ms (38 %), 2x24 at 9 ms (30 %): 3x16 alone is on the front.
    chart.setKind(StudyChart::Kind::AgainstLatency);
    QCOMPARE(chart.paretoFront(), QStringList{QStringLiteral("layers=3,heads=16")});
    for (const StudyChart::Point& p : chart.points())
        if (p.point == QLatin1String("layers=6,heads=8"))
            QCOMPARE(p.x, 13.0);
    // The error bars follow their points into x order: 3x16 (8 ms), 2x24 (9 ms), then 6x8 (13 ms, sqrt(8) points).
    QCPErrorBars* bars = nullptr;
    for (int i = 0; i < chart.plottableCount(); ++i)
        bars = bars ? bars : qobject_cast<QCPErrorBars*>(chart.plottable(i));
    QVERIFY(bars != nullptr);
    QCOMPARE(bars->dataCount(), 3);
    QCOMPARE(bars->dataPlottable()->interface1D()->dataMainKey(2), 13.0);
    QVERIFY(std::abs(bars->data()->at(2).errorPlus - std::sqrt(8.0)) < 1e-9);
    QCOMPARE(bars->data()->at(0).errorPlus, 0.0);
}

void TestStudies::theTableGroupsParameterCounts()
{
    StudyData study = knownStudy();
    study.members[1].measures[QStringLiteral("stored_parameters")] = 2512345;
    StudiesView view;
    view.setStudy(study);
    // Columns: member, seed, status, layers, heads, then the measures in order.
    QCOMPARE(view.table()->horizontalHeaderItem(6)->text(), QStringLiteral("stored params"));
    QCOMPARE(view.table()->item(0, 6)->text(), QStringLiteral("1,000"));
    QCOMPARE(view.table()->item(1, 6)->text(), QStringLiteral("2,512,345"));
    QCOMPARE(view.table()->item(2, 6)->text(), QString());  // pending: nothing measured
    QCOMPARE(view.table()->item(0, 5)->text(), QStringLiteral("30.0"));  // a fraction as a percentage, one decimal
    QCOMPARE(view.table()->item(0, 7)->text(), QStringLiteral("12.00"));
    // The CSV keeps plain numbers, for a program to read.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("table.csv"));
    QString error;
    QVERIFY2(view.exportTableCsv(path, &error), qPrintable(error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = file.readAll().split('\n');
    QCOMPARE(lines.at(1), QByteArray("\"layers=6,heads=8,seed=1\",1,completed,6,8,30.0,1000,12.00"));
    QVERIFY(lines.at(2).contains(",2512345,"));
}

void TestStudies::builderReadsValuesAndChecks()
{
    QCOMPARE(StudyBuilderDialog::parseValues(QStringLiteral("4, 8, 16"), 1), (QJsonArray{4, 8, 16}));
    QCOMPARE(StudyBuilderDialog::parseValues(QStringLiteral("full, linear"), 1), (QJsonArray{"full", "linear"}));
    QCOMPARE(StudyBuilderDialog::parseValues(QStringLiteral("true; false"), 1), (QJsonArray{true, false}));
    QCOMPARE(StudyBuilderDialog::parseValues(QStringLiteral("6 8; 3 16"), 2), (QJsonArray{QJsonArray{6, 8}, QJsonArray{3, 16}}));
    QCOMPARE(StudyBuilderDialog::parseValues(QStringLiteral("6,8 ; 3, 16"), 2), (QJsonArray{QJsonArray{6, 8}, QJsonArray{3, 16}}));

    const QJsonObject base = QJsonDocument::fromJson(R"({"name": "six by eight", "model": {"layers": 6, "heads": 8,
        "d_model": 128, "head_dim": 16, "num_classes": 10, "vocab_size": 32, "max_len": 512}})").object();
    QJsonObject resolved = base;
    resolved.insert(QStringLiteral("train"), QJsonObject{{QStringLiteral("steps"), 300}});
    StudyBuilderDialog dialog(base, resolved, {}, checkStudyDocument);
    // Suggested: every layers x heads at 48 heads in all, deepest first.
    const QJsonObject suggested = dialog.study();
    const QJsonObject axis = suggested.value(QStringLiteral("axes")).toArray().at(0).toObject();
    QCOMPARE(axis.value(QStringLiteral("keys")).toArray(), (QJsonArray{"model.layers", "model.heads"}));
    QCOMPARE(axis.value(QStringLiteral("values")).toArray(),
             (QJsonArray{QJsonArray{6, 8}, QJsonArray{4, 12}, QJsonArray{3, 16}, QJsonArray{2, 24}, QJsonArray{1, 48}}));
    QVERIFY2(dialog.valid(), qPrintable(dialog.problems()));
    QVERIFY(!suggested.contains(QStringLiteral("set")));  // steps as the configuration's
    dialog.setSteps(50);
    dialog.setAxis(1, QStringLiteral("model.expers"), QStringLiteral("2, 4"));
    dialog.check();
    QVERIFY(!dialog.valid());
    QVERIFY2(dialog.problems().contains(QStringLiteral("model.expers")) && dialog.problems().contains(QStringLiteral("model.experts")),
             qPrintable(dialog.problems()));
    dialog.setAxis(1, QStringLiteral("model.experts"), QStringLiteral("2, 4"));
    dialog.check();
    QVERIFY2(dialog.valid(), qPrintable(dialog.problems()));
    QCOMPARE(dialog.study().value(QStringLiteral("set")).toObject().value(QStringLiteral("train.steps")).toInt(), 50);
    int members = 0;
    QVERIFY(checkStudyDocument(dialog.study(), &members).isEmpty());
    QCOMPARE(members, 5 * 2 * 2);  // 5 shapes x 2 expert counts x 2 seeds

    // A configuration that leaves head_dim to d_model / heads: the suggested shapes keep
    // the heads' width (16 = 128 / 8), or 4x12 and 1x48 would not divide d_model.
    QJsonObject derived = base;
    QJsonObject model = derived.value(QStringLiteral("model")).toObject();
    model.remove(QStringLiteral("head_dim"));
    derived.insert(QStringLiteral("model"), model);
    QJsonObject derivedResolved = resolved;
    derivedResolved.insert(QStringLiteral("model"), QJsonObject{{QStringLiteral("layers"), 6}, {QStringLiteral("heads"), 8},
                                                               {QStringLiteral("head_dim"), 16}});
    StudyBuilderDialog keeps(derived, derivedResolved, {}, checkStudyDocument);
    QVERIFY2(keeps.valid(), qPrintable(keeps.problems()));
    QCOMPARE(keeps.study().value(QStringLiteral("set")).toObject().value(QStringLiteral("model.head_dim")).toInt(), 16);
    // Without the heads on an axis, nothing is fixed.
    keeps.setAxis(0, QStringLiteral("model.layers"), QStringLiteral("2, 4"));
    keeps.check();
    QVERIFY(!keeps.study().contains(QStringLiteral("set")));
}

void TestStudies::aStudyRunsFromTheTab()
{
    QTemporaryDir dir;
    StudiesView view;
    StudiesPage page(&view, dir.filePath(QStringLiteral("studies")), &view);
    view.selectBuiltin(QStringLiteral("tiny"));
    QCOMPARE(view.selectedBuiltin(), QStringLiteral("tiny"));
    // No study open: what the page is for, not empty charts.
    const auto* hint = view.findChild<QLabel*>(QStringLiteral("studyEmptyHint"));
    QVERIFY(hint != nullptr && hint->isVisibleTo(&view) && !view.table()->isVisibleTo(&view));
    QSignalSpy finished(&page.controller(), &StudyController::finished);
    QVERIFY(page.startBuiltin(view.startOptions()));
    QVERIFY(view.running());
    QVERIFY(!hint->isVisibleTo(&view) && view.table()->isVisibleTo(&view) && view.chart()->isVisibleTo(&view));
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.first().at(0).toString(), QStringLiteral("completed"));
    QCoreApplication::processEvents();
    QVERIFY(!view.running());

    // The table: a row per member, all completed, with measures.
    const StudyData& study = view.study();
    QCOMPARE(QDir::cleanPath(study.directory), QDir::cleanPath(dir.filePath(QStringLiteral("studies/tiny"))));
    QCOMPARE(study.members.size(), 4);
    QCOMPARE(view.table()->rowCount(), 4);
    for (int row = 0; row < 4; ++row)
        QCOMPARE(view.table()->item(row, 2)->text(), QStringLiteral("completed"));
    // Every member's training loss, coloured by its point: both seeds of 2x2 alike, 1x4 another colour.
    QCOMPARE(view.curves()->runs().size(), 4);
    const QString deep1 = QStringLiteral("layers=2,heads=2,seed=1"), deep2 = QStringLiteral("layers=2,heads=2,seed=2"),
                  wide1 = QStringLiteral("layers=1,heads=4,seed=1");
    const QString loss = QStringLiteral("loss"), accuracy = QStringLiteral("validation_accuracy");
    QCOMPARE(view.curves()->seriesColor(deep1, loss), view.curves()->seriesColor(deep2, loss));
    QVERIFY(view.curves()->seriesColor(deep1, loss) != view.curves()->seriesColor(wide1, loss));
    QCOMPARE(view.curves()->points(deep1, loss).size(), 30);  // log_every 1, 30 steps
    // The validations (every 5 steps: 6) are kept for when they are asked for.
    view.setCurveMetric(accuracy);
    QCOMPARE(view.curves()->points(deep1, accuracy).size(), 6);
    QCOMPARE(view.curves()->seriesColor(deep1, accuracy), view.curves()->seriesColor(deep2, accuracy));
    // The chart: both shapes, named, with the tiny paper's values beside them.
    QCOMPARE(view.chart()->categories(), (QStringList{QStringLiteral("2x2"), QStringLiteral("1x4")}));
    int paperPoints = 0;
    for (const StudyChart::Point& p : view.chart()->points())
        paperPoints += p.paper ? 1 : 0;
    QCOMPARE(paperPoints, 2);
    QVERIFY(view.notes()->text().contains(QStringLiteral("A tiny paper")));
    // Deep against wide latency is measured and said.
    QCOMPARE(study.latency.size(), 1);
    QVERIFY(study.latency[0].deepMs > 0 && study.latency[0].wideMs > 0);

    // Starting the same study again continues it (nothing to train); another seed count gets a new folder.
    QVERIFY(page.startBuiltin(view.startOptions()));
    QVERIFY(finished.wait(60000));
    QCOMPARE(QDir::cleanPath(view.study().directory), QDir::cleanPath(dir.filePath(QStringLiteral("studies/tiny"))));
    StudyStartOptions one = view.startOptions();
    one.seeds = 1;
    QVERIFY(page.startBuiltin(one));
    QVERIFY(finished.wait(120000));
    QCOMPARE(QDir::cleanPath(view.study().directory), QDir::cleanPath(dir.filePath(QStringLiteral("studies/tiny-2"))));
    QCOMPARE(view.study().members.size(), 2);
}

void TestStudies::stoppedFromTheTabItContinuesWithWholeCurves()
{
    QTemporaryDir dir;
    QVERIFY(writeText(dir.filePath(QStringLiteral("builtin/long.json")), tinyStudy(120)));
    qputenv("WIDELAB_STUDIES", dir.filePath(QStringLiteral("builtin")).toUtf8());
    const auto restore = qScopeGuard([this] { qputenv("WIDELAB_STUDIES", m_studies.toUtf8()); });
    StudiesView view;
    StudiesPage page(&view, dir.filePath(QStringLiteral("studies")), &view);
    view.selectBuiltin(QStringLiteral("long"));
    QSignalSpy finished(&page.controller(), &StudyController::finished);
    QVERIFY(page.startBuiltin(view.startOptions()));
    const QString study = dir.filePath(QStringLiteral("studies/long"));
    const QString second = study + QStringLiteral("/runs/layers=1,heads=4,seed=1");
    // Stopped inside the second member, once it has a checkpoint.
    QTRY_VERIFY_WITH_TIMEOUT(!QDir(second + QStringLiteral("/checkpoints")).entryList({QStringLiteral("step-*.pt")}).isEmpty(),
                             120000);
    auto* stop = view.findChild<QPushButton*>(QStringLiteral("studyStop"));
    auto* resume = view.findChild<QPushButton*>(QStringLiteral("studyContinue"));
    QVERIFY(stop->isEnabled());
    QVERIFY(!resume->isEnabled());
    stop->click();
    QVERIFY(!stop->isEnabled());  // stopping: not twice
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.last().at(0).toString(), QStringLiteral("stopped"));
    QCoreApplication::processEvents();
    QVERIFY(resume->isEnabled());
    QCOMPARE(view.study().count(QStringLiteral("completed")), 1);
    QCOMPARE(view.study().count(QStringLiteral("stopped")), 1);

    resume->click();
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.last().at(0).toString(), QStringLiteral("completed"));
    QCoreApplication::processEvents();
    QCOMPARE(view.study().count(QStringLiteral("completed")), 4);
    QVERIFY(!resume->isEnabled());
    // The continued member's training loss: every step once, in order (120 steps, logged every step),
    // its time going on from before the stop.
    const QVector<CurvePoint> points = view.curves()->points(QStringLiteral("layers=1,heads=4,seed=1"), QStringLiteral("loss"));
    QStringList steps;
    for (const CurvePoint& p : points)
        steps << QString::number(p.step);
    QVERIFY2(points.size() == 120, qPrintable(steps.join(QLatin1Char(' '))));
    for (int i = 0; i < points.size(); ++i) {
        QCOMPARE(points[i].step, double(i + 1));
        if (i > 0)
            QVERIFY2(points[i].seconds >= points[i - 1].seconds, qPrintable(QString::number(i)));
    }

    // Start again with one seed: the study with two is kept; the first free folder takes it,
    // and the next Start with one seed continues that one.
    StudyStartOptions one = view.startOptions();
    one.seeds = 1;
    one.steps = 10;
    QVERIFY(page.startBuiltin(one));
    QVERIFY(finished.wait(60000));
    QCOMPARE(QDir::cleanPath(view.study().directory), QDir::cleanPath(study + QStringLiteral("-2")));
    QVERIFY(page.startBuiltin(one));
    QVERIFY(finished.wait(60000));
    QCOMPARE(QDir::cleanPath(view.study().directory), QDir::cleanPath(study + QStringLiteral("-2")));
    QVERIFY(!QFileInfo::exists(study + QStringLiteral("-3")));
}

void TestStudies::theAppKilledHalfwayContinuesTheStudy()
{
    QTemporaryDir dir;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    environment.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.filePath(QStringLiteral("config")));
    environment.insert(QStringLiteral("WIDELAB_STUDIES"), m_studies);
    environment.insert(QStringLiteral("OMP_WAIT_POLICY"), QStringLiteral("PASSIVE"));
    // A longer tiny study, so that the kill lands inside the second member.
    QVERIFY(writeText(dir.filePath(QStringLiteral("builtin/tiny.json")), tinyStudy(200)));
    QVERIFY(writeText(dir.filePath(QStringLiteral("builtin/papers/tiny-paper.json")), kTinyFigure));
    environment.insert(QStringLiteral("WIDELAB_STUDIES"), dir.filePath(QStringLiteral("builtin")));
    const QString runs = dir.filePath(QStringLiteral("runs"));
    const QString study = dir.filePath(QStringLiteral("studies/tiny"));
    const QString first = study + QStringLiteral("/members/layers=2,heads=2,seed=1.json");
    const QString second = study + QStringLiteral("/runs/layers=1,heads=4,seed=1/checkpoints");

    QProcess app;
    app.setProcessEnvironment(environment);
    app.setProcessChannelMode(QProcess::MergedChannels);
    app.start(QStringLiteral(WIDELAB_APP), {QStringLiteral("--runs"), runs, QStringLiteral("--study"), QStringLiteral("tiny"),
                                            QStringLiteral("--train")});
    QVERIFY(app.waitForStarted());
    // Killed (no chance to save) once the first member is done and the second has a checkpoint
    // to continue from (best.pt, written at a validation, is not one).
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(first) && !QDir(second).entryList({QStringLiteral("step-*.pt")}).isEmpty(), 120000);
    app.kill();
    app.waitForFinished();
    const QByteArray firstMetrics = readAll(study + QStringLiteral("/runs/layers=2,heads=2,seed=1/metrics.jsonl"));
    QVERIFY(!firstMetrics.isEmpty());
    QVERIFY(!QFileInfo::exists(study + QStringLiteral("/members/layers=1,heads=4,seed=1.json")));

    // Reopened on the study folder with --train: it continues, member by member and inside the second.
    app.start(QStringLiteral(WIDELAB_APP), {QStringLiteral("--runs"), runs, study, QStringLiteral("--train")});
    QVERIFY(app.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(QDir(study + QStringLiteral("/members")).entryList({QStringLiteral("*.json")}).size() == 4, 180000);
    app.kill();
    app.waitForFinished();
    QCOMPARE(readAll(study + QStringLiteral("/runs/layers=2,heads=2,seed=1/metrics.jsonl")), firstMetrics);
    QVERIFY2(readAll(study + QStringLiteral("/runs/layers=1,heads=4,seed=1/log.txt")).contains("resumed from"),
             readAll(study + QStringLiteral("/runs/layers=1,heads=4,seed=1/log.txt")).constData());
    StudyData data;
    QString error;
    QVERIFY2(loadStudyData(study, data, &error), qPrintable(error));
    QCOMPARE(data.count(QStringLiteral("completed")), 4);
    const QList<QByteArray> csv = readAll(study + QStringLiteral("/results.csv")).trimmed().split('\n');
    QCOMPARE(csv.size(), 5);
}

QTEST_MAIN(TestStudies)
#include "tst_studies.moc"
