// Tests of run/CheckpointAverage: the last N step checkpoints' weights averaged
// into checkpoints/average-last-N.pt, a checkpoint as any other (its checksum,
// loadCheckpoint, CheckpointDirectory by name) holding the newest's state,
// integer buffers and optimiser state; never a step checkpoint to "latest",
// keep_last or resuming; and what cannot be averaged, each an error naming it.
#include "TestSupport.h"
#include "run/CheckpointAverage.h"
#include "run/CheckpointDirectory.h"
#include "run/ResumeRule.h"
#include "run/RunDirectory.h"
#include "run/RunLayout.h"
#include "train/Optimizers.h"

#include <QtTest>

using namespace widelab;

namespace {

using StepValues = std::vector<std::pair<std::int64_t, double>>;

// Every floating-point tensor of `model` filled with `value`, every integer buffer with `index`.
void fill(WideTransformerImpl& model, double value, std::int64_t index)
{
    torch::NoGradGuard noGrad;
    for (const auto& item : model.named_parameters())
        item.value().fill_(value);
    for (const auto& item : model.named_buffers())
        item.value().fill_(item.value().is_floating_point() ? value : static_cast<double>(index));
}

// A run folder, DIR/run, with `document` as its config.json and a step checkpoint
// at each step of `checkpoints`, the i-th filled with its value and integer
// buffers with 7 i; the optimiser has taken one step before the last is saved.
std::filesystem::path writeRun(const QTemporaryDir& dir, const RunDocument& document, const StepValues& checkpoints)
{
    const std::filesystem::path run = std::filesystem::path(dir.path().toStdString()) / "run";
    std::filesystem::create_directories(runlayout::checkpointsDirectory(run));
    writeFileAtomically(runlayout::configFile(run), document.toJson().dump(2) + "\n");
    WideTransformer model(document.model);
    const auto optimizer = makeOptimizer(document.train, *model);
    for (std::size_t i = 0; i < checkpoints.size(); ++i) {
        const auto [step, value] = checkpoints[i];
        if (i + 1 == checkpoints.size()) {
            for (const torch::Tensor& p : model->parameters())
                p.mutable_grad() = torch::ones_like(p);
            optimizer->step();
        }
        fill(*model, value, 7 * static_cast<std::int64_t>(i));
        saveCheckpoint(runlayout::checkpointFile(run, step), *model, *optimizer, test::stateAt(step, 16 * step));
    }
    return run;
}

using test::thrownMessage;

}  // namespace

class TestCheckpointAverage : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void averagesTheLastCheckpoints_data();
    void averagesTheLastCheckpoints();
    void theAverageIsNeverAStepCheckpoint();
    void whatCannotBeAveragedIsAnError();
};

void TestCheckpointAverage::averagesTheLastCheckpoints_data()
{
    QTest::addColumn<QString>("model");
    QTest::newRow("dense") << "{}";
    QTest::newRow("BigBird: an integer buffer (its random blocks)") << R"({"attention": "bigbird"})";
}

void TestCheckpointAverage::averagesTheLastCheckpoints()
{
    QFETCH(QString, model);
    QTemporaryDir dir;
    const RunDocument document = test::tinyRun(R"({"model": )" + model.toStdString() + "}");
    // Step 5 (100) is older than the last three: (1 + 2 + 6) / 3 = 3.
    const std::filesystem::path run = writeRun(dir, document, {{5, 100.0}, {10, 1.0}, {20, 2.0}, {30, 6.0}});
    const CheckpointAverage average = averageCheckpoints(run, 3);
    QCOMPARE(average.file, runlayout::checkpointsDirectory(run) / "average-last-3.pt");
    QCOMPARE(average.averaged, (std::vector<std::filesystem::path>{runlayout::checkpointFile(run, 10),
                                                                    runlayout::checkpointFile(run, 20),
                                                                    runlayout::checkpointFile(run, 30)}));
    QCOMPARE(average.state.step, std::int64_t{30});
    QVERIFY(!checkpointIntegrity(average.file).has_value());  // saveCheckpoint's format and checksum

    WideTransformer loaded(document.model);
    const auto optimizer = makeOptimizer(document.train, *loaded);
    const CheckpointState state = loadCheckpoint(average.file, *loaded, optimizer.get());
    QCOMPARE(state.step, std::int64_t{30});
    QCOMPARE(state.samplerPosition, std::int64_t{480});
    QVERIFY(state.verified);
    QVERIFY(!optimizer->state().empty());  // the newest's, which had taken a step
    bool integerBuffer = false;
    for (const auto& item : loaded->named_parameters())
        QVERIFY2(torch::equal(item.value(), torch::full_like(item.value(), 3.0)), item.key().c_str());
    for (const auto& item : loaded->named_buffers()) {
        const bool floating = item.value().is_floating_point();
        integerBuffer = integerBuffer || !floating;
        // Integer buffers are the newest's, the fourth checkpoint's: 7 x 3.
        QVERIFY2(torch::equal(item.value(), torch::full_like(item.value(), floating ? 3.0 : 21.0)), item.key().c_str());
    }
    QCOMPARE(integerBuffer, model.contains("bigbird"));

    // By name, as eval --checkpoint average-last-3.pt loads it.
    WideTransformer named(document.model);
    CheckpointDirectory checkpoints(run, /*mayWrite=*/false);
    const LoadedCheckpoint byName = checkpoints.load("average-last-3.pt", *named, nullptr, [](const std::string&) {});
    QCOMPARE(byName.state.step, std::int64_t{30});
    QVERIFY(torch::equal(named->parameters().front(), torch::full_like(named->parameters().front(), 3.0)));

    // Averaging again replaces it; one checkpoint averages to itself.
    QCOMPARE(averageCheckpoints(run, 3).file, average.file);
    const CheckpointAverage one = averageCheckpoints(run, 1);
    loadCheckpoint(one.file, *named, nullptr);
    QVERIFY(torch::equal(named->parameters().front(), torch::full_like(named->parameters().front(), 6.0)));
}

void TestCheckpointAverage::theAverageIsNeverAStepCheckpoint()
{
    QTemporaryDir dir;
    const RunDocument document = test::tinyRun();
    const std::filesystem::path run = writeRun(dir, document, {{10, 1.0}, {20, 2.0}, {30, 6.0}});
    const std::filesystem::path file = averageCheckpoints(run, 2).file;
    QVERIFY(!runlayout::stepOfCheckpoint(file.filename().string()).has_value());
    QCOMPARE(latestCheckpoint(run).value(), runlayout::checkpointFile(run, 30));
    QCOMPARE(decideResume(run, document).checkpointStep, std::int64_t{30});
    CheckpointDirectory checkpoints(run, /*mayWrite=*/true);
    QCOMPARE(checkpoints.stepFiles().size(), std::size_t{3});
    WideTransformer model(document.model);
    QCOMPARE(checkpoints.load("latest", *model, nullptr, [](const std::string&) {}).file,
             runlayout::checkpointFile(run, 30));
    // keep_last 1 deletes the older step files only.
    const auto removed = checkpoints.prune(1, [](const std::string& text) { QFAIL(text.c_str()); });
    QCOMPARE(removed, (std::vector<std::filesystem::path>{runlayout::checkpointFile(run, 20),
                                                           runlayout::checkpointFile(run, 10)}));
    QVERIFY(std::filesystem::exists(file));
    QVERIFY(checkpoints.removeOrphans().empty());
    QVERIFY(std::filesystem::exists(file));
}

void TestCheckpointAverage::whatCannotBeAveragedIsAnError()
{
    QTemporaryDir dir;
    const RunDocument document = test::tinyRun();
    const std::filesystem::path run = writeRun(dir, document, {{10, 1.0}, {20, 2.0}, {30, 6.0}, {40, 3.0}});
    const QString folder = QString::fromStdString(run.string());
    const std::filesystem::path average = runlayout::checkpointsDirectory(run) / "average-last-3.pt";

    QCOMPARE(thrownMessage([&] { averageCheckpoints(run, 5); }),
             folder + " has 4 step checkpoints, fewer than the 5 to average; --last 4 averages those");
    QVERIFY(thrownMessage([&] { averageCheckpoints(run, 0); }).contains("At least 1"));

    test::flipMiddleByte(runlayout::checkpointFile(run, 20));
    const QString damaged = thrownMessage([&] { averageCheckpoints(run, 3); });
    QVERIFY2(damaged.startsWith(QString::fromStdString(runlayout::checkpointFile(run, 20).string()) + ": damaged"),
             qPrintable(damaged));
    QVERIFY(!std::filesystem::exists(average));
    QCOMPARE(averageCheckpoints(run, 2).averaged.size(), std::size_t{2});  // past it, the last two average

    // A checkpoint of another architecture than the run's config.json.
    WideTransformer other(test::tinyRun(R"({"model": {"d_model": 16}})").model);
    torch::optim::SGD sgd(other->parameters(), torch::optim::SGDOptions(0.1));
    saveCheckpoint(runlayout::checkpointFile(run, 50), *other, sgd, test::stateAt(50));
    const QString foreign = thrownMessage([&] { averageCheckpoints(run, 2); });
    QVERIFY2(foreign.startsWith(QString::fromStdString(runlayout::checkpointFile(run, 50).string())
                                + ": a checkpoint of another architecture: model.d_model (checkpoint 16, now 32)"),
             qPrintable(foreign));

    QTemporaryDir empty;
    const std::filesystem::path bare = writeRun(empty, document, {});
    QCOMPARE(thrownMessage([&] { averageCheckpoints(bare, 2); }),
             QString::fromStdString(bare.string()) + " has no step checkpoint to average");
    QVERIFY(thrownMessage([&] { averageCheckpoints(std::filesystem::path(dir.path().toStdString()) / "nowhere", 2); })
                .contains("not a WideLab run directory"));
}

QTEST_GUILESS_MAIN(TestCheckpointAverage)
#include "tst_checkpointaverage.moc"
