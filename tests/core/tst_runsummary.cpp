// Tests of run/RunNotes and run/RunSummary: the user's name, tags and note kept
// in notes.json (and refused with the file named when damaged), a run's state
// from its status, and what a list of runs reads of each run: the last train
// line, the best validations, reading on after new lines, afresh after a rewrite.
#include "run/RunNotes.h"
#include "run/RunSummary.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include <unistd.h>

using namespace widelab;

namespace {

void writeText(const std::filesystem::path& file, const std::string& text, bool append = false)
{
    std::ofstream out(file, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
    out << text;
}

std::string trainLine(int step, double tokensPerSecond)
{
    return R"({"type":"train","step":)" + std::to_string(step) + R"(,"loss":2.5,"tokens_per_second":)"
           + std::to_string(tokensPerSecond) + "}\n";
}

std::string evalLine(int step, double loss, double accuracy, const char* split = "validation")
{
    return R"({"type":"eval","step":)" + std::to_string(step) + R"(,"split":")" + split + R"(","loss":)"
           + std::to_string(loss) + R"(,"accuracy":)" + std::to_string(accuracy) + "}\n";
}

}  // namespace

class TestRunSummary : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void notesAreWrittenAndReadBack();
    void emptyNotesRemoveTheFile();
    void tagsAreTrimmedWithoutRepeats();
    void damagedNotesNameTheFileAndReason_data();
    void damagedNotesNameTheFileAndReason();
    void activityFollowsTheStatus();
    void theSummaryReadsTheLastTrainLineAndTheBestValidations();
    void aLineStillBeingWrittenWaitsForTheNextSummary();
    void aRewrittenFileIsReadAfresh();
    void aProbeTextSayingTrainIsNoTrainLine();
    void aRunWithoutFilesStillHasASummary();
    void runDirectoriesAreThoseWithAConfiguration();

private:
    QTemporaryDir m_dir;
    std::filesystem::path m_run;
};

void TestRunSummary::init()
{
    QVERIFY(m_dir.isValid());
    m_run = std::filesystem::path(m_dir.path().toStdString()) / QTest::currentTestFunction();
    std::filesystem::create_directories(m_run);
    writeText(m_run / "config.json", R"({"model":{"layers":2},"train":{"steps":100}})");
}

void TestRunSummary::notesAreWrittenAndReadBack()
{
    const RunNotes notes{"baseline", {"paper", "seed 1"}, "first try\nlr too high?"};
    writeRunNotes(m_run, notes);
    std::string error;
    QCOMPARE(readRunNotes(m_run, &error), notes);
    QCOMPARE(error, std::string());
    QCOMPARE(summariseRun(m_run).name(), std::string("baseline"));
}

void TestRunSummary::emptyNotesRemoveTheFile()
{
    writeRunNotes(m_run, RunNotes{"x", {}, {}});
    QVERIFY(std::filesystem::exists(m_run / "notes.json"));
    writeRunNotes(m_run, RunNotes{"  ", {" "}, {}});  // nothing left once trimmed
    QVERIFY(!std::filesystem::exists(m_run / "notes.json"));
    QCOMPARE(summariseRun(m_run).name(), std::string("emptyNotesRemoveTheFile"));  // the directory's name
}

void TestRunSummary::tagsAreTrimmedWithoutRepeats()
{
    QCOMPARE(parseTags(" a, b,,a ,c d"), (std::vector<std::string>{"a", "b", "c d"}));
    QCOMPARE(parseTags(""), std::vector<std::string>());
    writeRunNotes(m_run, RunNotes{" n ", {"x ", "x", " y"}, {}});
    QCOMPARE(readRunNotes(m_run), (RunNotes{"n", {"x", "y"}, {}}));
}

void TestRunSummary::damagedNotesNameTheFileAndReason_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("reason");
    QTest::newRow("not JSON") << "{\"name\": " << "";
    QTest::newRow("an array") << "[1]" << "not a JSON object";
    QTest::newRow("a numeric name") << R"({"name": 3})" << "\"name\" is not a string";
    QTest::newRow("tags not strings") << R"({"tags": ["a", 1]})" << "\"tags\" is not a list of strings";
    QTest::newRow("tags a string") << R"({"tags": "a"})" << "\"tags\" is not a list of strings";
}

void TestRunSummary::damagedNotesNameTheFileAndReason()
{
    QFETCH(QString, text);
    QFETCH(QString, reason);
    writeText(m_run / "notes.json", text.toStdString());
    std::string error;
    QCOMPARE(readRunNotes(m_run, &error), RunNotes());
    QVERIFY2(error.starts_with((m_run / "notes.json").string() + ": "), error.c_str());
    QVERIFY2(error.ends_with(reason.toStdString()), error.c_str());
    const RunSummary summary = summariseRun(m_run);
    QCOMPARE(summary.notesError, error);
    QCOMPARE(summary.name(), std::string("damagedNotesNameTheFileAndReason"));
}

void TestRunSummary::activityFollowsTheStatus()
{
    RunStatus status;
    status.host = "elsewhere";
    status.pid = 1;
    status.state = RunState::Training;
    QCOMPARE(toString(runActivity(status, "here", 10, 120)), std::string("training"));
    QCOMPARE(toString(runActivity(status, "here", 121, 120)), std::string("stale"));
    status.state = RunState::Paused;  // a paused trainer writes nothing: never stale
    QCOMPARE(toString(runActivity(status, "here", 1000, 120)), std::string("paused"));
    status.state = RunState::Failed;
    QCOMPARE(toString(runActivity(status, "here", 1000, 120)), std::string("failed"));
    QCOMPARE(toString(RunActivity::Unknown), std::string());
    // On this machine: this process exists, a process id past any real one does not.
    status = RunStatus{"here", getpid(), RunState::Training, 0, 0, 0, ""};
    QCOMPARE(toString(runActivity(status, "here", 0, 120)), std::string("training"));
    status.pid = 0x3fffffff;
    QCOMPARE(toString(runActivity(status, "here", 0, 120)), std::string("interrupted"));
    status.state = RunState::Finished;
    QCOMPARE(toString(runActivity(status, "here", 0, 120)), std::string("finished"));
}

void TestRunSummary::theSummaryReadsTheLastTrainLineAndTheBestValidations()
{
    writeText(m_run / "metrics.jsonl", trainLine(10, 1000) + evalLine(10, 2.0, 0.40) + trainLine(20, 1500)
                                           + evalLine(20, 1.5, 0.35) + evalLine(20, 0.1, 0.99, "test")
                                           + evalLine(30, 1.7, 0.55) + trainLine(30, 1200));
    writeRunStatus(m_run, RunStatus{"elsewhere", 1, RunState::Finished, 30, 100, 0, ""});
    const RunSummary summary = summariseRun(m_run);
    QCOMPARE(summary.step, std::int64_t{30});
    QCOMPARE(summary.totalSteps, std::int64_t{100});
    QCOMPARE(summary.tokensPerSecond.value_or(-1), 1200.0);
    // The lowest loss and the highest accuracy, each over validations only (the test split's are left out).
    QCOMPARE(summary.best.loss.value_or(-1), 1.5);
    QCOMPARE(summary.best.accuracy.value_or(-1), 0.55);
    QVERIFY(!summary.best.bleu);
    QCOMPARE(summary.config["train"]["steps"].get<int>(), 100);
    QVERIFY(summary.status && summary.status->state == RunState::Finished);
    QVERIFY(summary.updated > 0);
}

void TestRunSummary::aLineStillBeingWrittenWaitsForTheNextSummary()
{
    const std::filesystem::path metrics = m_run / "metrics.jsonl";
    writeText(metrics, trainLine(10, 1000) + R"({"type":"eval","step":10,"split":"validation","loss":0.5)");
    const RunSummary first = summariseRun(m_run);
    QCOMPARE(first.step, std::int64_t{10});
    QVERIFY(!first.best.loss);  // half a line: not yet
    writeText(metrics, R"(,"accuracy":0.9})" "\n" + trainLine(20, 2000), true);
    const RunSummary second = summariseRun(m_run, &first);
    QCOMPARE(second.best.loss.value_or(-1), 0.5);
    QCOMPARE(second.best.accuracy.value_or(-1), 0.9);
    QCOMPARE(second.step, std::int64_t{20});
    QCOMPARE(second.tokensPerSecond.value_or(-1), 2000.0);
    QCOMPARE(second.metricsOffset, static_cast<std::uint64_t>(std::filesystem::file_size(metrics)));
}

void TestRunSummary::aRewrittenFileIsReadAfresh()
{
    const std::filesystem::path metrics = m_run / "metrics.jsonl";
    writeText(metrics, trainLine(10, 1000) + evalLine(10, 0.5, 0.9) + trainLine(20, 1000));
    const RunSummary first = summariseRun(m_run);
    QCOMPARE(first.best.loss.value_or(-1), 0.5);
    // A resume from step 5 rewrites the file shorter: the validation at 10 is gone.
    writeText(metrics, trainLine(5, 800));
    const RunSummary second = summariseRun(m_run, &first);
    QVERIFY(!second.best.loss);
    QCOMPARE(second.step, std::int64_t{5});
    QCOMPARE(second.tokensPerSecond.value_or(-1), 800.0);
}

void TestRunSummary::aProbeTextSayingTrainIsNoTrainLine()
{
    writeText(m_run / "metrics.jsonl",
              trainLine(10, 1000) + R"({"type":"probe","step":10,"text":"\"train\" is a word"})" "\n");
    const RunSummary summary = summariseRun(m_run);
    QCOMPARE(summary.step, std::int64_t{10});
    QCOMPARE(summary.tokensPerSecond.value_or(-1), 1000.0);
}

void TestRunSummary::aRunWithoutFilesStillHasASummary()
{
    const std::filesystem::path empty = m_run / "empty";
    std::filesystem::create_directories(empty);
    const RunSummary summary = summariseRun(empty);
    QVERIFY(summary.config.is_null());
    QVERIFY2(summary.configError.starts_with((empty / "config.json").string() + ": "), summary.configError.c_str());
    QVERIFY(!summary.status);
    QCOMPARE(summary.step, std::int64_t{0});
    QVERIFY(!summary.tokensPerSecond);
}

void TestRunSummary::runDirectoriesAreThoseWithAConfiguration()
{
    std::filesystem::create_directories(m_run / "b");
    std::filesystem::create_directories(m_run / "a");
    std::filesystem::create_directories(m_run / "not-a-run");
    writeText(m_run / "b" / "config.json", "{}");
    writeText(m_run / "a" / "config.json", "{}");
    writeText(m_run / "file.json", "{}");
    QCOMPARE(runDirectories(m_run), (std::vector<std::filesystem::path>{m_run / "a", m_run / "b"}));
    QCOMPARE(runDirectories(m_run / "missing"), std::vector<std::filesystem::path>());
}

QTEST_GUILESS_MAIN(TestRunSummary)
#include "tst_runsummary.moc"
