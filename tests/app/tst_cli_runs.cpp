// Tests the widelab-cli commands that train, continue and read runs (app/cli/Commands, through runCli):
// train stopped and resumed, a damaged latest checkpoint passed over, export-tb and export, the
// interpretability scans, and studies run, stopped, continued and listed.
#include "CliTestSupport.h"

using namespace widelab;
using namespace widelab::clitest;

class TestCliRuns : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void trainStopsCleanlyOnInterruptAndResumes();
    void damagedLatestCheckpointIsPassedOverOnTheTerminal();
    void headRolesLogitLensAndAblationScans();
    void studyRunsReportsAndContinues();
    void studyStopsOnInterruptAndContinues();
    void studyListsBuiltinStudies();
    void exportTbReportsBadInput();
    void exportWritesSafetensorsOrPickleAndSidecars();
};

// export-tb on a hand-written metrics.jsonl (it reads nothing else of a run):
// a malformed line is skipped naming the file and line, the rest is written;
// missing runs, an unwritable LOGDIR and a second export are errors (status 1),
// a missing --out a usage error (2). tests/app/tensorboard_roundtrip.py reads
// real exports back with TensorBoard.
void TestCliRuns::exportTbReportsBadInput()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString run = dir.filePath("hand");
    QVERIFY(QDir().mkpath(run));
    const QString logdir = dir.filePath("tb");

    const CliResult usage = cli({"export-tb", run});
    QCOMPARE(usage.code, 2);
    QVERIFY2(usage.err.contains("usage: widelab-cli export-tb RUN_DIR --out LOGDIR"), qPrintable(usage.err));

    const CliResult missingRun = cli({"export-tb", dir.filePath("nowhere"), "--out", logdir});
    QCOMPARE(missingRun.code, 1);
    QVERIFY2(missingRun.err.contains(dir.filePath("nowhere") + ": no such run directory"), qPrintable(missingRun.err));
    const CliResult noMetrics = cli({"export-tb", run, "--out", logdir});
    QCOMPARE(noMetrics.code, 1);
    QVERIFY2(noMetrics.err.contains(run + "/metrics.jsonl: missing"), qPrintable(noMetrics.err));

    writeFile(dir, "hand/metrics.jsonl",
              "{\"type\":\"train\",\"step\":5,\"loss\":1.5}\n"
              "{not json\n"
              "{\"type\":\"eval\",\"step\":5,\"split\":\"validation\",\"loss\":2,\"accuracy\":0.5}\n");
    const QString blocker = writeFile(dir, "file", "not a folder");
    const CliResult unwritable = cli({"export-tb", run, "--out", blocker});
    QCOMPARE(unwritable.code, 1);
    QVERIFY2(unwritable.err.contains(blocker + "/hand: cannot create the folder"), qPrintable(unwritable.err));

    const CliResult exported = cli({"export-tb", run, "--out", logdir});
    QCOMPARE(exported.code, 0);
    QVERIFY2(exported.err.contains("warning: " + run + "/metrics.jsonl, line 2: skipped, not JSON"), qPrintable(exported.err));
    // train/loss, train/task_loss, 4 time/ (wall, step, data, measurement) and 4 memory/rss/
    // scalars; validation/loss, accuracy and examples (no perplexity for a classifier's 0).
    QVERIFY2(exported.out.contains("3 lines of metrics.jsonl (1 skipped) as 13 scalars, 0 histograms and 0 images"),
             qPrintable(exported.out));
    const QStringList files = QDir(logdir + "/hand").entryList(QDir::Files);
    QCOMPARE(files.size(), 1);
    QVERIFY2(files.front().startsWith("events.out.tfevents."), qPrintable(files.front()));

    const CliResult again = cli({"export-tb", run, "--out", logdir});
    QCOMPARE(again.code, 1);
    QVERIFY2(again.err.contains(logdir + "/hand already holds TensorBoard events"), qPrintable(again.err));
    QCOMPARE(cli({"export-tb", run, "--out", logdir, "--replace"}).code, 0);
    QCOMPARE(QDir(logdir + "/hand").entryList(QDir::Files).size(), 1);
}

// export on a word-tokenizer classification run: safetensors by default (its
// header's length, the tensors back to back up to the end of the file, the run
// document and step as metadata), the pickle with --format pt or a .pt name, and
// beside both the run document and the run's tokenizer and labels files as
// NAME.tokenizer.json and NAME.labels.json (no image.json: not an image run).
void TestCliRuns::exportWritesSafetensorsOrPickleAndSidecars()
{
    QTemporaryDir dir;
    QString rows;
    for (int i = 0; i < 60; ++i)
        rows += QString("%1\tthe %2 model routes token %3\n").arg(i % 2 ? "wide" : "deep").arg(i % 7).arg(i);
    const QString tsv = writeFile(dir, "labelled.tsv", rows.toStdString());
    const QString config = writeFile(dir, "tiny.json", QString(R"({"model": {"vocab_size": 60, "max_len": 16,
        "d_model": 16, "layers": 1, "heads": 2, "ffn_dim": 32, "num_classes": 2},
        "task": {"kind": "classification", "path": "%1", "tokenizer": "word", "validation_fraction": 0.2},
        "train": {"steps": 2, "batch_size": 8, "log_every": 1, "eval_every": 2, "checkpoint_every": 2,
                  "threads": 1}})").arg(tsv).toStdString());
    const QString run = dir.filePath("run");
    const CliResult trained = cli({"train", config, "--out", run});
    QVERIFY2(trained.code == 0, qPrintable(trained.out + trained.err));
    const auto bytes = [](const QString& file) {
        QFile f(file);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    };

    const CliResult plain = cli({"export", run, "--out", dir.filePath("model.weights")});
    QVERIFY2(plain.code == 0, qPrintable(plain.err));
    QVERIFY2(plain.out.contains("(safetensors, "), qPrintable(plain.out));
    const QByteArray file = bytes(dir.filePath("model.weights"));
    QVERIFY(file.size() > 8);
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = length * 256 + static_cast<unsigned char>(file[i]);
    QCOMPARE(length % 8, std::uint64_t{0});
    QVERIFY(8 + length <= static_cast<std::uint64_t>(file.size()));
    const nlohmann::json header = nlohmann::json::parse(file.mid(8, static_cast<qsizetype>(length)).toStdString());
    nlohmann::json document = nlohmann::json::parse(bytes(dir.filePath("model.json")).toStdString());
    QVERIFY(document.contains("model"));
    // The export's record: every other file's SHA-256 (Qt's own, to check WideLab's).
    const auto sha256 = [&](const QString& name) {
        return QCryptographicHash::hash(bytes(dir.filePath(name)), QCryptographicHash::Sha256).toHex().toStdString();
    };
    const nlohmann::json record = document.at("export").at("files");
    QCOMPARE(record.size(), std::size_t{3});
    for (const char* name : {"model.weights", "model.tokenizer.json", "model.labels.json"})
        QCOMPARE(record.at(name).get<std::string>(), sha256(QString::fromLatin1(name)));
    document.erase("export");
    QCOMPARE(nlohmann::json::parse(header["__metadata__"]["config"].get<std::string>()), document);
    QCOMPARE(header["__metadata__"]["step"].get<std::string>(), std::string("2"));
    QCOMPARE(header["__metadata__"]["format"].get<std::string>(), std::string("pt"));
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
    for (const auto& [name, entry] : header.items())
        if (name != "__metadata__") {
            QCOMPARE(entry["dtype"].get<std::string>(), std::string("F32"));
            spans.emplace_back(entry["data_offsets"][0].get<std::uint64_t>(), entry["data_offsets"][1].get<std::uint64_t>());
        }
    QVERIFY(spans.size() > 5);
    std::sort(spans.begin(), spans.end());
    std::uint64_t at = 0;
    for (const auto& [begin, end] : spans) {
        QCOMPARE(begin, at);
        at = end;
    }
    QCOMPARE(8 + length + at, static_cast<std::uint64_t>(file.size()));
    QCOMPARE(bytes(dir.filePath("model.tokenizer.json")), bytes(run + "/tokenizer.json"));
    QCOMPARE(bytes(dir.filePath("model.labels.json")), bytes(run + "/labels.json"));
    QVERIFY(!bytes(run + "/labels.json").isEmpty());
    QVERIFY(!QFile::exists(dir.filePath("model.image.json")));
    QVERIFY2(plain.out.contains(dir.filePath("model.tokenizer.json")), qPrintable(plain.out));

    // --format pt and a .pt name both write the pickle (a zip archive, as torch.save's), not safetensors.
    QCOMPARE(cli({"export", run, "--out", dir.filePath("p.bin"), "--format", "pt"}).code, 0);
    QCOMPARE(cli({"export", run, "--out", dir.filePath("q.pt")}).code, 0);
    QVERIFY(bytes(dir.filePath("p.bin")).startsWith("PK\x03\x04"));
    QCOMPARE(bytes(dir.filePath("q.pt")), bytes(dir.filePath("p.bin")));
    QVERIFY(QFile::exists(dir.filePath("q.tokenizer.json")) && QFile::exists(dir.filePath("q.json")));
    // A .safetensors name and --format safetensors write the same bytes as the default.
    QCOMPARE(cli({"export", run, "--out", dir.filePath("s.safetensors")}).code, 0);
    QCOMPARE(bytes(dir.filePath("s.safetensors")), file);

    const CliResult unwritable = cli({"export", run, "--out", dir.filePath("model.weights/inside.safetensors")});
    QCOMPARE(unwritable.code, 1);
    QVERIFY2(unwritable.err.contains(dir.filePath("model.weights/inside.safetensors")), qPrintable(unwritable.err));

    // An export replaces an earlier export (of either format); any other file only with --force.
    QCOMPARE(cli({"export", run, "--out", dir.filePath("s.safetensors")}).code, 0);
    QCOMPARE(cli({"export", run, "--out", dir.filePath("q.safetensors")}).code, 0);
    QVERIFY(!QFile::exists(dir.filePath("q.pt")));  // the earlier export's weights, which q.json no longer describes
    writeFile(dir, "notes.safetensors", "my notes");
    const CliResult foreign = cli({"export", run, "--out", dir.filePath("notes.safetensors")});
    QCOMPARE(foreign.code, 1);
    QVERIFY2(foreign.err.contains(dir.filePath("notes.safetensors") + " exists and is not an earlier export"),
             qPrintable(foreign.err));
    QCOMPARE(bytes(dir.filePath("notes.safetensors")), QByteArray("my notes"));
    QVERIFY(!QFile::exists(dir.filePath("notes.json")));
    QCOMPARE(cli({"export", run, "--out", dir.filePath("notes.safetensors"), "--force"}).code, 0);
    QCOMPARE(bytes(dir.filePath("notes.safetensors")), file);
    // Never into a run directory (its checkpoints), nor onto a special file, --force or not.
    const QString newest = run + "/checkpoints/step-00000002.pt";
    const QByteArray checkpoint = bytes(newest);
    const CliResult intoRun = cli({"export", run, "--out", newest, "--force"});
    QCOMPARE(intoRun.code, 1);
    QVERIFY2(intoRun.err.contains(run + " is a run directory"), qPrintable(intoRun.err));
    QCOMPARE(bytes(newest), checkpoint);
    QCOMPARE(cli({"export", run, "--out", run + "/model.safetensors"}).code, 1);
    QVERIFY(!QFile::exists(run + "/model.safetensors"));
    const QString pipe = dir.filePath("pipe.safetensors");
    QCOMPARE(::mkfifo(pipe.toLocal8Bit().constData(), 0600), 0);
    const CliResult special = cli({"export", run, "--out", pipe, "--force"});
    QCOMPARE(special.code, 1);
    QVERIFY2(special.err.contains(pipe + " exists and is not a regular file"), qPrintable(special.err));
    QVERIFY(!QFile::exists(dir.filePath("pipe.json")));
}

void TestCliRuns::trainStopsCleanlyOnInterruptAndResumes()
{
    // A real widelab-cli process, interrupted with SIGINT as Ctrl-C does.
    QTemporaryDir dir;
    const QString config = dir.filePath("tiny.json");
    std::ofstream(config.toStdString()) << R"({"model": {"vocab_size": 20, "max_len": 40, "d_model": 32, "layers": 2,
        "heads": 4, "ffn_dim": 64, "num_classes": 10},
        "task": {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 256, "validation_size": 32},
        "train": {"steps": 100000, "batch_size": 8, "log_every": 1, "eval_every": 1000, "threads": 1}})";
    const QString run = dir.filePath("run");
    QProcess train;
    train.setProcessChannelMode(QProcess::MergedChannels);
    train.start(WIDELAB_CLI, {"train", config, "--out", run});
    QVERIFY(train.waitForStarted());
    QString output;
    while (!output.contains("step 3/") && train.state() == QProcess::Running && train.waitForReadyRead(20000))
        output += QString::fromUtf8(train.readAll());
    QVERIFY2(output.contains("step 3/"), qPrintable(output));
    ::kill(static_cast<pid_t>(train.processId()), SIGINT);
    QVERIFY(train.waitForFinished(60000));
    output += QString::fromUtf8(train.readAll());
    QCOMPARE(train.exitStatus(), QProcess::NormalExit);
    QCOMPARE(train.exitCode(), 0);
    QVERIFY2(output.contains("stopped at step"), qPrintable(output));
    const QStringList checkpoints = QDir(run + "/checkpoints").entryList({"step-*.pt"});
    QCOMPARE(checkpoints.size(), 1);
    const int stoppedAt = checkpoints.front().mid(5, 8).toInt();
    QVERIFY(stoppedAt >= 3);

    // Resuming continues from that step; --steps ends it one step later.
    QProcess resume;
    resume.setProcessChannelMode(QProcess::MergedChannels);
    resume.start(WIDELAB_CLI, {"train", "--resume", "--out", run, "--steps", QString::number(stoppedAt + 1)});
    QVERIFY(resume.waitForFinished(120000));
    const QString resumed = QString::fromUtf8(resume.readAll());
    QCOMPARE(resume.exitCode(), 0);
    QVERIFY2(resumed.contains(QString("from step %1").arg(stoppedAt)), qPrintable(resumed));
    QVERIFY2(resumed.contains(QString("completed %1 steps").arg(stoppedAt + 1)), qPrintable(resumed));
}

void TestCliRuns::damagedLatestCheckpointIsPassedOverOnTheTerminal()
{
    QTemporaryDir dir;
    const QString config = writeFile(dir, "tiny.json", R"({"model": {"vocab_size": 20, "max_len": 40, "d_model": 32,
        "layers": 2, "heads": 4, "ffn_dim": 64, "num_classes": 10},
        "task": {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 128, "validation_size": 32},
        "train": {"steps": 20, "batch_size": 8, "log_every": 5, "eval_every": 10, "checkpoint_every": 10,
                  "keep_last": 5, "threads": 1}})");
    const QString run = dir.filePath("run");
    QCOMPARE(cli({"train", config, "--out", run}).code, 0);
    const QString latest = run + "/checkpoints/step-00000020.pt";
    test::flipMiddleByte(latest.toStdString());
    const QString warning = "warning: " + latest + ": damaged: its checksum does not match";

    // eval, inspect and export take the checkpoint before it, saying so on stderr:
    // their stdout stays the result alone.
    const CliResult eval = cli({"eval", run, "--json"});
    QCOMPARE(eval.code, 0);
    QCOMPARE(nlohmann::json::parse(eval.out.toStdString())["step"].get<int>(), 10);
    QCOMPARE(eval.err.count(warning), 1);
    QVERIFY2(eval.err.contains("trying step-00000010.pt"), qPrintable(eval.err));
    const CliResult inspect = cli({"inspect", run, "--text", "[MAX 2 9 ]", "--json"});
    QCOMPARE(inspect.code, 0);
    QCOMPARE(nlohmann::json::parse(inspect.out.toStdString())["step"].get<int>(), 10);
    QCOMPARE(inspect.err.count(warning), 1);
    const CliResult exported = cli({"export", run, "--out", dir.filePath("model.pt")});
    QCOMPARE(exported.code, 0);
    QVERIFY2(exported.out.contains("step 10"), qPrintable(exported.out));
    QCOMPARE(exported.err.count(warning), 1);
    QVERIFY(QFile::exists(latest));  // readers change nothing

    // Asked for by name, it is an error naming the file.
    const CliResult named = cli({"eval", run, "--checkpoint", "step-00000020.pt"});
    QCOMPARE(named.code, 1);
    QVERIFY2(named.err.startsWith("widelab-cli eval: " + latest + ": damaged"), qPrintable(named.err));
    QVERIFY(named.out.isEmpty());

    // A real `train --resume` says it on the terminal (the warning comes while the
    // trainer is being built) and sets the damaged file aside.
    QProcess resume;
    resume.setProcessChannelMode(QProcess::MergedChannels);
    resume.start(WIDELAB_CLI, {"train", "--resume", "--out", run, "--steps", "25"});
    QVERIFY(resume.waitForFinished(120000));
    const QString output = QString::fromUtf8(resume.readAll());
    QCOMPARE(resume.exitCode(), 0);
    QCOMPARE(output.count(warning), 1);
    QVERIFY2(output.contains("trying step-00000010.pt"), qPrintable(output));
    QVERIFY2(output.contains("step-00000020.pt set aside as step-00000020.pt.unreadable"), qPrintable(output));
    QVERIFY2(output.contains("from step 10"), qPrintable(output));
    QVERIFY(QFile::exists(latest + ".unreadable"));
}

// ---------------------------------------------------------------- interpretability

void TestCliRuns::headRolesLogitLensAndAblationScans()
{
    QTemporaryDir dir;
    const QString config = writeFile(dir, "moe.json", R"({"name": "moe",
        "model": {"vocab_size": 20, "max_len": 32, "d_model": 16, "layers": 2, "heads": 2, "ffn_dim": 32,
                  "num_classes": 10, "experts": 4},
        "task": {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 64, "validation_size": 16},
        "train": {"steps": 10, "batch_size": 8, "log_every": 5, "eval_every": 10, "checkpoint_every": 10,
                  "threads": 1}})");
    const QString run = dir.filePath("run");
    QCOMPARE(cli({"train", config, "--out", run}).code, 0);

    // The validation wrote head roles and what each expert received.
    const std::vector<nlohmann::json> insights = test::metricLines(run.toStdString(), "insights");
    QCOMPARE(insights.size(), std::size_t{1});
    QCOMPARE(insights[0]["examples"].get<int>(), 16);
    QCOMPARE(insights[0]["head_roles"]["scores"].size(), std::size_t{2});
    QCOMPARE(insights[0]["head_roles"]["scores"][0].size(), std::size_t{2});
    QCOMPARE(insights[0]["experts"].size(), std::size_t{2});  // every block routes
    QCOMPARE(insights[0]["experts"][0]["class_counts"].size(), std::size_t{4});

    const CliResult inspect = cli({"inspect", run, "--text", "[MAX 2 9 ]", "--heads", "--json"});
    QCOMPARE(inspect.code, 0);
    const nlohmann::json probe = nlohmann::json::parse(inspect.out.toStdString());
    // One object per layer and head, a score per role.
    QCOMPARE(probe["head_roles"].size(), std::size_t{4});
    QCOMPARE(probe["head_roles"][3]["layer"].get<int>(), 1);
    QCOMPARE(probe["head_roles"][3]["head"].get<int>(), 1);
    for (const char* role : {"previous_token", "next_token", "first_token", "self", "local", "broad"}) {
        const double value = probe["head_roles"][3][role].get<double>();
        QVERIFY2(value >= 0.0 && value <= 1.0, role);
    }
    // The logit lens: after both sublayers of both blocks, the last the prediction.
    QCOMPARE(probe["logit_lens"].size(), std::size_t{4});
    QCOMPARE(probe["logit_lens"][3]["block"].get<int>(), 1);
    QCOMPARE(probe["logit_lens"][3]["sublayer"].get<std::string>(), std::string("ffn"));
    const auto last = probe["logit_lens"][3]["distribution"].get<std::vector<double>>();
    const auto prediction = probe["prediction"].get<std::vector<double>>();
    QCOMPARE(last.size(), prediction.size());
    for (std::size_t i = 0; i < last.size(); ++i)
        QVERIFY(std::abs(last[i] - prediction[i]) < 1e-6);
    QVERIFY(!probe.contains("cut_tokens"));  // 5 tokens fit in 32

    // A text of 40 tokens ("[MAX", 38 digits, "]") against the run's 32: the
    // model reads the first 32, and both outputs say that 8 were cut.
    std::string longText = "[MAX";
    for (int i = 0; i < 38; ++i)
        longText += " 1";
    longText += " ]";
    const CliResult cut = cli({"inspect", run, "--text", QString::fromStdString(longText), "--json"});
    QCOMPARE(cut.code, 0);
    const nlohmann::json cutProbe = nlohmann::json::parse(cut.out.toStdString());
    QCOMPARE(cutProbe["cut_tokens"].get<int>(), 8);
    QCOMPARE(cutProbe["tokens"].back().get<std::string>(), std::string("1"));  // the closing bracket went
    const CliResult cutText = cli({"inspect", run, "--text", QString::fromStdString(longText)});
    QCOMPARE(cutText.code, 0);
    QVERIFY2(cutText.out.contains("the last 8 were cut"), qPrintable(cutText.out));

    const CliResult heads = cli({"ablate", run, "--heads", "--json"});
    QCOMPARE(heads.code, 0);
    const nlohmann::json scan = nlohmann::json::parse(heads.out.toStdString());
    QCOMPARE(scan["parts"].size(), std::size_t{4});
    QCOMPARE(scan["parts"][2]["layer"].get<int>(), 1);
    QCOMPARE(scan["parts"][2]["head"].get<int>(), 0);
    const double baseline = scan["baseline"]["loss"].get<double>();
    for (const auto& part : scan["parts"])
        QVERIFY(std::abs(part["loss_delta"].get<double>() - (part["loss"].get<double>() - baseline)) < 1e-9);

    const CliResult experts = cli({"ablate", run, "--experts", "--mode", "mean", "--json"});
    QCOMPARE(experts.code, 0);
    QCOMPARE(nlohmann::json::parse(experts.out.toStdString())["parts"].size(), std::size_t{8});
    // A part the model does not have, and a mode that does not exist, are usage errors.
    const CliResult paths = cli({"ablate", run, "--paths"});
    QCOMPARE(paths.code, 2);
    QVERIFY2(paths.err.contains("model.paths is 1"), qPrintable(paths.err));
    QCOMPARE(cli({"ablate", run, "--mode", "half"}).code, 2);
    // The text table sorts the parts by what they are worth.
    const CliResult table = cli({"ablate", run, "--sublayers"});
    QCOMPARE(table.code, 0);
    QVERIFY2(table.out.contains("block 2 ffn"), qPrintable(table.out));
}

// ---------------------------------------------------------------- study

void TestCliRuns::studyRunsReportsAndContinues()
{
    QTemporaryDir dir;
    const QString file = writeFile(dir, "tiny-study.json", R"({"name": "tiny study",
        "base": {"model": {"vocab_size": 20, "max_len": 24, "d_model": 16, "layers": 1, "heads": 2, "ffn_dim": 32,
                           "num_classes": 10},
                 "task": {"kind": "listops", "min_length": 5, "max_length": 20, "train_size": 64, "validation_size": 16,
                          "test_size": 16},
                 "train": {"steps": 100, "batch_size": 8, "warmup_steps": 1, "log_every": 1, "eval_every": 2,
                           "checkpoint_every": 2, "device": "cpu"}},
        "axes": [{"key": "model.layers", "values": [1, 2]}]})");
    const QString out = dir.filePath("study");
    const CliResult run = cli({"study", file, "--out", out, "--steps", "4", "--threads", "1"});
    QVERIFY2(run.code == 0, qPrintable(run.err));
    QVERIFY2(run.err.contains("member 1/2 layers=1,seed=1: started"), qPrintable(run.err));
    QVERIFY2(run.err.contains("layers=2,seed=1 completed: best validation accuracy"), qPrintable(run.err));
    QVERIFY2(run.err.contains("study: 2/2 done"), qPrintable(run.err));
    QVERIFY2(run.out.contains("| model.layers | seeds |"), qPrintable(run.out));
    QVERIFY(QFile::exists(out + "/results.csv"));
    // Each member is an ordinary run, 4 steps long.
    const CliResult eval = cli({"eval", out + "/runs/layers=2,seed=1", "--split", "test"});
    QVERIFY2(eval.code == 0, qPrintable(eval.err));
    QVERIFY2(eval.out.startsWith("test split, step 4,"), qPrintable(eval.out));

    const CliResult report = cli({"study", "--report", out});
    QCOMPARE(report.code, 0);
    QVERIFY2(report.out.contains("2 of 2 members done"), qPrintable(report.out));
    QVERIFY(report.out.contains("| 2 | 1/1 |"));

    // Again: nothing left to train; the recorded --steps is kept without being given.
    const CliResult again = cli({"study", "--out", out});
    QVERIFY2(again.code == 0, qPrintable(again.err));
    QVERIFY2(again.err.contains("4 steps each") && again.err.contains("2 member(s) finished before were passed over"),
             qPrintable(again.err));
    // Another length would be another study.
    const CliResult longer = cli({"study", file, "--out", out, "--steps", "5"});
    QCOMPARE(longer.code, 1);
    QVERIFY2(longer.err.contains("--steps 4") && longer.err.contains("--steps 5"), qPrintable(longer.err));
    // Usage and a directory without a study.
    QCOMPARE(cli({"study", file}).code, 2);
    const CliResult none = cli({"study", "--report", dir.filePath("nothing")});
    QCOMPARE(none.code, 1);
    QVERIFY2(none.err.contains("study.json") && none.err.contains("holds no study"), qPrintable(none.err));
}

void TestCliRuns::studyStopsOnInterruptAndContinues()
{
    // A real widelab-cli process, interrupted with SIGINT as Ctrl-C does, twice:
    // the member stops with a checkpoint, and the same command continues it from there.
    QTemporaryDir dir;
    const QString file = writeFile(dir, "long-study.json", R"({"base": {
        "model": {"vocab_size": 20, "max_len": 24, "d_model": 16, "layers": 1, "heads": 2, "ffn_dim": 32, "num_classes": 10},
        "task": {"kind": "listops", "min_length": 5, "max_length": 20, "train_size": 64, "validation_size": 16, "test_size": 16},
        "train": {"steps": 100000, "batch_size": 8, "log_every": 1, "eval_every": 1000, "device": "cpu", "threads": 1}},
        "axes": [{"key": "model.layers", "values": [1, 2]}]})");
    const QString out = dir.filePath("study");
    auto interrupt = [&](const QString& waitFor) {
        QProcess study;
        study.setProcessChannelMode(QProcess::MergedChannels);
        study.start(WIDELAB_CLI, {"study", file, "--out", out});
        if (!study.waitForStarted())
            return QString("did not start");
        QString output;
        while (!output.contains(waitFor) && study.state() == QProcess::Running && study.waitForReadyRead(20000))
            output += QString::fromUtf8(study.readAll());
        ::kill(static_cast<pid_t>(study.processId()), SIGINT);
        study.waitForFinished(60000);
        output += QString::fromUtf8(study.readAll());
        return QString("exit %1\n").arg(study.exitCode()) + output;
    };
    const QString first = interrupt("layers=1,seed=1: started");
    QVERIFY2(first.startsWith("exit 0\n") && first.contains("layers=1,seed=1 stopped at step")
                 && first.contains("study stopped: 0 of 2 members done"),
             qPrintable(first));
    QCOMPARE(QDir(out + "/runs/layers=1,seed=1/checkpoints").entryList({"step-*.pt"}).size(), 1);
    QVERIFY(!QDir(out + "/runs/layers=2,seed=1").exists());

    const QString second = interrupt("layers=1,seed=1: continuing from its checkpoint");
    QVERIFY2(second.startsWith("exit 0\n") && second.contains("continuing from its checkpoint")
                 && second.contains("study stopped"),
             qPrintable(second));
    const CliResult report = cli({"study", "--report", out});
    QVERIFY2(report.out.contains("0 of 2 members done"), qPrintable(report.out));
}

void TestCliRuns::studyListsBuiltinStudies()
{
    const CliResult list = cli({"study", "--list"});
    QVERIFY2(list.code == 0, qPrintable(list.err));
    QVERIFY(list.err.isEmpty());
    const std::vector<std::string> names = listStudies();
    QVERIFY(!names.empty());
    for (const std::string& name : names)
        QVERIFY2(list.out.contains(q(name)), qPrintable(list.out));
    QVERIFY(!list.out.contains("does not validate"));
}

QTEST_GUILESS_MAIN(TestCliRuns)
#include "tst_cli_runs.moc"
