// Tests of run/RunStatus and RunStatusWriter: status.json written and read
// back, a missing or damaged file handled without a throw (with the file and the
// reason named), the writer's states, its rate limit and its last word when a
// run ends with an exception.
#include "run/RunStatus.h"
#include "run/RunStatusWriter.h"

#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <fstream>

#include <unistd.h>

using namespace widelab;

namespace {

void writeText(const std::filesystem::path& file, const std::string& text)
{
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
}

std::int64_t unixNow()
{
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

class TestRunStatus : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void writtenAndReadBack();
    void aMissingFileIsNoError();
    void aDamagedFileNamesTheReason_data();
    void aDamagedFileNamesTheReason();
    void theWriterWritesStatesAtOnceAndProgressRarely();
    void aRunLeftByAnExceptionIsFailed();
    void aReadOnlyWriterWritesNothing();
    void processesAreFoundByTheirId();

private:
    QTemporaryDir m_dir;
    std::filesystem::path m_run;
};

void TestRunStatus::init()
{
    QVERIFY(m_dir.isValid());
    m_run = std::filesystem::path(m_dir.path().toStdString()) / QTest::currentTestFunction();
    std::filesystem::create_directories(m_run);
}

void TestRunStatus::writtenAndReadBack()
{
    RunStatus status;
    status.host = "gpu-7";
    status.pid = 4242;
    status.state = RunState::Paused;
    status.step = 1200;
    status.totalSteps = 5000;
    status.updated = 1'790'000'000;
    writeRunStatus(m_run, status);
    std::string error = "untouched";
    const std::optional<RunStatus> read = readRunStatus(m_run, &error);
    QVERIFY2(read.has_value(), error.c_str());
    QCOMPARE(read->host, std::string("gpu-7"));
    QCOMPARE(read->pid, std::int64_t{4242});
    QVERIFY(read->state == RunState::Paused);
    QCOMPARE(read->step, std::int64_t{1200});
    QCOMPARE(read->totalSteps, std::int64_t{5000});
    QCOMPARE(read->updated, std::int64_t{1'790'000'000});
    QVERIFY(read->message.empty());
    // Atomic: no temporary file is left beside it.
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(m_run))
        files += entry.is_regular_file();
    QCOMPARE(files, 1);
    QVERIFY(!hasEnded(RunState::Training) && !hasEnded(RunState::Paused));
    QVERIFY(hasEnded(RunState::Finished) && hasEnded(RunState::Stopped) && hasEnded(RunState::Failed));
}

void TestRunStatus::aMissingFileIsNoError()
{
    std::string error = "untouched";
    QVERIFY(!readRunStatus(m_run, &error).has_value());
    QVERIFY2(error.empty(), error.c_str());
}

void TestRunStatus::aDamagedFileNamesTheReason_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("reason");
    QTest::newRow("empty") << "" << "not a JSON object";
    QTest::newRow("torn") << R"({"host":"a","pid":1,"sta)" << "not a JSON object";
    QTest::newRow("array") << "[1,2]" << "not a JSON object";
    QTest::newRow("no state") << R"({"host":"a","pid":1})" << "state is missing";
    QTest::newRow("unknown state") << R"({"state":"dreaming"})" << "\"dreaming\" is not training";
    QTest::newRow("pid text") << R"({"state":"training","pid":"12"})" << "pid is not an integer";
    QTest::newRow("host number") << R"({"state":"training","host":7})" << "host is not a string";
    QTest::newRow("binary") << QString::fromLatin1("\xff\xfe\x01") << "not a JSON object";
}

void TestRunStatus::aDamagedFileNamesTheReason()
{
    QFETCH(QString, text);
    QFETCH(QString, reason);
    writeText(m_run / "status.json", text.toLatin1().toStdString());
    std::string error;
    QVERIFY(!readRunStatus(m_run, &error).has_value());
    QVERIFY2(error.find((m_run / "status.json").string()) != std::string::npos, error.c_str());
    QVERIFY2(error.find(reason.toStdString()) != std::string::npos, error.c_str());
}

void TestRunStatus::theWriterWritesStatesAtOnceAndProgressRarely()
{
    const std::int64_t before = unixNow();
    RunStatusWriter writer(m_run, 500, std::chrono::hours(1));
    QVERIFY(!readRunStatus(m_run).has_value());  // nothing before training starts

    writer.training(100);
    std::optional<RunStatus> read = readRunStatus(m_run);
    QVERIFY(read.has_value());
    QVERIFY(read->state == RunState::Training);
    QCOMPARE(read->step, std::int64_t{100});
    QCOMPARE(read->totalSteps, std::int64_t{500});
    QCOMPARE(read->pid, std::int64_t{::getpid()});
    QCOMPARE(read->host, localHostName());
    QVERIFY(read->updated >= before && read->updated <= unixNow());

    writer.progress(110);  // within the hour: remembered, not written
    TrainingSnapshot snapshot;
    snapshot.step = 120;
    writer.onSnapshot(snapshot);
    QCOMPARE(readRunStatus(m_run)->step, std::int64_t{100});
    QCOMPARE(writer.status().step, std::int64_t{120});

    writer.paused(130);
    read = readRunStatus(m_run);
    QVERIFY(read->state == RunState::Paused);
    QCOMPARE(read->step, std::int64_t{130});
    writer.ended(RunState::Finished, 500, "completed 500 steps");
    read = readRunStatus(m_run);
    QVERIFY(read->state == RunState::Finished);
    QCOMPARE(read->step, std::int64_t{500});
    QCOMPARE(read->message, std::string("completed 500 steps"));
    writer.progress(501);  // after the end, progress writes nothing
    QCOMPARE(readRunStatus(m_run)->step, std::int64_t{500});

    RunStatusWriter often(m_run, 500, std::chrono::milliseconds(0));
    often.training(7);
    often.progress(8);
    QCOMPARE(readRunStatus(m_run)->step, std::int64_t{8});
    often.ended(RunState::Stopped, 8, "stopped at step 8");
}

void TestRunStatus::aRunLeftByAnExceptionIsFailed()
{
    {
        RunStatusWriter writer(m_run, 10);
        writer.training(3);
    }
    const std::optional<RunStatus> read = readRunStatus(m_run);
    QVERIFY(read.has_value());
    QVERIFY(read->state == RunState::Failed);
    QCOMPARE(read->step, std::int64_t{3});
    QVERIFY(!read->message.empty());

    // A writer that never trained leaves the file as it was.
    { RunStatusWriter unused(m_run, 10); }
    QVERIFY(readRunStatus(m_run)->state == RunState::Failed);
}

void TestRunStatus::aReadOnlyWriterWritesNothing()
{
    RunStatusWriter writer({}, 10);
    writer.training(1);
    writer.ended(RunState::Finished, 10, "done");
    QVERIFY(std::filesystem::is_empty(m_run));
}

void TestRunStatus::processesAreFoundByTheirId()
{
    QVERIFY(processExists(::getpid()));
    QVERIFY(!processExists(0));
    QVERIFY(!processExists(-5));
    QVERIFY(!processExists(std::int64_t{1} << 30));  // above any pid_max
}

QTEST_GUILESS_MAIN(TestRunStatus)
#include "tst_runstatus.moc"
