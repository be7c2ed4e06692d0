// Tests of study/PaperFigures and StudyComparisons: a paper figure's problems
// named with their key, its cells built from rows and columns (scaled, spread
// kept), a study's points matched to the cells by their settings (defaults from
// the schema, the figure's `when` included), the deep/wide latency ratio from
// known members (worked out by hand), the report's sections, and the shipped
// figures against the numbers printed in the papers.
#include "vocab/ConfigError.h"
#include "study/BuiltinStudies.h"
#include "study/PaperFigures.h"
#include "study/StudyComparisons.h"
#include "study/StudyDocument.h"

#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace widelab;

namespace {

const char* kFigure = R"({
  "paper": "A paper", "source": "Table 4", "measure": "test_accuracy", "scale": 0.01,
  "when": {"task.kind": "listops"},
  "columns": [{"label": "6-8", "settings": {"model.layers": 6, "model.heads": 8}},
              {"label": "1-48", "settings": {"model.layers": 1, "model.heads": 48}}],
  "rows": [{"label": "Full", "settings": {"model.attention": "full"}, "values": [[35.7, 1.2], 37.2]},
           {"label": "Local", "settings": {"model.attention": "local"}, "values": [null, [37.7, 0.2]]}]
})";

std::string problems(const std::string& text)
{
    try {
        parsePaperFigure(text, "f", "f.json");
    } catch (const ConfigError& error) {
        return error.what();
    }
    return {};
}

MemberResult member(const std::string& point, std::int64_t seed,
                    std::vector<std::pair<std::string, nlohmann::json>> settings, double latency)
{
    MemberResult m;
    m.point = point;
    m.seed = seed;
    m.name = point + ",seed=" + std::to_string(seed);
    m.settings = std::move(settings);
    m.status = MemberStatus::Completed;
    m.measures["latency_ms"] = latency;
    m.measures["test_accuracy"] = 0.3 + 0.01 * static_cast<double>(seed);
    return m;
}

// A study of attention (full, local) x shape (6x8, 2x24, 1x48) on a base that
// leaves model.attention and task.kind at their defaults (full, listops).
// The comparison with the paper's table whose source names `table` ("Table 4"), or null.
const PaperComparison* fromTable(const std::vector<PaperComparison>& comparisons, const std::string& table)
{
    const auto found = std::find_if(comparisons.begin(), comparisons.end(), [&](const PaperComparison& c) {
        return c.source.find(table) != std::string::npos;
    });
    return found == comparisons.end() ? nullptr : &*found;
}

StudyRecord shapeStudy()
{
    StudyRecord record;
    record.document = nlohmann::json::parse(R"({
      "name": "shapes", "base": {"model": {"d_model": 96, "layers": 6, "heads": 8}}, "set": {},
      "axes": [{"key": "model.attention", "values": ["full", "local"]},
               {"keys": ["model.layers", "model.heads"], "values": [[6, 8], [2, 24], [1, 48]]}]})");
    const double ms[2][3] = {{12.0, 7.0, 5.0}, {9.0, 6.0, 3.0}};
    const char* attention[2] = {"full", "local"};
    const std::pair<int, int> shape[3] = {{6, 8}, {2, 24}, {1, 48}};
    for (int seed = 1; seed <= 2; ++seed)
        for (int a = 0; a < 2; ++a)
            for (int s = 0; s < 3; ++s) {
                const std::string point = std::string("attention=") + attention[a] + ",layers="
                                          + std::to_string(shape[s].first) + ",heads=" + std::to_string(shape[s].second);
                // The second seed 1 ms slower: the means are ms + 0.5.
                record.members.push_back(member(point, seed,
                                                {{"model.attention", attention[a]},
                                                 {"model.layers", shape[s].first},
                                                 {"model.heads", shape[s].second}},
                                                ms[a][s] + (seed == 2 ? 1.0 : 0.0)));
            }
    return record;
}

}  // namespace

class TestStudyCompare : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void figureCellsFromRowsAndColumns();
    void figureProblemsNamed_data();
    void figureProblemsNamed();
    void pointsMatchCellsBySettings();
    void whenMustMatchToo();
    void latencyRatioDeepAgainstWide();
    void reportShowsRatiosAndPapers();
    void anEmptyTextSettingIsShownQuoted();
    void namedAxesAreShownByTheirNames();
    void shippedFiguresAreThePapers();
    void shippedWideAttentionTablesCellByCell();
};

void TestStudyCompare::figureCellsFromRowsAndColumns()
{
    const PaperFigure figure = parsePaperFigure(kFigure, "fig");
    QCOMPARE(figure.name, std::string("fig"));
    QCOMPARE(figure.measure, std::string("test_accuracy"));
    // Three cells: the null one is left out.
    QCOMPARE(figure.entries.size(), std::size_t{3});
    QCOMPARE(figure.entries[0].label, std::string("Full, 6-8"));
    QCOMPARE(figure.entries[0].value, 0.357);
    QCOMPARE(figure.entries[0].spread, 0.012);
    QVERIFY(std::isnan(figure.entries[1].spread));  // 37.2 has no spread
    QCOMPARE(figure.entries[2].label, std::string("Local, 1-48"));
    const nlohmann::json expected = {{"task.kind", "listops"}, {"model.attention", "local"},
                                     {"model.layers", 1}, {"model.heads", 48}};
    QCOMPARE(figure.entries[2].settings, expected);
}

void TestStudyCompare::figureProblemsNamed_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not json") << "{" << "f.json: not JSON";
    QTest::newRow("measure") << R"({"paper": "p", "measure": "accuracy", "columns": [{"label": "a"}],
                                    "rows": [{"label": "r", "values": [1]}]})"
                             << R"(measure: "accuracy" is not a study measure)";
    QTest::newRow("setting key") << R"({"paper": "p", "measure": "latency_ms", "columns": [{"label": "a",
                                        "settings": {"model.layer": 6}}], "rows": [{"label": "r", "values": [1]}]})"
                                 << R"(columns[0].settings.model.layer: not a run-document key (did you mean "model.layers"?))";
    QTest::newRow("values") << R"({"paper": "p", "measure": "latency_ms", "columns": [{"label": "a"}, {"label": "b"}],
                                   "rows": [{"label": "r", "values": [1]}]})"
                            << "rows[0].values: must list one value per column (2)";
    QTest::newRow("cell") << R"({"paper": "p", "measure": "latency_ms", "columns": [{"label": "a"}],
                                 "rows": [{"label": "r", "values": ["high"]}]})"
                          << "rows[0].values[0]: must be a number, [number, spread] or null";
    QTest::newRow("unknown") << R"({"paper": "p", "measure": "latency_ms", "colums": [], "columns": [{"label": "a"}],
                                    "rows": [{"label": "r", "values": [1]}]})"
                             << R"(colums: unknown key (did you mean "columns"?))";
    QTest::newRow("contradiction") << R"({"paper": "p", "measure": "latency_ms", "when": {"model.layers": 2},
                                          "columns": [{"label": "a", "settings": {"model.layers": 6}}],
                                          "rows": [{"label": "r", "values": [1]}]})"
                                   << "model.layers is 2 and 6 at once";
}

void TestStudyCompare::figureProblemsNamed()
{
    QFETCH(QString, text);
    QFETCH(QString, expected);
    const QString message = QString::fromStdString(problems(text.toStdString()));
    QVERIFY2(message.contains(expected), qPrintable(message));
}

void TestStudyCompare::pointsMatchCellsBySettings()
{
    const StudyRecord record = shapeStudy();
    // Defaults: the base says neither attention nor task kind; the schema's are full and listops.
    QCOMPARE(memberSetting(record, record.members[0], "task.kind"), nlohmann::json("listops"));
    QCOMPARE(memberSetting(record, record.members[0], "model.d_model"), nlohmann::json(96));
    QVERIFY(memberSetting(record, record.members[0], "model.head_dim").is_null());  // derived: no default

    const auto comparisons = paperComparisons(record, {parsePaperFigure(kFigure, "fig")});
    QCOMPARE(comparisons.size(), std::size_t{1});
    const auto& points = comparisons[0].points;
    // full 6x8 and 1x48, local 1x48 (the paper has no local 6-8; no 2x24 at all).
    QCOMPARE(points.size(), std::size_t{3});
    QCOMPARE(points[0].point, std::string("attention=full,layers=6,heads=8"));
    QCOMPARE(points[0].value, 0.357);
    QCOMPARE(points[1].point, std::string("attention=full,layers=1,heads=48"));
    QCOMPARE(points[1].value, 0.372);
    QCOMPARE(points[2].point, std::string("attention=local,layers=1,heads=48"));
    QCOMPARE(points[2].label, std::string("Local, 1-48"));
}

void TestStudyCompare::whenMustMatchToo()
{
    StudyRecord record = shapeStudy();
    record.document["set"] = {{"task.kind", "images"}};
    QVERIFY(paperComparisons(record, {parsePaperFigure(kFigure, "fig")}).empty());
}

void TestStudyCompare::latencyRatioDeepAgainstWide()
{
    const StudyRecord record = shapeStudy();
    const PaperFigure latency = parsePaperFigure(R"({"paper": "P", "source": "Table 9", "measure": "latency_ms",
        "columns": [{"label": "deep", "settings": {"model.layers": 6}}, {"label": "wide", "settings": {"model.layers": 1}}],
        "rows": [{"label": "Full", "settings": {"model.attention": "full"}, "values": [41, 16]}]})",
                                                 "lat");
    const auto papers = paperComparisons(record, {latency});
    const auto ratios = latencyRatios(record, record.members, papers);
    QCOMPARE(ratios.size(), std::size_t{2});
    // Grouped by the other axis; 6 layers against 1; means over the two seeds.
    QCOMPARE(ratios[0].group, std::string("attention=full"));
    QCOMPARE(ratios[0].deep, std::string("attention=full,layers=6,heads=8"));
    QCOMPARE(ratios[0].wide, std::string("attention=full,layers=1,heads=48"));
    QCOMPARE(ratios[0].deepMs, 12.5);
    QCOMPARE(ratios[0].wideMs, 5.5);
    QCOMPARE(ratios[0].paperRatio, 41.0 / 16.0);
    QCOMPARE(ratios[1].group, std::string("attention=local"));
    QCOMPARE(ratios[1].ratio(), 9.5 / 3.5);
    QVERIFY(std::isnan(ratios[1].paperRatio));  // the figure has no local row

    // A study that does not set model.layers on an axis has no such ratio.
    StudyRecord flat = record;
    flat.document["axes"] = nlohmann::json::parse(R"([{"key": "model.attention", "values": ["full", "local"]}])");
    QVERIFY(latencyRatios(flat, flat.members).empty());
    // Nor does a member set that is not complete: a group needs two depths.
    std::vector<MemberResult> few(record.members.begin(), record.members.begin() + 1);
    QVERIFY(latencyRatios(record, few).empty());
}

void TestStudyCompare::reportShowsRatiosAndPapers()
{
    const StudyRecord record = shapeStudy();
    const std::string report = studyReport(record, record.members);
    // 12.5 / 5.5 = 2.27; the shipped Table 9 says 41 / 16 = 2.56 for full attention on ListOps.
    QVERIFY2(report.find("| attention=full | attention=full,layers=6,heads=8 | attention=full,layers=1,heads=48 | 12.50 | "
                         "5.50 | 2.27x | 2.56x")
                 != std::string::npos,
             report.c_str());
    QVERIFY2(report.find("## Beside the papers") != std::string::npos, report.c_str());
    // The paper's full 6-8 ListOps accuracy beside this study's (seeds at 31 % and 32 %).
    QVERIFY2(report.find("| attention=full,layers=6,heads=8 | Transformer, 6-8 | 35.7 ± 1.2 | 31.5 ± 0.7 |")
                 != std::string::npos,
             report.c_str());
}

// train.init_from's none ("") beside a run folder: the table shows "", not an empty cell.
void TestStudyCompare::anEmptyTextSettingIsShownQuoted()
{
    const std::vector<MemberResult> members = {member("init_from=", 1, {{"train.init_from", ""}}, 1.0),
                                               member("init_from=runs/a", 1, {{"train.init_from", "runs/a"}}, 1.0)};
    const std::string report = resultsMarkdown("", "accuracy", members);
    QVERIFY2(report.find("| \"\" | 1/1 |") != std::string::npos, report.c_str());
    QVERIFY2(report.find("| runs/a | 1/1 |") != std::string::npos, report.c_str());
}

// An axis with names is one column, titled by its label, holding the names; an axis without keeps a
// column per key. The report's paper and latency tables call points by the names too.
void TestStudyCompare::namedAxesAreShownByTheirNames()
{
    StudyRecord record = shapeStudy();
    record.document["axes"][1]["label"] = "shape";
    record.document["axes"][1]["names"] = {"deep", "middle", "wide"};
    const std::vector<StudyAxis> axes = parseStudyDocument(record.document.dump()).axes;
    QCOMPARE(pointLabel(axes, record.members[0].settings), std::string("attention=full, deep"));
    QCOMPARE(pointLabel(axes, record.members[5].settings), std::string("attention=local, wide"));
    QCOMPARE(pointLabel(axes, {{"model.attention", "full"}, {"model.layers", 3}, {"model.heads", 16}}), std::string());
    QCOMPARE(pointLabel(parseStudyDocument(shapeStudy().document.dump()).axes, record.members[0].settings),
             std::string());  // no names: the point's own text

    const std::string table = resultsMarkdown("", "accuracy", record.members, axes);
    QVERIFY2(table.find("| model.attention | shape | seeds |") != std::string::npos, table.c_str());
    QVERIFY2(table.find("| full | deep | 2/2 |") != std::string::npos, table.c_str());
    QVERIFY2(table.find("| local | middle | 2/2 |") != std::string::npos, table.c_str());
    QVERIFY2(table.find("model.heads") == std::string::npos, table.c_str());

    const std::string report = studyReport(record, record.members);
    QVERIFY2(report.find("| attention=full | attention=full, deep | attention=full, wide | 12.50 |") != std::string::npos,
             report.c_str());
    QVERIFY2(report.find("| attention=full, deep | Transformer, 6-8 | 35.7 ± 1.2 |") != std::string::npos, report.c_str());

    // With both axes named, the latency table's groups take the other axis's name too.
    record.document["axes"][0]["names"] = {"Full", "Local windows"};
    const std::string named = studyReport(record, record.members);
    QVERIFY2(named.find("| Local windows | Local windows, deep | Local windows, wide |") != std::string::npos,
             named.c_str());
    QVERIFY2(named.find("attention=local") == std::string::npos, named.c_str());
}

void TestStudyCompare::shippedFiguresAreThePapers()
{
    const std::vector<PaperFigure> figures = loadPaperFigures();
    QVERIFY(figures.size() >= 4);
    // The built-in aspect-ratio study against Table 4's Transformer row and Table 9's ListOps latency.
    const StudyDocument s = loadStudyDocument(resolveStudyPath("wide-attention-aspect-ratio"));
    StudyRecord record;
    record.document = s.toJson();
    for (const StudyMember& m : expandStudy(s))
        record.members.push_back({m.name, m.point, m.seed, m.settings, MemberStatus::Pending, {}, {}});
    const auto comparisons = paperComparisons(record, figures);
    const PaperComparison* accuracy = nullptr;
    const PaperComparison* latency = nullptr;
    for (const PaperComparison& c : comparisons) {
        if (c.measure == "test_accuracy" && c.source.find("Table 4") != std::string::npos)
            accuracy = &c;
        if (c.measure == "latency_ms")
            latency = &c;
    }
    QVERIFY(accuracy != nullptr);
    QCOMPARE(accuracy->points.size(), std::size_t{4});
    const double table4[4] = {0.357, 0.364, 0.367, 0.372};
    for (int i = 0; i < 4; ++i)
        QVERIFY(std::abs(accuracy->points[i].value - table4[i]) < 1e-12);
    QVERIFY(latency != nullptr);
    QCOMPARE(latency->points.size(), std::size_t{2});
    QCOMPARE(latency->points[0].value, 41.0);
    QCOMPARE(latency->points[1].value, 16.0);

    // WideNet's experts study: Table 2's MNLI column (82.6, 83.3, 84.1), and Table 3's
    // WideNet-B (4 experts) for its first point; never the Wide Attention paper's
    // Transformer, whose shape a WideNet of 6 blocks x 8 heads shares.
    const StudyDocument experts = loadStudyDocument(resolveStudyPath("widenet-experts"));
    StudyRecord widenet;
    widenet.document = experts.toJson();
    for (const StudyMember& m : expandStudy(experts))
        widenet.members.push_back({m.name, m.point, m.seed, m.settings, MemberStatus::Pending, {}, {}});
    const auto widenetComparisons = paperComparisons(widenet, figures);
    QCOMPARE(widenetComparisons.size(), std::size_t{2});
    for (const PaperComparison& c : widenetComparisons) {
        QVERIFY2(c.paper.find("Go Wider") != std::string::npos, c.paper.c_str());
        if (c.source.find("MNLI") != std::string::npos) {
            QCOMPARE(c.points.size(), std::size_t{3});
            QVERIFY(std::abs(c.points[0].value - 0.826) < 1e-12);
            QVERIFY(std::abs(c.points[2].value - 0.841) < 1e-12);
        } else {
            QCOMPARE(c.points.size(), std::size_t{1});
            QVERIFY(std::abs(c.points[0].value - 0.775) < 1e-12);
        }
    }

    // The Multi-Path paper's Table 4 (test BLEU), row by row beside the translation
    // ablation, and its 118M group of Table 2 beside the study of 4x1, 2x2, 1x4;
    // the ListOps study of paths against depth matches neither.
    auto comparisonsOf = [&](const std::string& name) {
        const StudyDocument document = loadStudyDocument(resolveStudyPath(name));
        StudyRecord record;
        record.document = document.toJson();
        for (const StudyMember& m : expandStudy(document))
            record.members.push_back({m.name, m.point, m.seed, m.settings, MemberStatus::Pending, {}, {}});
        return paperComparisons(record, figures);
    };
    const auto ablation = comparisonsOf("multipath-translation-ablation");
    QCOMPARE(ablation.size(), std::size_t{1});
    QCOMPARE(ablation[0].measure, std::string("test_bleu"));
    const std::vector<std::pair<std::string, double>> rows = {
        {"Baseline", 27.00}, {"+ Multi-Path", 28.87}, {"+ PathNorm", 28.72}, {"+ Learnable Weights", 29.13},
        {"+ More Features", 29.65}};
    QCOMPARE(ablation[0].points.size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        QCOMPARE(ablation[0].points[i].label.substr(0, rows[i].first.size()), rows[i].first);
        QCOMPARE(ablation[0].points[i].value, rows[i].second);
    }
    const auto depth = comparisonsOf("multipath-translation-deep-vs-paths");
    QCOMPARE(depth.size(), std::size_t{1});
    QCOMPARE(depth[0].points.size(), std::size_t{3});
    QCOMPARE(depth[0].points[0].value, 29.01);
    QCOMPARE(depth[0].points[1].value, 29.33);
    QCOMPARE(depth[0].points[2].value, 29.04);
    QVERIFY(comparisonsOf("multipath-paths-vs-depth").empty());

    // The mixed-attention study: Table 6's Mixed row (37.1 deepest, 38.0 widest)
    // beside its mixed models, Table 4's cells beside the eight single mechanisms.
    const auto mixed = comparisonsOf("wide-attention-mixed");
    const PaperComparison* table6 = fromTable(mixed, "Table 6");
    const PaperComparison* listops = fromTable(mixed, "Table 4");
    QVERIFY(table6 != nullptr && listops != nullptr);
    QCOMPARE(table6->points.size(), std::size_t{2});
    QVERIFY(std::abs(table6->points[0].value - 0.371) < 1e-12);
    QVERIFY(std::abs(table6->points[1].value - 0.380) < 1e-12);
    QVERIFY2(table6->points[0].point.find("mixed") != std::string::npos, table6->points[0].point.c_str());
    QCOMPARE(listops->points.size(), std::size_t{16});
}

void TestStudyCompare::shippedWideAttentionTablesCellByCell()
{
    // Typed from the paper (wide-attention-transformers.txt): Table 4's ListOps
    // columns (mean, spread) and Table 9's ListOps CPU latency (deep, wide).
    struct Row {
        const char* attention;
        double mean[4], spread[4], deepMs, wideMs;
    };
    const Row rows[] = {
        {"bigbird", {36.7, 37.0, 37.1, 37.3}, {0.2, 0.7, 0.2, 0.3}, 103, 30},
        {"linear", {37.1, 37.5, 37.3, 37.4}, {0.4, 0.4, 0.3, 0.5}, 33, 11},
        {"linformer", {29.9, 36.9, 36.7, 37.0}, {8.9, 0.3, 0.1, 0.1}, 39, 12},
        {"local", {36.8, 37.1, 37.2, 37.7}, {0.1, 0.1, 0.3, 0.2}, 33, 12},
        {"longformer", {36.8, 36.9, 36.9, 37.7}, {0.2, 0.3, 0.2, 0.2}, 149, 37},
        {"performer", {36.2, 34.1, 32.0, 36.6}, {0.1, 3.1, 6.4, 0.1}, 55, 35},
        {"sinkhorn", {19.4, 18.0, 17.9, 21.7}, {2.1, 0.2, 0.5, 3.8}, 59, 17},
        {"sparse", {37.0, 37.1, 37.6, 36.9}, {0.3, 0.1, 0.6, 0.0}, 47, 27},
        {"synthesizer", {36.5, 36.7, 32.9, 37.3}, {0.3, 0.2, 5.8, 0.1}, 130, 20},
        {"full", {35.7, 36.4, 36.7, 37.2}, {1.2, 0.3, 0.1, 0.2}, 41, 16},
    };
    const int shapes[4][2] = {{6, 8}, {3, 16}, {2, 24}, {1, 48}};
    // A study of every mechanism at every shape, on the default task (ListOps).
    StudyRecord record;
    record.document = nlohmann::json::parse(R"({"name": "all", "base": {"model": {"d_model": 96}}, "set": {},
        "axes": [{"key": "model.attention", "values": []}, {"keys": ["model.layers", "model.heads"], "values": []}]})");
    for (const Row& row : rows)
        for (const auto& shape : shapes) {
            const std::string point = std::string("attention=") + row.attention + ",layers=" + std::to_string(shape[0])
                                      + ",heads=" + std::to_string(shape[1]);
            record.members.push_back(member(point, 1, {{"model.attention", row.attention}, {"model.layers", shape[0]},
                                                       {"model.heads", shape[1]}}, 1.0));
        }
    const auto comparisons = paperComparisons(record, loadPaperFigures());
    const PaperComparison* accuracy = fromTable(comparisons, "Table 4");
    const PaperComparison* latency = fromTable(comparisons, "Table 9");
    QVERIFY(accuracy != nullptr && latency != nullptr);
    QCOMPARE(accuracy->points.size(), std::size_t{40});
    QCOMPARE(latency->points.size(), std::size_t{20});
    for (int r = 0; r < 10; ++r)
        for (int c = 0; c < 4; ++c) {
            const PaperPoint& p = accuracy->points[static_cast<std::size_t>(r * 4 + c)];
            QCOMPARE(p.point, record.members[static_cast<std::size_t>(r * 4 + c)].point);
            QVERIFY2(std::abs(p.value - rows[r].mean[c] / 100.0) < 1e-12, p.point.c_str());
            QVERIFY2(std::abs(p.spread - rows[r].spread[c] / 100.0) < 1e-12, p.point.c_str());
        }
    for (int r = 0; r < 10; ++r) {
        // Deep (6x8) then wide (1x48) of each mechanism.
        const PaperPoint& deep = latency->points[static_cast<std::size_t>(r * 2)];
        const PaperPoint& wide = latency->points[static_cast<std::size_t>(r * 2 + 1)];
        QCOMPARE(deep.point, record.members[static_cast<std::size_t>(r * 4)].point);
        QCOMPARE(wide.point, record.members[static_cast<std::size_t>(r * 4 + 3)].point);
        QCOMPARE(deep.value, rows[r].deepMs);
        QCOMPARE(wide.value, rows[r].wideMs);
    }
}

QTEST_GUILESS_MAIN(TestStudyCompare)
#include "tst_study_compare.moc"
