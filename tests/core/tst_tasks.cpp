// Tests of the trainer's parts that live apart from its loop: the task registry
// (task/TaskData.h) against the schema's task kinds, and the observer that
// writes metrics.jsonl (run/MetricsWriter.h) on lines written by hand.
#include "TestSupport.h"
#include "config/ConfigSchema.h"
#include "task/TaskData.h"
#include "run/Checkpoint.h"
#include "run/MetricsWriter.h"

#include <QtTest>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <sstream>

#include <sys/resource.h>
#include <sys/stat.h>

using namespace widelab;

namespace {

std::string readAll(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void writeAll(const std::filesystem::path& file, const std::string& text)
{
    std::ofstream(file, std::ios::binary) << text;
}

EvaluationResult evaluationAt(std::int64_t step)
{
    EvaluationResult result;
    result.step = step;
    result.split = "validation";
    result.loss = 0.5;
    return result;
}

}  // namespace

class TestTasks : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyKindOfTheSchemaIsRegistered();
    void resumedWriterKeepsLinesUpToItsStep();
    void newRunWriterStartsAnEmptyFile();
    void provisionalSnapshotIsShownNotRecorded();
    void readOnlyWriterWritesNothing();
    void aLineThatCannotBeWrittenIsNamedAndLeavesNoTornLine();
    void aFileThatCannotBeWrittenIsNamedWithTheReason();
    void resumingCutsTheFileInPlaceWhenItKeepsTheLeadingLines();
};

// task.kind's choices are the enum's values in order (RunConfig.cpp's nameOf):
// each has exactly one registration, of its own kind.
void TestTasks::everyKindOfTheSchemaIsRegistered()
{
    const std::vector<std::string>& choices = keySpec("task.kind").choices;
    QCOMPARE(choices.size(), std::size_t(10));
    QCOMPARE(taskKinds().size(), choices.size());
    for (std::size_t i = 0; i < choices.size(); ++i) {
        const auto kind = static_cast<TaskKind>(i);
        QCOMPARE(static_cast<int>(findTask(kind).kind), static_cast<int>(kind));
        QCOMPARE(toString(kind), choices[i]);
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, findTask(static_cast<TaskKind>(choices.size())));
}

// Steps 10 and 20 were written, the run resumes from the checkpoint of step 10:
// the line of step 20 and a line torn by a kill go, a line without a step stays.
void TestTasks::resumedWriterKeepsLinesUpToItsStep()
{
    QTemporaryDir dir;
    const std::filesystem::path file = std::filesystem::path(dir.path().toStdString()) / "metrics.jsonl";
    writeAll(file, "{\"type\":\"train\",\"step\":10}\n"
                   "{\"type\":\"note\"}\n"
                   "{\"type\":\"train\",\"step\":20}\n"
                   "{\"type\":\"train\",\"st");
    {
        MetricsWriter writer(file, MetricsWriter::Start::Resumed, 10);
        QCOMPARE(readAll(file), std::string("{\"type\":\"train\",\"step\":10}\n{\"type\":\"note\"}\n"));
        writer.onEvaluation(evaluationAt(12));
    }
    const std::vector<std::string> lines = [&] {
        std::vector<std::string> all;
        std::istringstream in(readAll(file));
        for (std::string line; std::getline(in, line);)
            all.push_back(line);
        return all;
    }();
    QCOMPARE(lines.size(), std::size_t(3));
    const nlohmann::json appended = nlohmann::json::parse(lines[2]);
    QCOMPARE(appended.at("type").get<std::string>(), std::string("eval"));
    QCOMPARE(appended.at("step").get<std::int64_t>(), std::int64_t(12));
}

void TestTasks::newRunWriterStartsAnEmptyFile()
{
    QTemporaryDir dir;
    const std::filesystem::path file = std::filesystem::path(dir.path().toStdString()) / "metrics.jsonl";
    writeAll(file, "{\"type\":\"train\",\"step\":1}\n");
    MetricsWriter writer(file, MetricsWriter::Start::NewRun);
    QVERIFY(readAll(file).empty());
}

// A stopped run's last steps reach the curves but not the file: resumed, the run
// writes that interval's line once, at the step an uninterrupted run writes it.
void TestTasks::provisionalSnapshotIsShownNotRecorded()
{
    QTemporaryDir dir;
    const std::filesystem::path file = std::filesystem::path(dir.path().toStdString()) / "metrics.jsonl";
    MetricsWriter writer(file, MetricsWriter::Start::NewRun);
    TrainingSnapshot recorded;
    recorded.step = 10;
    TrainingSnapshot provisional;
    provisional.step = 13;
    provisional.provisional = true;
    writer.onSnapshot(recorded);
    writer.onSnapshot(provisional);
    const std::string text = readAll(file);
    QCOMPARE(std::count(text.begin(), text.end(), '\n'), 1L);
    QCOMPARE(nlohmann::json::parse(text).at("step").get<std::int64_t>(), std::int64_t(10));
}

void TestTasks::readOnlyWriterWritesNothing()
{
    QTemporaryDir dir;
    const std::filesystem::path file = std::filesystem::path(dir.path().toStdString()) / "metrics.jsonl";
    writeAll(file, "{\"type\":\"train\",\"step\":30}\n");
    MetricsWriter writer({}, MetricsWriter::Start::Resumed, 10);
    writer.onEvaluation(evaluationAt(10));
    QCOMPARE(readAll(file), std::string("{\"type\":\"train\",\"step\":30}\n"));
}

// The file system refuses part of a line (here a file size limit, EFBIG, as a
// full disk refuses with ENOSPC): the writer says which file and why, and the
// file keeps its whole lines only.
void TestTasks::aLineThatCannotBeWrittenIsNamedAndLeavesNoTornLine()
{
    QTemporaryDir dir;
    const std::filesystem::path file = std::filesystem::path(dir.path().toStdString()) / "metrics.jsonl";
    MetricsWriter writer(file, MetricsWriter::Start::NewRun);
    writer.onEvaluation(evaluationAt(10));
    const std::string before = readAll(file);
    QVERIFY(!before.empty());

    rlimit original{};
    QCOMPARE(getrlimit(RLIMIT_FSIZE, &original), 0);
    rlimit limited = original;
    limited.rlim_cur = static_cast<rlim_t>(before.size() + 10);  // room for 10 bytes of the next line
    const auto previous = std::signal(SIGXFSZ, SIG_IGN);          // a write past the limit fails instead
    QCOMPARE(setrlimit(RLIMIT_FSIZE, &limited), 0);
    std::string message;
    try {
        writer.onEvaluation(evaluationAt(20));
    } catch (const std::runtime_error& error) {
        message = error.what();
    }
    setrlimit(RLIMIT_FSIZE, &original);
    std::signal(SIGXFSZ, previous);
    QVERIFY2(message.find(file.string() + ": cannot append a line: ") == 0, message.c_str());
    QVERIFY2(message.find("(EFBIG)") != std::string::npos, message.c_str());
    QVERIFY2(message.find("resume") != std::string::npos, message.c_str());
    QCOMPARE(readAll(file), before);
    // Room again: the next line is whole.
    writer.onEvaluation(evaluationAt(30));
    const std::string after = readAll(file);
    QCOMPARE(std::count(after.begin(), after.end(), '\n'), 2L);
}

void TestTasks::aFileThatCannotBeWrittenIsNamedWithTheReason()
{
    QTemporaryDir dir;
    const std::filesystem::path missing = std::filesystem::path(dir.path().toStdString()) / "gone" / "config.json";
    try {
        writeFileAtomically(missing, "{}");
        QFAIL("written into a folder that does not exist");
    } catch (const CheckpointError& error) {
        QCOMPARE(std::string(error.what()), missing.string() + ": cannot write: No such file or directory (ENOENT)");
    }
    try {
        MetricsWriter writer(missing, MetricsWriter::Start::NewRun);
        QFAIL("opened in a folder that does not exist");
    } catch (const std::runtime_error& error) {
        QCOMPARE(std::string(error.what()),
                 missing.string() + ": cannot open for appending: No such file or directory (ENOENT)");
    }
}

// A run stopped by a full disk resumes on that disk: dropping the lines after
// the checkpoint cuts the file where it is (the same inode, no copy to make
// room for), unless a line to keep follows one to drop.
void TestTasks::resumingCutsTheFileInPlaceWhenItKeepsTheLeadingLines()
{
    QTemporaryDir dir;
    const std::filesystem::path file = std::filesystem::path(dir.path().toStdString()) / "metrics.jsonl";
    auto inode = [&] {
        struct stat status {};
        ::stat(file.c_str(), &status);
        return status.st_ino;
    };
    writeAll(file, "{\"type\":\"train\",\"step\":10}\n{\"type\":\"train\",\"step\":20}\n{\"type\":\"tr");
    const auto before = inode();
    { MetricsWriter writer(file, MetricsWriter::Start::Resumed, 10); }
    QCOMPARE(readAll(file), std::string("{\"type\":\"train\",\"step\":10}\n"));
    QCOMPARE(inode(), before);

    // A damaged line before one to keep: the file is rewritten without it.
    writeAll(file, "{\"type\":\"train\",\"step\":10}\nnot json\n{\"type\":\"note\"}\n");
    const auto rewritten = inode();
    { MetricsWriter writer(file, MetricsWriter::Start::Resumed, 10); }
    QCOMPARE(readAll(file), std::string("{\"type\":\"train\",\"step\":10}\n{\"type\":\"note\"}\n"));
    QVERIFY(inode() != rewritten);
}

QTEST_GUILESS_MAIN(TestTasks)
#include "tst_tasks.moc"
