// Tests of the trainer's parts that live apart from its loop: the task registry
// (task/TaskData.h) against the schema's task kinds, and the observer that
// writes metrics.jsonl (train/MetricsWriter.h) on lines written by hand.
#include "TestSupport.h"
#include "config/ConfigSchema.h"
#include "task/TaskData.h"
#include "train/MetricsWriter.h"

#include <QtTest>

#include <algorithm>
#include <fstream>
#include <sstream>

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
};

// task.kind's choices are the enum's values in order (RunConfig.cpp's nameOf):
// each has exactly one registration, of its own kind.
void TestTasks::everyKindOfTheSchemaIsRegistered()
{
    const std::vector<std::string>& choices = keySpec("task.kind").choices;
    QCOMPARE(choices.size(), std::size_t(6));
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

QTEST_GUILESS_MAIN(TestTasks)
#include "tst_tasks.moc"
