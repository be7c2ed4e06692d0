// Tests `widelab-cli average` (app/cli/AverageCommand): a trained run's last
// checkpoints averaged into checkpoints/average-last-N.pt, which eval and
// export take with --checkpoint while "latest" stays the newest step file; and
// its errors, each a message naming what is wrong: too few checkpoints, a
// damaged one, one of another architecture, no run, wrong arguments.
#include "CliTestSupport.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace widelab;
using namespace widelab::clitest;

namespace {

// A tiny ListOps run of 20 steps with a checkpoint every 5; `width` its d_model.
QString trainRun(const QTemporaryDir& dir, const QString& name, int width)
{
    std::string config = R"({"model": {"vocab_size": 20, "max_len": 40, "d_model": )";
    config += std::to_string(width);  // appended, not concatenated: GCC 12 warns of bounds it cannot see
    config += R"(, "layers": 2, "heads": 4, "ffn_dim": 64, "num_classes": 10},
        "task": {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 128, "validation_size": 32},
        "train": {"steps": 20, "batch_size": 8, "log_every": 5, "eval_every": 10, "checkpoint_every": 5,
                  "keep_last": 5, "threads": 1}})";
    const QString run = dir.filePath(name);
    const CliResult trained = cli({"train", writeFile(dir, name + ".json", config), "--out", run});
    if (trained.code != 0)
        qWarning("%s", qPrintable(trained.out + trained.err));
    return run;
}

}  // namespace

class TestCliAverage : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void averagesAndEvalLoadsIt();
    void errors();
};

void TestCliAverage::averagesAndEvalLoadsIt()
{
    QTemporaryDir dir;
    const QString run = trainRun(dir, "run", 32);
    const QString file = run + "/checkpoints/average-last-2.pt";
    const CliResult averaged = cli({"average", run, "--last", "2"});
    QVERIFY2(averaged.code == 0, qPrintable(averaged.err));
    QCOMPARE(averaged.out, "averaged 2 checkpoints (step-00000015.pt ... step-00000020.pt) into " + file
                               + ", at step 20; eval, inspect, ablate and export take it with --checkpoint "
                                 "average-last-2.pt\n");
    QVERIFY(QFile::exists(file));

    const CliResult eval = cli({"eval", run, "--checkpoint", "average-last-2.pt", "--json"});
    QVERIFY2(eval.code == 0, qPrintable(eval.err));
    QCOMPARE(nlohmann::json::parse(eval.out.toStdString())["step"].get<int>(), 20);
    const CliResult latest = cli({"eval", run, "--json"});
    QVERIFY2(latest.code == 0, qPrintable(latest.err));
    QVERIFY2(nlohmann::json::parse(latest.out.toStdString())["loss"] != nlohmann::json::parse(eval.out.toStdString())["loss"],
             "the average and the newest checkpoint should give different losses");
    const CliResult exported = cli({"export", run, "--out", dir.filePath("average.safetensors"), "--checkpoint",
                                    "average-last-2.pt"});
    QVERIFY2(exported.code == 0, qPrintable(exported.err));

    // The default is the last 5: the run keeps 4.
    const CliResult fewer = cli({"average", run});
    QCOMPARE(fewer.code, 1);
    QCOMPARE(fewer.err, "widelab-cli average: " + run + " has 4 step checkpoints, fewer than the 5 to average; "
                                                        "--last 4 averages those\n");
    QVERIFY(fewer.out.isEmpty());
}

void TestCliAverage::errors()
{
    QTemporaryDir dir;
    const QString run = trainRun(dir, "run", 32);
    const QString other = trainRun(dir, "other", 16);

    QCOMPARE(cli({"average"}).code, 2);
    QVERIFY(cli({"average"}).err.contains("usage: widelab-cli average RUN_DIR [--last N]"));
    QVERIFY(cli({"average", run, "--last", "0"}).err.contains("--last: 0 is outside 1.."));
    const CliResult nowhere = cli({"average", dir.filePath("nowhere")});
    QCOMPARE(nowhere.code, 1);
    QVERIFY2(nowhere.err.contains("not a WideLab run directory"), qPrintable(nowhere.err));

    const QString damagedFile = run + "/checkpoints/step-00000015.pt";
    test::flipMiddleByte(damagedFile.toStdString());
    const CliResult damaged = cli({"average", run, "--last", "3"});
    QCOMPARE(damaged.code, 1);
    QVERIFY2(damaged.err.startsWith("widelab-cli average: " + damagedFile + ": damaged"), qPrintable(damaged.err));
    QVERIFY(!QFile::exists(run + "/checkpoints/average-last-3.pt"));

    const QString foreignFile = run + "/checkpoints/step-00000025.pt";
    QVERIFY(QFile::copy(other + "/checkpoints/step-00000020.pt", foreignFile));
    const CliResult foreign = cli({"average", run, "--last", "2"});
    QCOMPARE(foreign.code, 1);
    QVERIFY2(foreign.err.startsWith("widelab-cli average: " + foreignFile
                                    + ": a checkpoint of another architecture: model.d_model (checkpoint 16, now 32)"),
             qPrintable(foreign.err));
}

QTEST_GUILESS_MAIN(TestCliAverage)
#include "tst_cli_average.moc"
