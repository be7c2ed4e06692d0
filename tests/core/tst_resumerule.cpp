// Tests of run/RunLayout and run/ResumeRule: checkpoint names and the steps
// they stand for; the one rule deciding whether a start continues a run (a
// directory without checkpoints is a new run, the ignored keys keep the run, any
// other key refuses it, naming the key and both values); and how continuing with
// another length moves a cosine schedule. No training: run directories are made
// by hand (the rule reads config.json and checkpoint names, not checkpoints).
#include "TestSupport.h"
#include "run/ResumeRule.h"
#include "run/RunLayout.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <numbers>

using namespace widelab;
using widelab::test::tinyRun;

namespace {

void writeText(const std::filesystem::path& file, const std::string& text)
{
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
}

// A run directory as a trainer leaves it, as far as the rule looks: config.json
// and checkpoint files with these steps (empty: their names are what counts).
std::filesystem::path makeRun(const QTemporaryDir& dir, const std::string& name, const RunDocument& run,
                              const std::vector<std::string>& checkpointNames)
{
    const std::filesystem::path directory = std::filesystem::path(dir.path().toStdString()) / name;
    writeText(directory / "config.json", run.toJson().dump(2));
    std::filesystem::create_directories(directory / "checkpoints");
    for (const std::string& file : checkpointNames)
        writeText(directory / "checkpoints" / file, "");
    return directory;
}

}  // namespace

class TestResumeRule : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void checkpointNamesAndTheirSteps();
    void aDirectoryWithoutCheckpointsIsANewRun();
    void ignoredKeysContinueTheRun_data();
    void ignoredKeysContinueTheRun();
    void otherKeysRefuseNamingBothValues_data();
    void otherKeysRefuseNamingBothValues();
    void aBrokenConfigIsAnErrorNamingTheFile();
    void aLongerRunMovesOnlyACosineOrLinearSchedule();
};

void TestResumeRule::checkpointNamesAndTheirSteps()
{
    QCOMPARE(runlayout::checkpointFileName(12), std::string("step-00000012.pt"));
    QCOMPARE(runlayout::checkpointFileName(123456789), std::string("step-123456789.pt"));
    QCOMPARE(runlayout::checkpointFile("/r", 7), std::filesystem::path("/r/checkpoints/step-00000007.pt"));
    QCOMPARE(runlayout::bestCheckpointFile("/r"), std::filesystem::path("/r/checkpoints/best.pt"));
    QCOMPARE(runlayout::metricsFile("/r"), std::filesystem::path("/r/metrics.jsonl"));
    QCOMPARE(runlayout::stepOfCheckpoint("step-00000012.pt"), std::optional<std::int64_t>(12));
    QCOMPARE(runlayout::stepOfCheckpoint("step-123456789.pt"), std::optional<std::int64_t>(123456789));
    for (const char* other : {"best.pt", "step-12.pt", "step-0000001x.pt", "step-00000012.pt.unreadable",
                              "step-00000012.pt.tmp-99-1", "step-00000012.PT", "xstep-00000012.pt",
                              "step-0000000000000000001.pt"})
        QVERIFY2(!runlayout::stepOfCheckpoint(other), other);
}

void TestResumeRule::aDirectoryWithoutCheckpointsIsANewRun()
{
    QTemporaryDir dir;
    const std::filesystem::path run = makeRun(dir, "failed-early", tinyRun(), {"best.pt", "step-00000010.pt.unreadable"});
    const ResumeDecision decision = decideResume(run, tinyRun());
    QCOMPARE(decision.kind, ResumeKind::NewRun);
    QVERIFY2(decision.reason.find("no checkpoint") != std::string::npos, decision.reason.c_str());
    QCOMPARE(decideResume(std::filesystem::path(dir.path().toStdString()) / "nowhere", tinyRun()).kind,
             ResumeKind::NewRun);
}

void TestResumeRule::ignoredKeysContinueTheRun_data()
{
    QTest::addColumn<QString>("overrides");
    QTest::newRow("name") << R"({"name": "another name", "description": "and words"})";
    QTest::newRow("steps") << R"({"train": {"steps": 500}})";
    QTest::newRow("device") << R"({"train": {"device": "cpu"}})";
    QTest::newRow("threads") << R"({"train": {"threads": 3}})";
    QTest::newRow("probes") << R"({"train": {"probes": ["[MAX 1 2 ]"]}})";
    QTest::newRow("probe_every") << R"({"train": {"probe_every": 7}})";
}

void TestResumeRule::ignoredKeysContinueTheRun()
{
    QFETCH(QString, overrides);
    QTemporaryDir dir;
    const std::filesystem::path run =
        makeRun(dir, "run", tinyRun(), {"step-00000010.pt", "step-00000020.pt", "best.pt"});
    const ResumeDecision decision = decideResume(run, tinyRun(overrides.toStdString()));
    QCOMPARE(decision.kind, ResumeKind::Continue);
    QVERIFY(decision.differences.empty());
    QCOMPARE(decision.checkpointStep, std::int64_t{20});
}

void TestResumeRule::otherKeysRefuseNamingBothValues_data()
{
    QTest::addColumn<QString>("overrides");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("saved");
    QTest::addColumn<QString>("given");
    QTest::newRow("learning rate") << R"({"train": {"learning_rate": 0.01}})" << "train.learning_rate" << "0.003"
                                   << "0.01";
    QTest::newRow("dropout") << R"({"model": {"dropout": 0.2}})" << "model.dropout" << "0.1" << "0.2";
    QTest::newRow("data") << R"({"task": {"train_size": 512}})" << "task.train_size" << "256" << "512";
    QTest::newRow("log interval") << R"({"train": {"log_every": 2}})" << "train.log_every" << "1" << "2";
}

void TestResumeRule::otherKeysRefuseNamingBothValues()
{
    QFETCH(QString, overrides);
    QFETCH(QString, key);
    QFETCH(QString, saved);
    QFETCH(QString, given);
    QTemporaryDir dir;
    const std::filesystem::path run = makeRun(dir, "run", tinyRun(), {"step-00000010.pt"});
    const ResumeDecision decision = decideResume(run, tinyRun(overrides.toStdString()));
    QCOMPARE(decision.kind, ResumeKind::Refused);
    QCOMPARE(decision.differences.size(), std::size_t{1});
    QCOMPARE(QString::fromStdString(decision.differences[0].key), key);
    const std::string reason = decision.differences[0].reason;
    QVERIFY2(reason.find("configured with " + saved.toStdString()) != std::string::npos, reason.c_str());
    QVERIFY2(reason.find("has " + given.toStdString()) != std::string::npos, reason.c_str());
}

void TestResumeRule::aBrokenConfigIsAnErrorNamingTheFile()
{
    QTemporaryDir dir;
    const std::filesystem::path run = makeRun(dir, "run", tinyRun(), {"step-00000010.pt"});
    writeText(run / "config.json", "{\"model\": ");
    try {
        decideResume(run, tinyRun());
        QFAIL("a broken config.json was read");
    } catch (const std::exception& error) {
        QVERIFY2(std::string(error.what()).find("config.json") != std::string::npos, error.what());
    }
}

void TestResumeRule::aLongerRunMovesOnlyACosineOrLinearSchedule()
{
    // warmup 5, peak 0.003, no floor: over 20 steps the cosine has reached 0 at step 20;
    // over 24 it is at 0.5 * (1 + cos(pi * 15/19)) of the peak there.
    const RunDocument longer = tinyRun(R"({"train": {"steps": 24}})");
    const auto change = scheduleChange(longer.train, 20, 20);
    QVERIFY(change);
    QCOMPARE(change->savedSteps, std::int64_t{20});
    QCOMPARE(change->steps, std::int64_t{24});
    QVERIFY(std::abs(change->savedRate) < 1e-12);
    const double expected = 0.003 * 0.5 * (1.0 + std::cos(std::numbers::pi * 15.0 / 19.0));
    QVERIFY2(std::abs(change->rate - expected) < 1e-12, std::to_string(change->rate).c_str());
    QVERIFY2(change->text().find("spans 24 steps instead of 20") != std::string::npos, change->text().c_str());
    QVERIFY(!scheduleChange(longer.train, 20, 24));  // the same length
    // The linear decay spans the run too: over 24 steps it is at 1 - 15/19 of the peak at step 20.
    const RunDocument linear = tinyRun(R"({"train": {"steps": 24, "schedule": "warmup_linear"}})");
    const auto linearChange = scheduleChange(linear.train, 20, 20);
    QVERIFY(linearChange);
    QVERIFY(std::abs(linearChange->savedRate) < 1e-12);
    QVERIFY2(std::abs(linearChange->rate - 0.003 * (1.0 - 15.0 / 19.0)) < 1e-12, std::to_string(linearChange->rate).c_str());
    for (const char* kind : {"constant", "inverse_sqrt", "warmup_rsqrt"}) {
        const RunDocument other = tinyRun(std::string(R"({"train": {"steps": 24, "schedule": ")") + kind + "\"}}");
        QVERIFY2(!scheduleChange(other.train, 20, 20), kind);
    }
}

QTEST_GUILESS_MAIN(TestResumeRule)
#include "tst_resumerule.moc"
