// Tests of study/StudyDocument, StudyRunner and StudyResults: a study document's
// problems named with their key and reason, grid and paired expansion with the
// members' names, the fixed-parameter solver against the built model's own
// parameter count, a tiny study's results, stopping and continuing (a finished
// member is not trained again, a stopped one resumes), a failing member recorded
// while the others complete, and every built-in study validating.
#include "TestSupport.h"
#include "model/WideTransformer.h"
#include "study/BuiltinStudies.h"
#include "study/StudyDocument.h"
#include "study/StudyLayout.h"
#include "study/StudyResults.h"
#include "study/StudyRunner.h"
#include "run/RunDirectory.h"
#include "run/RunLayout.h"

#include <QScopeGuard>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <tuple>

using namespace widelab;

namespace {

// A tiny run on a tiny ListOps task: a few steps, a validation and checkpoint every 3.
const char* kTinyBase = R"({
    "model": {"vocab_size": 20, "max_len": 24, "d_model": 16, "layers": 1, "heads": 2, "ffn_dim": 32,
              "dropout": 0.0, "num_classes": 10},
    "task": {"kind": "listops", "min_length": 5, "max_length": 20, "train_size": 96, "validation_size": 16,
             "test_size": 16},
    "train": {"steps": 6, "batch_size": 8, "learning_rate": 0.003, "warmup_steps": 1, "log_every": 1,
              "eval_every": 3, "checkpoint_every": 3, "eval_batches": 0, "threads": 1, "device": "cpu"}})";

std::string study(const std::string& axes, const std::string& extra = "")
{
    return std::string(R"({"name": "tiny", "base": )") + kTinyBase + R"(, "axes": )" + axes + extra + "}";
}

std::string readText(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<std::string> lines(const std::string& text)
{
    std::vector<std::string> result;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        result.push_back(line);
    return result;
}

std::int64_t builtParameters(const nlohmann::json& document)
{
    const WideTransformer model(parseRunDocument(document.dump(), "", false).model);
    std::int64_t total = 0;
    for (const auto& p : model->parameters())
        total += p.numel();
    return total;
}

// Records what the runner reports; stops it when told to.
class Recorder : public StudyObserver {
public:
    StudyRunner* runner = nullptr;
    int stopAfterFinished = -1;      // stop once this many members have finished
    std::int64_t stopAtStep = -1;    // stop the first member to reach this step
    std::vector<std::string> started, skipped, finished;
    std::vector<bool> resumed;
    int stopped = 0;

    void onMemberStarted(std::size_t, const StudyMember& member, bool fromCheckpoint) override
    {
        started.push_back(member.name);
        resumed.push_back(fromCheckpoint);
    }
    void onMemberSkipped(std::size_t, const MemberResult& r) override { skipped.push_back(r.name); }
    void onMemberProgress(std::size_t, const TrainingSnapshot& s, std::int64_t) override
    {
        if (stopAtStep > 0 && s.step >= stopAtStep) {
            stopAtStep = -1;
            runner->requestStop();
        }
    }
    void onMemberFinished(std::size_t, const MemberResult& r) override
    {
        finished.push_back(r.name);
        if (stopAfterFinished > 0 && static_cast<int>(finished.size()) == stopAfterFinished)
            runner->requestStop();
    }
    void onMemberStopped(std::size_t, std::int64_t) override { ++stopped; }
};

}  // namespace

class TestStudy : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void validationNamesKeyAndReason_data();
    void validationNamesKeyAndReason();
    void gridExpansion();
    void pairedExpansion();
    void seedsOverride();
    void jobsTakeAGpuEach();
    void fixedParameterAxisKeepsStoredParameters();
    void meanAndSpread();
    void tinyStudyWritesResults();
    void stopAndContinue();
    void continuingAnotherStudyIsRefused();
    void failingMemberIsRecorded();
    void builtinStudiesValidate();
};

void TestStudy::validationNamesKeyAndReason_data()
{
    QTest::addColumn<QString>("document");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unknown key") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1]}])", R"(, "axis": 1)"))
                                 << "axis: unknown key (did you mean \"axes\"?)";
    QTest::newRow("no axes") << QString::fromStdString(std::string(R"({"base": )") + kTinyBase + "}")
                             << "axes: expected a non-empty array of axes";
    QTest::newRow("no base") << R"({"axes": [{"key": "model.layers", "values": [1]}]})" << "base: missing";
    QTest::newRow("unknown preset") << R"({"base": "no-such-preset", "axes": [{"key": "model.layers", "values": [1]}]})"
                                    << "base: no-such-preset: no such file";
    QTest::newRow("misspelt axis key") << QString::fromStdString(study(R"([{"key": "model.hedas", "values": [1]}])"))
                                       << "axes[0].key: \"model.hedas\" is not a key of a run document (did you mean \"model.heads\"?)";
    QTest::newRow("value the model refuses") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1]}, {"key": "model.heads", "values": [2, 7]}])"))
                                             << "axes[0] value 1, axes[1] value 7: model.";
    QTest::newRow("value out of range") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [0, 1]}])"))
                                        << "axes[0] value 0: model.layers: ";
    QTest::newRow("paired lengths") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1, 2]}, {"key": "model.ffn_dim", "values": [16, 32, 64]}])", R"(, "combine": "paired")"))
                                    << "axes[1].values: paired axes need as many values each: axes[0] has 2, axes[1] has 3";
    QTest::newRow("names") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1, 2], "names": ["shallow"]}])"))
                           << R"(axes[0].names: expected 2 names (non-empty strings), one per value, got ["shallow"])";
    QTest::newRow("combine") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1]}])", R"(, "combine": "zip")"))
                             << "combine: expected \"grid\"";
    QTest::newRow("keys and values") << QString::fromStdString(study(R"([{"keys": ["model.layers", "model.heads"], "values": [[1, 2], [2]]}])"))
                                     << "axes[0].values[1]: expected an array of 2 values, one per key, got [2]";
    QTest::newRow("seed axis") << QString::fromStdString(study(R"([{"key": "train.seed", "values": [1, 2]}])"))
                               << "axes[0].key: train.seed is what \"seeds\" varies";
    QTest::newRow("solve without keep") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1, 2], "solve": "model.d_model"}])"))
                                        << "axes[0]: \"solve\" needs \"keep\": \"parameters\"";
    QTest::newRow("solve a choice") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1, 2], "solve": "model.attention", "keep": "parameters"}])"))
                                    << "axes[0].solve: model.attention is not an integer key of the model";
    QTest::newRow("seeds") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1]}])", R"(, "seeds": 0)"))
                           << "seeds: 0 is outside 1..1000";
    QTest::newRow("metric") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1]}])", R"(, "report": {"metric": "f1"})"))
                            << "report.metric: expected \"accuracy\", \"loss\" or \"bleu\" (translation), got \"f1\"";
    QTest::newRow("twice varied") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1]}, {"keys": ["model.layers", "model.heads"], "values": [[1, 2]]}])"))
                                  << "axes[1]: model.layers is already varied by axes[0]";
    QTest::newRow("repeated value") << QString::fromStdString(study(R"([{"key": "model.layers", "values": [1, 1]}])"))
                                    << "axes[0].values: [1] appears twice";
}

void TestStudy::validationNamesKeyAndReason()
{
    QFETCH(QString, document);
    QFETCH(QString, expected);
    try {
        expandStudy(parseStudyDocument(document.toStdString(), "bad.json"));
        QFAIL("the document was accepted");
    } catch (const ConfigError& error) {
        const QString what = QString::fromStdString(error.what());
        QVERIFY2(what.contains(expected), qPrintable(what));
    }
}

void TestStudy::gridExpansion()
{
    const StudyDocument s = parseStudyDocument(
        study(R"([{"key": "model.layers", "values": [1, 2]}, {"keys": ["model.heads", "model.ffn_dim"], "values": [[1, 16], [2, 32], [4, 48]]}])",
              R"(, "seeds": 2)"));
    const std::vector<StudyMember> members = expandStudy(s);
    QCOMPARE(members.size(), std::size_t{12});  // 2 x 3 points x 2 seeds
    QCOMPARE(members[0].name, std::string("layers=1,heads=1,ffn_dim=16,seed=1"));
    QCOMPARE(members[1].name, std::string("layers=1,heads=2,ffn_dim=32,seed=1"));
    QCOMPARE(members[3].name, std::string("layers=2,heads=1,ffn_dim=16,seed=1"));
    QCOMPARE(members[6].name, std::string("layers=1,heads=1,ffn_dim=16,seed=2"));
    QCOMPARE(members[6].point, std::string("layers=1,heads=1,ffn_dim=16"));
    // A member opens under the study's name, whatever its base is called.
    QCOMPARE(members[3].document.at("name").get<std::string>(), std::string("tiny: layers=2,heads=1,ffn_dim=16,seed=1"));
    const StudyMember& m = members[5];
    QCOMPARE(m.document["model"]["layers"].get<int>(), 2);
    QCOMPARE(m.document["model"]["heads"].get<int>(), 4);
    QCOMPARE(m.document["model"]["ffn_dim"].get<int>(), 48);
    QCOMPARE(m.document["model"]["d_model"].get<int>(), 16);  // from the base
    QCOMPARE(members[7].document["train"]["seed"].get<int>(), 2);
    QCOMPARE(m.settings.size(), std::size_t{3});
}

void TestStudy::pairedExpansion()
{
    const StudyDocument s = parseStudyDocument(study(
        R"([{"key": "model.layers", "values": [1, 2, 3]}, {"key": "task.path", "values": ["a/b c.txt", "x", "y"]}])",
        R"(, "combine": "paired", "seeds": [7])"));
    const std::vector<StudyMember> members = expandStudy(s);
    QCOMPARE(members.size(), std::size_t{3});
    // Characters a directory name should not hold become '_'.
    QCOMPARE(members[0].name, std::string("layers=1,path=a_b_c.txt,seed=7"));
    QCOMPARE(members[2].name, std::string("layers=3,path=y,seed=7"));
    QCOMPARE(members[1].document["task"]["path"].get<std::string>(), std::string("x"));
}

void TestStudy::seedsOverride()
{
    const StudyDocument s = parseStudyDocument(study(R"([{"key": "model.layers", "values": [1, 2]}])", R"(, "seeds": [3, 5])"));
    StudyOverrides fewer;
    fewer.seeds = 1;
    fewer.steps = 4;
    const auto one = expandStudy(s, fewer);
    QCOMPARE(one.size(), std::size_t{2});
    QCOMPARE(one[0].seed, std::int64_t{3});
    QCOMPARE(one[0].document["train"]["steps"].get<int>(), 4);
    StudyOverrides more;
    more.seeds = 3;
    const auto three = expandStudy(s, more);
    QCOMPARE(three.size(), std::size_t{6});
    QCOMPARE(three.back().seed, std::int64_t{6});
}

namespace {

// The tiny base's stored parameters by hand, as a function of d_model D and layers
// L (V 20, P 24 positions and the CLS token, H 2 heads of D / 2, M 32, C 10 classes).
std::int64_t tinyStoredByHand(std::int64_t D, std::int64_t L)
{
    const std::int64_t V = 20, P = 24, M = 32, C = 10;
    return V * D + (P + 1) * D + D              // token, position, cls
           + L * ((3 * D * D + 3 * D) + (D * D + D))  // q, k, v and output projections
           + L * ((M * D + M) + (D * M + D))    // ffn
           + L * 4 * D + 2 * D                  // two LayerNorms a block, the final one
           + (C * D + C);                       // classifier
}

}  // namespace

void TestStudy::fixedParameterAxisKeepsStoredParameters()
{
    // Depth against width: the parameters of the base (1 layer, d_model 16) kept
    // for 2 and 3 layers by solving d_model. The counts are by hand, checked
    // against the built models' own (numel over their parameters), not the
    // accounting the solver uses.
    const std::string text = study(R"([{"key": "model.layers", "values": [2, 3], "solve": "model.d_model", "keep": "parameters"}])");
    const StudyDocument s = parseStudyDocument(text);
    const std::int64_t base = tinyStoredByHand(16, 1);
    QCOMPARE(base, std::int64_t{3162});
    QCOMPARE(builtParameters(s.base), base);
    const std::vector<StudyMember> members = expandStudy(s);
    QCOMPARE(members.size(), std::size_t{2});
    std::int64_t previousWidth = 16;
    for (const StudyMember& member : members) {
        const std::int64_t layers = member.document["model"]["layers"].get<std::int64_t>();
        const std::int64_t width = member.document["model"]["d_model"].get<std::int64_t>();
        QVERIFY2(width < previousWidth, "deeper members must be narrower to keep the count");
        previousWidth = width;
        const std::int64_t count = tinyStoredByHand(width, layers);
        QCOMPARE(builtParameters(member.document), count);
        // Stated tolerance: within 10% of the base (the width moves in steps of the 2 heads).
        QVERIFY2(std::llabs(count - base) <= base / 10,
                 qPrintable(QString("%1: %2 parameters against the base's %3").arg(QString::fromStdString(member.name)).arg(count).arg(base)));
        // And no other valid width (a multiple of the heads) comes closer.
        for (const std::int64_t other : {width - 2, width + 2})
            QVERIFY(std::llabs(tinyStoredByHand(other, layers) - base) >= std::llabs(count - base));
        QCOMPARE(member.settings.back().first, std::string("model.d_model"));
        QCOMPARE(member.settings.back().second.get<std::int64_t>(), width);
    }
}

void TestStudy::meanAndSpread()
{
    const auto [mean, spread] = widelab::meanAndSpread({1.0, 2.0, 6.0});
    QCOMPARE(mean, 3.0);
    QVERIFY(std::abs(spread - std::sqrt(7.0)) < 1e-12);  // ((4 + 1 + 9) / 2)^0.5
    QVERIFY(std::isnan(widelab::meanAndSpread({4.0}).second));
}

void TestStudy::tinyStudyWritesResults()
{
    QTemporaryDir dir;
    const std::filesystem::path out = dir.filePath("study").toStdString();
    const StudyDocument s = parseStudyDocument(study(R"([{"key": "model.layers", "values": [1, 2]}])", R"(, "seeds": 2)"));
    StudyRunner runner(s, out);
    const StudySummary summary = runner.run();
    QVERIFY(!summary.stopped);
    QCOMPARE(summary.completed, std::size_t{4});
    QCOMPARE(summary.failed, std::size_t{0});

    const std::vector<std::string> csv = lines(readText(studylayout::resultsFile(out)));
    QCOMPARE(csv.size(), std::size_t{5});  // header and 4 members
    QVERIFY(csv[0].rfind("member,seed,status,error,model.layers,steps,best_val_accuracy,", 0) == 0);
    for (const char* column : {"test_accuracy", "stored_parameters", "active_parameters", "flops_per_token",
                               "train_tokens_per_s", "latency_ms", "peak_memory_bytes", "wall_s"})
        QVERIFY2(csv[0].find(column) != std::string::npos, column);
    QCOMPARE(csv[1].substr(0, 31), std::string("\"layers=1,seed=1\",1,completed,,"));
    QCOMPARE(csv[4].substr(0, 31), std::string("\"layers=2,seed=2\",2,completed,,"));

    const StudyRecord record = readStudyRecord(out);
    const std::vector<MemberResult> results = readStudyResults(out, record);
    QCOMPARE(results.size(), std::size_t{4});
    for (const MemberResult& r : results) {
        QCOMPARE(toString(r.status), toString(MemberStatus::Completed));
        QCOMPARE(r.measures.at("steps"), 6.0);
        QVERIFY(r.measures.at("test_accuracy") >= 0.0 && r.measures.at("test_accuracy") <= 1.0);
        QVERIFY(r.measures.at("best_val_loss") <= r.measures.at("final_val_loss"));
        QVERIFY(r.measures.at("latency_ms") > 0.0);
        QVERIFY(r.measures.at("train_tokens_per_s") > 0.0);
        QVERIFY(r.measures.at("peak_memory_bytes") > 0.0);
        QVERIFY(r.measures.at("wall_s") > 0.0);
        // Every member is an ordinary run.
        const OpenedRun opened = openRun(studylayout::runDirectory(out, r.name), "best");
        QCOMPARE(opened.document.train.seed, r.seed);
    }
    const std::int64_t built1 = builtParameters(runner.members()[0].document);
    const std::int64_t built2 = builtParameters(runner.members()[1].document);
    QCOMPARE(results[0].measures.at("stored_parameters"), static_cast<double>(built1));
    QCOMPARE(results[1].measures.at("stored_parameters"), static_cast<double>(built2));

    const std::string report = readText(studylayout::reportFile(out));
    QVERIFY2(report.find("4 of 4 members done") != std::string::npos, report.c_str());
    QVERIFY(report.find("| model.layers | seeds |") != std::string::npos);
    const auto tableRows = std::count(report.begin(), report.end(), '\n');
    QVERIFY(tableRows >= 6);
    QVERIFY(report.find("| 1 | 2/2 |") != std::string::npos);
    QVERIFY(report.find("| 2 | 2/2 |") != std::string::npos);
    QVERIFY(report.find(" ± ") != std::string::npos);
}

void TestStudy::stopAndContinue()
{
    QTemporaryDir dir;
    const std::filesystem::path out = dir.filePath("study").toStdString();
    const StudyDocument s = parseStudyDocument(study(R"([{"key": "model.layers", "values": [1, 2, 3]}])"));
    std::string firstMetrics;
    {
        // Stopped once the first member has finished.
        StudyRunner runner(s, out);
        Recorder recorder;
        recorder.runner = &runner;
        recorder.stopAfterFinished = 1;
        runner.addObserver(&recorder);
        const StudySummary summary = runner.run();
        QVERIFY(summary.stopped);
        QCOMPARE(recorder.finished, std::vector<std::string>{"layers=1,seed=1"});
        firstMetrics = readText(runlayout::metricsFile(studylayout::runDirectory(out, "layers=1,seed=1")));
        QVERIFY(!firstMetrics.empty());
        QVERIFY(!std::filesystem::exists(studylayout::runDirectory(out, "layers=2,seed=1")));
        const std::string report = resultsMarkdown("", "accuracy", readStudyResults(out, readStudyRecord(out)));
        QVERIFY2(report.find("1 of 3 members done") != std::string::npos, report.c_str());
        // A ListOps study has no BLEU: its columns are left out.
        QVERIFY2(report.find("BLEU") == std::string::npos, report.c_str());
        QVERIFY2(report.find("best val acc %") != std::string::npos, report.c_str());
    }
    {
        // Stopped inside the second member, after its step 2.
        StudyRunner runner(s, out);
        Recorder recorder;
        recorder.runner = &runner;
        recorder.stopAtStep = 2;
        runner.addObserver(&recorder);
        const StudySummary summary = runner.run();
        QVERIFY(summary.stopped);
        QCOMPARE(recorder.skipped, std::vector<std::string>{"layers=1,seed=1"});
        QCOMPARE(recorder.started, std::vector<std::string>{"layers=2,seed=1"});
        QCOMPARE(recorder.stopped, 1);
        QVERIFY(recorder.finished.empty());
        const auto results = readStudyResults(out, readStudyRecord(out));
        QCOMPARE(toString(results[1].status), toString(MemberStatus::Stopped));
        QCOMPARE(toString(results[2].status), toString(MemberStatus::Pending));
    }
    {
        // Continued: the finished member is passed over, the stopped one resumes, the last starts.
        StudyRunner runner(s, out);
        Recorder recorder;
        recorder.runner = &runner;
        runner.addObserver(&recorder);
        const StudySummary summary = runner.run();
        QVERIFY(!summary.stopped);
        QCOMPARE(summary.completed, std::size_t{3});
        QCOMPARE(recorder.skipped, std::vector<std::string>{"layers=1,seed=1"});
        QCOMPARE(recorder.started, (std::vector<std::string>{"layers=2,seed=1", "layers=3,seed=1"}));
        QCOMPARE(recorder.resumed, (std::vector<bool>{true, false}));
        QCOMPARE(readText(runlayout::metricsFile(studylayout::runDirectory(out, "layers=1,seed=1"))), firstMetrics);
        const auto results = readStudyResults(out, readStudyRecord(out));
        for (const MemberResult& r : results) {
            QCOMPARE(toString(r.status), toString(MemberStatus::Completed));
            QCOMPARE(r.measures.at("steps"), 6.0);
        }
    }
}

void TestStudy::continuingAnotherStudyIsRefused()
{
    QTemporaryDir dir;
    const std::filesystem::path out = dir.filePath("study").toStdString();
    StudyOptions options;
    options.overrides.steps = 4;
    { StudyRunner runner(parseStudyDocument(study(R"([{"key": "model.layers", "values": [1, 2]}])")), out, options); }
    try {
        StudyRunner runner(parseStudyDocument(study(R"([{"key": "model.layers", "values": [1, 3]}])")), out, options);
        QFAIL("another document was accepted");
    } catch (const StudyRefused& error) {
        const QString what = error.what();
        QVERIFY2(what.contains("holds another study") && what.contains("axes"), qPrintable(what));
    }
    StudyOptions otherSteps;
    otherSteps.overrides.steps = 5;
    try {
        StudyRunner runner(parseStudyDocument(study(R"([{"key": "model.layers", "values": [1, 2]}])")), out, otherSteps);
        QFAIL("other steps were accepted");
    } catch (const StudyRefused& error) {
        const QString what = error.what();
        QVERIFY2(what.contains("--steps 4") && what.contains("--steps 5"), qPrintable(what));
    }
    // Words are not the study: another description, axis label or value names continue it.
    {
        StudyRunner reworded(parseStudyDocument(study(R"([{"key": "model.layers", "values": [1, 2], "label": "depth",
                                                           "names": ["shallow", "deep"]}])",
                                                      R"(, "description": "said otherwise")")),
                             out, options);
        QCOMPARE(reworded.members().size(), std::size_t{2});
    }
    // Without --steps, the recorded one is kept.
    StudyRunner same(recordedStudy(out), out);
    QCOMPARE(same.overrides().steps.value_or(-1), std::int64_t{4});
    QCOMPARE(same.members().front().document["train"]["steps"].get<int>(), 4);
    // While a runner has the directory, another is refused, whatever its document.
    try {
        StudyRunner second(recordedStudy(out), out);
        QFAIL("a second runner of the same directory was accepted");
    } catch (const StudyRefused& error) {
        const QString what = error.what();
        QVERIFY2(what.contains("running in another process"), qPrintable(what));
    }
}

void TestStudy::failingMemberIsRecorded()
{
    QTemporaryDir dir;
    const std::filesystem::path out = dir.filePath("study").toStdString();
    // A device that passes the document's check but is not on any machine.
    const StudyDocument s = parseStudyDocument(study(R"([{"key": "train.device", "values": ["cpu", "cuda:999"]}, {"key": "model.layers", "values": [1, 2]}])"));
    StudyRunner runner(s, out);
    const StudySummary summary = runner.run();
    QVERIFY(!summary.stopped);
    QCOMPARE(summary.completed, std::size_t{2});
    QCOMPARE(summary.failed, std::size_t{2});
    const auto results = readStudyResults(out, readStudyRecord(out));
    QCOMPARE(results.size(), std::size_t{4});
    for (const MemberResult& r : results) {
        const bool bad = r.name.find("cuda") != std::string::npos;
        QCOMPARE(toString(r.status), toString(bad ? MemberStatus::Failed : MemberStatus::Completed));
        if (bad)
            QVERIFY2(r.error.find("train.device") != std::string::npos || r.error.find("cuda") != std::string::npos, r.error.c_str());
    }
    const std::string csv = readText(studylayout::resultsFile(out));
    QVERIFY(csv.find(",failed,") != std::string::npos);
    const std::string report = readText(studylayout::reportFile(out));
    QVERIFY2(report.find("Failed members:") != std::string::npos, report.c_str());
    QVERIFY(report.find("(1 failed)") != std::string::npos);
}

void TestStudy::builtinStudiesValidate()
{
    const std::vector<std::string> names = listStudies();
    QVERIFY(names.size() >= 5);
    // The translation studies read ./web-sparv.tsv, as their base preset does: a
    // folder that has one (its pairs are not read here, only found).
    QTemporaryDir corpus;
    const std::filesystem::path folder = corpus.path().toStdString();
    std::ofstream(folder / "web-sparv.tsv") << "In the beginning.\tEn el principio.\n";
    // The fine-tuning study reads ./fortunes.tsv (the run it starts from is read when a member starts).
    std::ofstream(folder / "fortunes.tsv") << "work\tA day's work.\n";
    const std::filesystem::path before = std::filesystem::current_path();
    std::filesystem::current_path(corpus.path().toStdString());
    const auto back = qScopeGuard([&] { std::filesystem::current_path(before); });
    for (const std::string& name : names) {
        try {
            const StudyDocument s = loadStudyDocument(resolveStudyPath(name));
            QVERIFY2(!s.description.empty(), name.c_str());
            const std::vector<StudyMember> members = expandStudy(s);
            QVERIFY2(!members.empty(), name.c_str());
            for (const StudyMember& member : members)
                parseRunDocument(member.document.dump(), name + " " + member.name);
        } catch (const std::exception& error) {
            QFAIL(qPrintable(QString::fromStdString(name + ": " + error.what())));
        }
    }
    // The Multi-Path paper's Table 4, row after row, with a plain decoder as its systems have.
    const auto ablation = expandStudy(loadStudyDocument(resolveStudyPath("multipath-translation-ablation")));
    QCOMPARE(ablation.size(), std::size_t{5});
    const std::vector<std::tuple<int, std::string, bool, bool, bool>> rows = {
        {1, "inverse_sqrt_2n", false, false, false}, {3, "inverse_n", false, false, false},
        {3, "inverse_sqrt_n", true, false, false},   {3, "inverse_sqrt_2n", true, true, false},
        {3, "inverse_sqrt_2n", true, true, true}};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& model = ablation[i].document["model"];
        const auto& [paths, weight, norm, learnable, features] = rows[i];
        QCOMPARE(model["paths"].get<int>(), paths);
        QCOMPARE(model["path_weight"].get<std::string>(), weight);
        QCOMPARE(model["path_norm"].get<bool>(), norm);
        QCOMPARE(model["learnable_path_weights"].get<bool>(), learnable);
        QCOMPARE(model["path_extra_features"].get<bool>(), features);
        QCOMPARE(model["decoder_paths"].get<int>(), 1);
        QCOMPARE(ablation[i].document["task"]["kind"].get<std::string>(), std::string("translation"));
    }
    QCOMPARE(loadStudyDocument(resolveStudyPath("multipath-translation-ablation")).metric, std::string("bleu"));

    // The aspect-ratio study varies layers and heads at a product of 48, nothing else.
    const auto members = expandStudy(loadStudyDocument(resolveStudyPath("wide-attention-aspect-ratio")));
    QCOMPARE(members.size(), std::size_t{8});
    for (const StudyMember& member : members) {
        const auto& model = member.document["model"];
        QCOMPARE(model["layers"].get<int>() * model["heads"].get<int>(), 48);
        QCOMPARE(model["head_dim"].get<int>(), 16);
        QCOMPARE(model["d_model"].get<int>(), 128);
    }
}

void TestStudy::jobsTakeAGpuEach()
{
    // Three jobs on a machine with two GPUs: 0, 1, then 0 again.
    QCOMPARE(jobDevice("cuda", 0, 2), std::string("cuda:0"));
    QCOMPARE(jobDevice("auto", 1, 2), std::string("cuda:1"));
    QCOMPARE(jobDevice("cuda", 2, 2), std::string("cuda:0"));
    // A GPU named, the CPU, or one GPU or none: as asked.
    QCOMPARE(jobDevice("cuda:1", 0, 4), std::string("cuda:1"));
    QCOMPARE(jobDevice("cpu", 3, 4), std::string("cpu"));
    QCOMPARE(jobDevice("cuda", 3, 1), std::string("cuda"));
    QCOMPARE(jobDevice("auto", 3, 0), std::string("auto"));
}

QTEST_GUILESS_MAIN(TestStudy)
#include "tst_study.moc"
