// Tests the widelab-cli commands (app/cli/Commands) through runCli, and TextTable
// (app/cli/TextTable).
#include "TestSupport.h"
#include "Commands.h"
#include "TextTable.h"
#include "config/ConfigSchema.h"
#include "config/ModelConfig.h"
#include "config/Presets.h"
#include "config/ResourceFolder.h"
#include "study/BuiltinStudies.h"

#include <QCryptographicHash>
#include <QtTest>

#include <QDir>
#include <QProcess>

#include <torch/cuda.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <sys/stat.h>

using namespace widelab;

namespace {

struct CliResult {
    int code = -1;
    QString out;
    QString err;
};

CliResult cli(const QStringList& args)
{
    std::vector<std::string> list;
    for (const auto& arg : args)
        list.push_back(arg.toStdString());
    std::ostringstream out, err;
    CliResult result;
    result.code = runCli(list, out, err);
    result.out = QString::fromStdString(out.str());
    result.err = QString::fromStdString(err.str());
    return result;
}

QString q(const std::string& text) { return QString::fromStdString(text); }

// Writes `text` to NAME in `directory` and returns the path.
QString writeFile(const QTemporaryDir& directory, const QString& name, const std::string& text)
{
    const QString path = directory.filePath(name);
    std::ofstream(path.toStdString(), std::ios::binary) << text;
    return path;
}

// "1,234" -> 1234; -1 when the text is not a grouped number.
qint64 ungroup(QString text)
{
    text.remove(QLatin1Char(','));
    bool ok = false;
    const qint64 value = text.toLongLong(&ok);
    return ok ? value : -1;
}

// The stored parameter count of each preset below, derived by hand from its
// resources/presets/*.json file and the parameter table of docs/model.md.
// Notation as in docs/model.md; P = max_len, C = num_classes.

// widenet.json: V 32, P 512, mean pooling (no CLS: P position rows, no embed.cls),
// D 256, L 6, H 8, A = D/H = 32, M 1024, E 4 experts (U = E), 10 classes;
// attention, ffn and router shared (once), LayerNorms per block.
qint64 widenetStored()
{
    const qint64 V = 32, P = 512, D = 256, L = 6, H = 8, A = 256 / 8, M = 1024, E = 4, C = 10;
    return V * D + P * D                          // embed.token, embed.position
           + (3 * H * A * D + 3 * H * A)          // attention.0.qkv weight, bias
           + (D * H * A + D)                      // attention.0.out_weight, out_bias
           + (E * M * D + E * M)                  // ffn.0.w_in, b_in
           + (E * D * M + E * D)                  // ffn.0.w_out, b_out
           + E * D                                // router.0.weight
           + L * (2 * D + 2 * D)                  // ln_att.i, ln_ffn.i (weight, bias)
           + 2 * D                                // final_ln
           + (C * D + C);                         // classifier
    // = 8192 + 131072 + 197376 + 65792 + 1052672 + 1049600 + 1024 + 6144 + 512 + 2570 = 2,514,954
}

// widenet with only top_k = 2 of the 4 experts counted (ParameterCount.h: "active").
qint64 widenetActive()
{
    const qint64 D = 256, M = 1024, E = 4, K = 2;
    const qint64 oneExpert = M * D + M + D * M + D;  // w_in, b_in, w_out, b_out of one expert
    return widenetStored() - (E - K) * oneExpert;    // 2,514,954 - 2 * 525,568 = 1,463,818
}

// transformer-6x8.json: V 32, P 512 with CLS (P + 1 position rows, embed.cls), D 128,
// L 6, H 8, A 16, M 512, dense, nothing shared, 10 classes.
qint64 transformer6x8Stored()
{
    const qint64 V = 32, P = 512, D = 128, L = 6, H = 8, A = 16, M = 512, C = 10;
    return V * D + (P + 1) * D + D                                  // token, position, cls
           + L * ((3 * H * A * D + 3 * H * A) + (D * H * A + D))    // attention.i
           + L * ((M * D + M) + (D * M + D))                        // ffn.i (U = n = 1)
           + L * (2 * D + 2 * D) + 2 * D                            // ln_att, ln_ffn, final_ln
           + (C * D + C);                                           // classifier
    // = 69888 + 396288 + 790272 + 3328 + 1290 = 1,261,066
}

// albert.json: V 32, embedding_dim 64 (factorised), P 512 with CLS, D 256, L 6, H 8,
// A 32, M 1024, pooler, 10 classes; attention, ffn and LayerNorms shared.
qint64 albertStored()
{
    const qint64 V = 32, F = 64, P = 512, D = 256, H = 8, A = 32, M = 1024, C = 10;
    return V * F + (D * F + D) + (P + 1) * D + D                    // token, project, position, cls
           + (3 * H * A * D + 3 * H * A) + (D * H * A + D)          // attention.0
           + (M * D + M) + (D * M + D)                              // ffn.0
           + (2 * D + 2 * D) + 2 * D                                // ln_att.0, ln_ffn.0, final_ln
           + (D * D + D)                                            // pooler
           + (C * D + C);                                           // classifier
    // = 150272 + 263168 + 525568 + 1536 + 65792 + 2570 = 1,008,906
}

// multipath-3x4(-features).json: V 32, P 512 with CLS, D 128, L 3, H 4, A 32, M 512,
// n 4 paths, path_norm, learnable weights (m = n, or 2n with extra features), 10 classes.
qint64 multipath3x4Stored(bool extraFeatures)
{
    const qint64 V = 32, P = 512, D = 128, L = 3, H = 4, A = 32, M = 512, n = 4, C = 10;
    const qint64 m = extraFeatures ? 2 * n : n;
    return V * D + (P + 1) * D + D                                          // token, position, cls
           + L * ((3 * n * H * A * D + 3 * n * H * A) + (n * D * H * A + n * D))  // attention.i
           + L * ((n * M * D + n * M) + (n * D * M + n * D))                // ffn.i (U = n)
           + L * (2 * D + 2 * D) + 2 * D                                    // ln_att, ln_ffn, final_ln
           + L * 2 * ((m * D + m * D) + (m + 1))                            // path_att.i, path_ffn.i: norm, alpha, beta
           + (C * D + C);                                                   // classifier
    // m = 4: 69888 + 792576 + 1580544 + 1792 + 6174 + 1290 = 2,452,264
    // m = 8: the same with path weights 3 * 2 * (2048 + 9) = 12342: 2,458,432
}

// Lines of a text, without the empty ones.
QStringList lines(const QString& text) { return text.split(QLatin1Char('\n'), Qt::SkipEmptyParts); }

QString lineStartingWith(const QString& text, const QString& start)
{
    for (const auto& line : lines(text))
        if (line.startsWith(start))
            return line;
    return {};
}

}  // namespace

class TestCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void trainStopsCleanlyOnInterruptAndResumes();
    void damagedLatestCheckpointIsPassedOverOnTheTerminal();
    void paramsStoredCount_data();
    void paramsStoredCount();
    void paramsWidenetActive();
    void checkPrintsResolvedConfiguration();
    void checkReportsEveryIssue_data();
    void checkReportsEveryIssue();
    void deeplyNestedFile_data();
    void deeplyNestedFile();
    void deeplyNestedFileInTheBinary();
    void checkRefusesWhatTrainRefuses_data();
    void checkRefusesWhatTrainRefuses();
    void checkPrintsWarnings();
    void failingConfiguration_data();
    void failingConfiguration();
    void usageErrors_data();
    void usageErrors();
    void helpAndVersion();
    void threadsPinEveryPool();
    void presetsListsEveryShippedPreset();
    void presetsJson();
    void shippedFoldersInstalledFirstThenSourceTree();
    void attentionListsEveryMechanism();
    void keysListEveryKeyOfTheSchema();
    void forward_data();
    void forward();
    void bench_data();
    void bench();
    void benchText();
    void benchDevice();
    void headRolesLogitLensAndAblationScans();
    void studyRunsReportsAndContinues();
    void studyStopsOnInterruptAndContinues();
    void studyListsBuiltinStudies();
    void exportTbReportsBadInput();
    void exportWritesSafetensorsOrPickleAndSidecars();

    void textTableRendersExactly();
    void textTableAlignsColumns();
};

// ---------------------------------------------------------------- params

void TestCli::paramsStoredCount_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<qint64>("stored");

    QTest::newRow("widenet") << "widenet" << widenetStored();
    QTest::newRow("transformer-6x8") << "transformer-6x8" << transformer6x8Stored();
    QTest::newRow("albert") << "albert" << albertStored();
    QTest::newRow("multipath-3x4") << "multipath-3x4" << multipath3x4Stored(false);
    QTest::newRow("multipath-3x4-features") << "multipath-3x4-features" << multipath3x4Stored(true);
}

void TestCli::paramsStoredCount()
{
    QFETCH(QString, preset);
    QFETCH(qint64, stored);

    // The hand-derived numbers, written out (guards the formulas above).
    if (preset == QLatin1String("widenet"))
        QCOMPARE(stored, qint64(2514954));

    const ModelDocument document = loadModelDocument(resolveConfigPath(preset.toStdString()));

    // Text: the title, then a table whose "total" line has the stored count first.
    const CliResult text = cli({"params", preset});
    QCOMPARE(text.code, 0);
    QVERIFY2(text.err.isEmpty(), qPrintable(text.err));
    QCOMPARE(lines(text.out).value(0), q(document.name));
    const QString total = lineStartingWith(text.out, QStringLiteral("total "));
    QVERIFY2(!total.isEmpty(), qPrintable(text.out));
    const QStringList cells = total.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    QCOMPARE(cells.size(), 5);  // total, stored, active, applied, FLOPs per token
    QCOMPARE(ungroup(cells[1]), stored);

    // JSON: the same number under parameters.stored; the breakdown adds up to it.
    const CliResult json = cli({"params", preset, "--json"});
    QCOMPARE(json.code, 0);
    QVERIFY2(json.err.isEmpty(), qPrintable(json.err));
    nlohmann::json parsed;
    try {
        parsed = nlohmann::json::parse(json.out.toStdString());
    } catch (const std::exception& error) {
        QFAIL(qPrintable(QStringLiteral("params --json is not JSON: ") + error.what() + "\n" + json.out));
    }
    QCOMPARE(qint64(parsed.at("parameters").at("stored").get<std::int64_t>()), stored);
    QCOMPARE(q(parsed.at("name").get<std::string>()), q(document.name));
    qint64 sum = 0;
    for (const auto& row : parsed.at("breakdown"))
        sum += row.at("stored").get<std::int64_t>();
    QCOMPARE(sum, stored);
}

void TestCli::paramsWidenetActive()
{
    QCOMPARE(widenetActive(), qint64(1463818));
    const CliResult json = cli({"params", "widenet", "--json"});
    QCOMPARE(json.code, 0);
    const nlohmann::json parsed = nlohmann::json::parse(json.out.toStdString());
    QCOMPARE(qint64(parsed.at("parameters").at("active").get<std::int64_t>()), widenetActive());

    const QString total = lineStartingWith(cli({"params", "widenet"}).out, QStringLiteral("total "));
    const QStringList cells = total.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    QCOMPARE(cells.value(2), QStringLiteral("1,463,818"));
}

void TestCli::attentionListsEveryMechanism()
{
    // The ten mechanisms of the Wide Attention paper (as they are registered),
    // each with its keys at the schema's defaults; mixed is offered beside them.
    const CliResult json = cli({"attention", "--json"});
    QCOMPARE(json.code, 0);
    const nlohmann::json parsed = nlohmann::json::parse(json.out.toStdString());
    QCOMPARE(parsed.at("mixed").get<std::string>(), std::string("mixed"));
    const auto& list = parsed.at("mechanisms");
    QVERIFY(!list.empty());
    QCOMPARE(list.front().at("name").get<std::string>(), std::string("full"));
    QCOMPARE(list.front().at("map").get<std::string>(), std::string("exact"));
    for (const auto& mechanism : list)
        for (const auto& [key, value] : mechanism.at("keys").items())
            QVERIFY2(keySpec("model." + key).defaultValue == value, key.c_str());
    const CliResult text = cli({"attention"});
    QCOMPARE(text.code, 0);
    for (const auto& mechanism : list)
        QVERIFY(text.out.contains(q(mechanism.at("name").get<std::string>() + ": ")));
}

void TestCli::keysListEveryKeyOfTheSchema()
{
    const CliResult json = cli({"keys", "--json"});
    QCOMPARE(json.code, 0);
    const nlohmann::json keys = nlohmann::json::parse(json.out.toStdString()).at("keys");
    QCOMPARE(keys.size(), configSchema().size());
    QCOMPARE(keys.front().at("key").get<std::string>(), std::string("name"));  // in the document's order
    std::map<std::string, nlohmann::json> byKey;
    for (const auto& key : keys)
        byKey[key.at("key").get<std::string>()] = key;
    // A few keys as docs/model.md and docs/training.md state them.
    QCOMPARE(byKey.at("model.layers").at("default").get<int>(), 6);
    QCOMPARE(byKey.at("model.layers").at("type").get<std::string>(), std::string("integer"));
    QCOMPARE(byKey.at("model.top_k").at("derived").get<std::string>(), std::string("min(2, experts)"));
    QCOMPARE(byKey.at("model.routing_priority").at("choices"), nlohmann::json({"position", "batch"}));
    QCOMPARE(byKey.at("model.head_dim").at("derived").get<std::string>(), std::string("d_model / heads"));
    QCOMPARE(byKey.at("train.expert_parallel").at("default"), nlohmann::json(false));
    QCOMPARE(byKey.at("train.keep_last").at("range"), nlohmann::json({1, 1000}));
    const CliResult text = cli({"keys"});
    QCOMPARE(text.code, 0);
    QVERIFY2(text.out.contains(QRegularExpression(QStringLiteral("\\n  model\\.top_k +integer, default min\\(2, experts\\) \\(1 to \\d+\\): "))),
             qPrintable(text.out));
}

// ---------------------------------------------------------------- check

void TestCli::checkPrintsResolvedConfiguration()
{
    const CliResult result = cli({"check", "widenet"});
    QCOMPARE(result.code, 0);
    QVERIFY2(result.err.isEmpty(), qPrintable(result.err));
    const nlohmann::json json = nlohmann::json::parse(result.out.toStdString());
    QCOMPARE(q(json.at("name").get<std::string>()), QStringLiteral("WideNet (laptop scale)"));
    const nlohmann::json& model = json.at("model");
    // Derived defaults of widenet.json, which gives none of these keys:
    QCOMPARE(model.at("head_dim").get<int>(), 256 / 8);           // d_model / heads
    QCOMPARE(model.at("router_noise_std").get<double>(), 1.0 / 4);  // 1 / experts
    QCOMPARE(model.at("routing_groups").get<int>(), 6);            // layers
    QCOMPARE(model.at("top_k").get<int>(), 2);                     // given
    QCOMPARE(model.at("share_layernorm").get<bool>(), false);
    QCOMPARE(q(model.at("pooling").get<std::string>()), QStringLiteral("mean"));

    // Every key of the schema, each section holding nothing else.
    std::size_t keys = 0;
    for (const KeySpec& spec : configSchema()) {
        const nlohmann::json& section = spec.section().empty() ? json : json.at(spec.section());
        QVERIFY2(section.contains(spec.name()), qPrintable(q(spec.key)));
        keys += spec.section().empty() ? 0 : 1;
    }
    QCOMPARE(model.size() + json.at("task").size() + json.at("train").size(), keys);

    // What check prints is itself a valid document describing the same model.
    const ModelDocument again = parseModelDocument(result.out.toStdString());
    QVERIFY(again.model.toJson() == model);
    // The whole run as `train widenet` would run it: ListOps, the default training.
    QCOMPARE(q(json.at("task").at("kind").get<std::string>()), QStringLiteral("listops"));
    QCOMPARE(json.at("train").at("steps").get<int>(), 2000);
}

void TestCli::checkReportsEveryIssue_data()
{
    QTest::addColumn<QString>("document");
    QTest::addColumn<QStringList>("issues");

    QTest::newRow("read problems") << R"({"model": {"layers": "six", "pooling": "mena", "colour": 1,
                                                     "dropout": 1.5}})"
                                   << QStringList{"model.layers: expected an integer, got \"six\"",
                                                  "model.pooling: \"mena\" is not one of cls, mean (did you mean "
                                                  "\"mean\"?)",
                                                  "model.colour: unknown key", "model.dropout: 1.5 is outside"};
    QTest::newRow("cross-key problems")
        << R"({"model": {"experts": 2, "top_k": 3, "layers": 6, "routing_groups": 9, "paths": 3}})"
        << QStringList{"model.top_k: 3 exceeds model.experts: 2", "model.routing_groups: 9 exceeds model.layers: 6",
                       "model.paths: multi-path sublayers with a mixture of experts"};
}

void TestCli::checkReportsEveryIssue()
{
    QFETCH(QString, document);
    QFETCH(QStringList, issues);

    QTemporaryDir directory;
    QVERIFY(directory.isValid());
    const QString file = writeFile(directory, QStringLiteral("broken.json"), document.toStdString());
    const CliResult result = cli({"check", file});
    QCOMPARE(result.code, 1);
    QVERIFY2(result.out.isEmpty(), qPrintable(result.out));
    const QStringList errLines = lines(result.err);
    QCOMPARE(errLines.value(0), file + QStringLiteral(": invalid configuration"));
    QCOMPARE(errLines.size(), 1 + issues.size());  // one line per issue, nothing else
    for (const auto& issue : issues)
        QVERIFY2(result.err.contains(issue), qPrintable(issue + QStringLiteral("\nnot in\n") + result.err));
}

void TestCli::deeplyNestedFile_data()
{
    QTest::addColumn<QString>("command");
    QTest::addColumn<QString>("document");
    QTest::addColumn<int>("line");

    const std::string arrays = std::string(100000, '[') + std::string(100000, ']');
    std::string objects;
    for (int i = 0; i < 100000; ++i)
        objects += "{\"a\":";
    objects += '1';
    objects.append(100000, '}');
    QTest::newRow("check, arrays") << "check" << q(arrays) << 1;
    QTest::newRow("check, objects in model.heads") << "check" << q("{\"model\":\n{\"heads\": " + objects + "}}") << 2;
    QTest::newRow("check, arrays in train") << "check" << q("{\"model\": {},\n\n\"train\": " + arrays + "}") << 3;
    QTest::newRow("params, objects") << "params" << q(objects) << 1;
    QTest::newRow("params, arrays in name") << "params" << q("{\"name\": " + arrays + ", \"model\": {}}") << 1;
}

void TestCli::deeplyNestedFile()
{
    QFETCH(QString, command);
    QFETCH(QString, document);
    QFETCH(int, line);

    QTemporaryDir directory;
    const QString file = writeFile(directory, QStringLiteral("deep.json"), document.toStdString());
    const CliResult result = cli({command, file});
    QCOMPARE(result.code, 1);
    QVERIFY2(result.out.isEmpty(), qPrintable(result.out.left(200)));
    QCOMPARE(result.err, file + QStringLiteral(": nesting deeper than 64 levels at line %1\n").arg(line));
}

void TestCli::deeplyNestedFileInTheBinary()
{
    // Used to end in a stack overflow (SIGSEGV); now a message and exit status 1.
    QTemporaryDir directory;
    std::string deep = "{\"model\": {\"layers\": ";
    deep.append(200000, '[');
    deep += "}}";
    const QString file = writeFile(directory, QStringLiteral("deep.json"), deep);
    for (const char* command : {"check", "params"}) {
        QProcess process;
        process.start(QStringLiteral(WIDELAB_CLI), {QString::fromLatin1(command), file});
        QVERIFY(process.waitForFinished(60000));
        QCOMPARE(process.exitStatus(), QProcess::NormalExit);
        QCOMPARE(process.exitCode(), 1);
        const QString err = QString::fromUtf8(process.readAllStandardError());
        QVERIFY2(err.contains(QStringLiteral("nesting deeper than 64 levels at line 1")), qPrintable(err));
    }
}

void TestCli::checkRefusesWhatTrainRefuses_data()
{
    QTest::addColumn<QString>("document");
    QTest::addColumn<QString>("issue");

    const std::string model = R"("model": {"vocab_size": 20, "max_len": 40, "d_model": 32, "layers": 2, "heads": 4,
                                            "ffn_dim": 64})";
    const std::string task = R"("task": {"max_length": 30, "train_size": 32, "validation_size": 8, "test_size": 8})";
    // Each of these used to pass `check` (it read the model alone) or reach the trainer.
    QTest::newRow("train.steps") << q("{" + model + ", " + task + R"(, "train": {"steps": 0}})")
                                 << "train.steps: 0 is outside the allowed range";
    QTest::newRow("listops vocabulary") << q(R"({"model": {"vocab_size": 10, "max_len": 40}, )" + task + "}")
                                        << "model.vocab_size: 10 is smaller than the ListOps vocabulary";
    QTest::newRow("device") << q("{" + model + ", " + task + R"(, "train": {"device": "cuda:1234"}})")
                            << "train.device: \"cuda:1234\" is not auto, cpu, cuda or cuda:N";
    QTest::newRow("language model on listops") << q(R"({"model": {"head": "language_model", "max_len": 40}, )" + task + "}")
                                               << "task.kind: \"listops\" needs model.head \"classification\"";
    QTest::newRow("null") << q("{" + model + ", " + task + R"(, "train": {"batch_size": null}})")
                          << "train.batch_size: null is not allowed; remove the key to use the default 32";
    QTest::newRow("repeated key") << q("{" + model + ", " + task + R"(, "train": {"steps": 5, "steps": 6}})")
                                  << "train.steps: repeated key";
    QTest::newRow("missing data file") << q("{" + model + R"(, "task": {"kind": "classification", "path": "absent.tsv"}})")
                                       << "task.path: no such file: absent.tsv";
}

void TestCli::checkRefusesWhatTrainRefuses()
{
    QFETCH(QString, document);
    QFETCH(QString, issue);

    QTemporaryDir directory;
    const QString file = writeFile(directory, QStringLiteral("run.json"), document.toStdString());
    const CliResult check = cli({"check", file});
    QCOMPARE(check.code, 1);
    QVERIFY2(check.out.isEmpty(), qPrintable(check.out));
    QVERIFY2(check.err.contains(issue), qPrintable(check.err));
    QVERIFY2(check.err.startsWith(file), qPrintable(check.err));

    // train says the same, before it creates anything.
    const QString run = directory.filePath(QStringLiteral("run"));
    const CliResult train = cli({"train", file, "--out", run});
    QCOMPARE(train.code, 1);
    QCOMPARE(train.err, check.err);
    QVERIFY(!QFileInfo::exists(run));
}

void TestCli::checkPrintsWarnings()
{
    QTemporaryDir directory;
    const QString file = writeFile(directory, QStringLiteral("run.json"), R"({"model": {"max_len": 128},
        "train": {"steps": 50, "warmup_steps": 80, "optimizer": "sgd", "beta2": 0.9}})");
    const CliResult result = cli({"check", file});
    QCOMPARE(result.code, 0);
    QCOMPARE(lines(result.err),
             (QStringList{"warning: train.warmup_steps: 80 exceeds train.steps 50: the run ends during warm-up, never "
                          "reaching train.learning_rate",
                          "warning: train.beta2: has no effect with the sgd optimizer"}));
    // The output stays a document.
    const nlohmann::json json = nlohmann::json::parse(result.out.toStdString());
    QCOMPARE(json.at("train").at("warmup_steps").get<int>(), 80);

    // params prints the model's warnings.
    const QString model = writeFile(directory, QStringLiteral("model.json"), R"({"model": {"router_noise_std": 0.1}})");
    const CliResult params = cli({"params", model});
    QCOMPARE(params.code, 0);
    QCOMPARE(lines(params.err), (QStringList{"warning: model.router_noise_std: has no effect without a mixture of "
                                             "experts (model.experts is 1)"}));
}

void TestCli::failingConfiguration_data()
{
    QTest::addColumn<QString>("command");
    QTest::addColumn<QString>("document");  // empty: the file is not created
    QTest::addColumn<QString>("message");

    QTest::newRow("params, missing brace") << "params" << R"({"model": {"layers": 6})" << "not valid JSON";
    QTest::newRow("params, empty file") << "params" << " " << "not valid JSON";
    QTest::newRow("params, top-level array") << "params" << "[1, 2]" << "expected an object";
    QTest::newRow("forward, missing brace") << "forward" << R"({"model": )" << "not valid JSON";
    QTest::newRow("check, no model") << "check" << R"({"name": "x"})" << "model: missing";
    QTest::newRow("params, no such file") << "params" << "" << "no such file, and no preset of that name";
}

void TestCli::failingConfiguration()
{
    QFETCH(QString, command);
    QFETCH(QString, document);
    QFETCH(QString, message);

    QTemporaryDir directory;
    QVERIFY(directory.isValid());
    const QString file = document.isEmpty() ? directory.filePath(QStringLiteral("absent.json"))
                                            : writeFile(directory, QStringLiteral("bad.json"), document.toStdString());
    const CliResult result = cli({command, file});
    QCOMPARE(result.code, 1);
    QVERIFY2(result.out.isEmpty(), qPrintable(result.out));
    QVERIFY2(result.err.contains(message), qPrintable(result.err));
    QVERIFY2(result.err.contains(file), qPrintable(result.err));  // names the file
    QVERIFY2(!result.err.contains(QStringLiteral("usage:")), qPrintable(result.err));
}

// ---------------------------------------------------------------- usage

void TestCli::usageErrors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");

    QTest::newRow("no arguments") << QStringList{} << "usage:";
    QTest::newRow("unknown command") << QStringList{"frobnicate"} << "unknown command \"frobnicate\"";
    QTest::newRow("unknown option") << QStringList{"params", "widenet", "--bogus"} << "unknown option --bogus";
    QTest::newRow("option of another command") << QStringList{"check", "widenet", "--json"} << "unknown option --json";
    QTest::newRow("batch abc") << QStringList{"forward", "widenet", "--batch", "abc"}
                               << "--batch: expected an integer, got \"abc\"";
    QTest::newRow("batch 2x") << QStringList{"forward", "widenet", "--batch", "2x"}
                              << "--batch: expected an integer, got \"2x\"";
    // Strictly: no space around a number, no empty value, no option twice (which one was meant?).
    QTest::newRow("steps with a space") << QStringList{"train", "widenet", "--out", "r", "--steps", " 3"}
                                        << "--steps: expected an integer, got \" 3\"";
    QTest::newRow("steps with a plus") << QStringList{"train", "widenet", "--out", "r", "--steps", "+3"}
                                       << "--steps: expected an integer, got \"+3\"";
    QTest::newRow("steps beyond int64") << QStringList{"train", "widenet", "--out", "r", "--steps", "99999999999999999999"}
                                        << "--steps: 99999999999999999999 is outside 1..";
    QTest::newRow("device empty") << QStringList{"train", "widenet", "--out", "r", "--device", ""}
                                  << "--device needs a value, not an empty one";
    QTest::newRow("steps twice") << QStringList{"train", "widenet", "--out", "r", "--steps", "3", "--steps", "5"}
                                 << "--steps is given twice";
    QTest::newRow("flag twice") << QStringList{"params", "widenet", "--json", "--json"} << "--json is given twice";
    QTest::newRow("batch without value") << QStringList{"forward", "widenet", "--batch"} << "--batch needs a value";
    QTest::newRow("batch 0") << QStringList{"forward", "widenet", "--batch", "0"} << "--batch: 0 is outside";
    // widenet's max_len is 512.
    QTest::newRow("length above max_len") << QStringList{"forward", "widenet", "--length", "513"}
                                          << "--length: 513 is outside 1..512";
    QTest::newRow("no config") << QStringList{"params"} << "expected exactly one CONFIG";
    QTest::newRow("two configs") << QStringList{"params", "widenet", "albert"} << "expected exactly one CONFIG";
    // Options that mean nothing to a command are refused, not silently ignored.
    QTest::newRow("eval --steps") << QStringList{"eval", "run", "--steps", "5"} << "unknown option --steps";
    QTest::newRow("inspect --threads") << QStringList{"inspect", "run", "--text", "x", "--threads", "2"}
                                       << "unknown option --threads";
    QTest::newRow("export --resume") << QStringList{"export", "run", "--out", "m.pt", "--resume"}
                                     << "unknown option --resume";
    QTest::newRow("train without config") << QStringList{"train", "--out", "run"} << "train --resume --out RUN_DIR";
    QTest::newRow("export --format against the name")
        << QStringList{"export", "run", "--out", "m.pt", "--format", "safetensors"}
        << "--format safetensors disagrees with --out m.pt (a .pt file)";
    QTest::newRow("export --format unknown") << QStringList{"export", "run", "--out", "m.bin", "--format", "onnx"}
                                             << "--format onnx: expected safetensors or pt";
}

// export-tb on a hand-written metrics.jsonl (it reads nothing else of a run):
// a malformed line is skipped naming the file and line, the rest is written;
// missing runs, an unwritable LOGDIR and a second export are errors (status 1),
// a missing --out a usage error (2). tests/app/tensorboard_roundtrip.py reads
// real exports back with TensorBoard.
void TestCli::exportTbReportsBadInput()
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
    // train/loss, train/task_loss, 3 time/ and 4 memory/rss/ scalars; validation/loss,
    // accuracy and examples (no perplexity for a classifier's 0).
    QVERIFY2(exported.out.contains("3 lines of metrics.jsonl (1 skipped) as 12 scalars, 0 histograms and 0 images"),
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
void TestCli::exportWritesSafetensorsOrPickleAndSidecars()
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

void TestCli::usageErrors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, message);

    const CliResult result = cli(args);
    QCOMPARE(result.code, 2);
    QVERIFY2(result.out.isEmpty(), qPrintable(result.out));
    QVERIFY2(result.err.contains(message), qPrintable(result.err));
    QVERIFY2(result.err.contains(QStringLiteral("usage:")), qPrintable(result.err));
}

void TestCli::helpAndVersion()
{
    for (const char* flag : {"--help", "-h", "help"}) {
        const CliResult help = cli({flag});
        QCOMPARE(help.code, 0);
        QVERIFY(help.out.contains(QStringLiteral("usage:")));
        QVERIFY(help.err.isEmpty());
    }
    const CliResult version = cli({"--version"});
    QCOMPARE(version.code, 0);
    QVERIFY2(version.out.startsWith(QStringLiteral("widelab-cli 0.1.0 (")), qPrintable(version.out));
    QVERIFY2(!version.out.contains(QStringLiteral("disabled:")), qPrintable(version.out));
    // WIDELAB_DISABLE is read once per process: the binary, in an environment of its own.
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("WIDELAB_DISABLE"), QStringLiteral("fused_adamw,unknown,fused_attention"));
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(WIDELAB_CLI), {QStringLiteral("--version")});
    QVERIFY(process.waitForFinished(60000));
    const QString disabled = QString::fromUtf8(process.readAllStandardOutput());
    QVERIFY2(disabled.contains(QStringLiteral("disabled: fused_attention,fused_adamw, ")), qPrintable(disabled));
}

// --threads holds whatever OMP_NUM_THREADS and OPENBLAS_NUM_THREADS say: LibTorch's
// pool and the BLAS's own both run the count asked for.
void TestCli::threadsPinEveryPool()
{
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("2"));
    environment.insert(QStringLiteral("OPENBLAS_NUM_THREADS"), QStringLiteral("2"));
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(WIDELAB_CLI), {"bench", "widenet", "--batch", "2", "--seq", "16", "--steps", "1",
                                                "--warmup", "0", "--threads", "1", "--json"});
    QVERIFY(process.waitForFinished(120000));
    QCOMPARE(process.exitCode(), 0);
    const auto report = nlohmann::json::parse(process.readAllStandardOutput().toStdString());
    const std::string runtime = report.at("runtime").get<std::string>();
    QVERIFY2(runtime.find(", 1 thread (") != std::string::npos, runtime.c_str());
    if (runtime.find("BLAS: OpenBLAS") != std::string::npos)
        QVERIFY2(runtime.find("BLAS: OpenBLAS (1 thread)") != std::string::npos, runtime.c_str());
}

// ---------------------------------------------------------------- presets

void TestCli::presetsListsEveryShippedPreset()
{
    const auto shipped = test::shippedPresets();
    QVERIFY(!shipped.empty());
    const CliResult result = cli({"presets"});
    QCOMPARE(result.code, 0);
    QVERIFY2(result.err.isEmpty(), qPrintable(result.err));
    const QStringList all = lines(result.out);
    // Header, rule, one row per preset, then the folder they were read from: a
    // test program runs from the build tree, so the source tree's.
    QCOMPARE(all.size(), 2 + int(shipped.size()) + 1);
    QCOMPARE(all.last(), QStringLiteral("%1 presets in " WIDELAB_PRESETS_DIR).arg(shipped.size()));
    for (int i = 0; i < int(shipped.size()); ++i) {
        const QString row = all[2 + i];
        QVERIFY2(row.startsWith(q(shipped[i].first) + QLatin1Char(' ')), qPrintable(row));
        QVERIFY2(row.endsWith(q(shipped[i].second.name)), qPrintable(row));
    }
    // shortCount of widenet's 2,514,954 stored parameters, 3 significant digits.
    QVERIFY(lineStartingWith(result.out, QStringLiteral("widenet ")).contains(QStringLiteral(" 2.51M ")));
}

void TestCli::presetsJson()
{
    const auto shipped = test::shippedPresets();
    const CliResult result = cli({"presets", "--json"});
    QCOMPARE(result.code, 0);
    const nlohmann::json list = nlohmann::json::parse(result.out.toStdString());
    QVERIFY(list.is_array());
    QCOMPARE(int(list.size()), int(shipped.size()));
    for (std::size_t i = 0; i < shipped.size(); ++i) {
        QCOMPARE(q(list[i].at("preset").get<std::string>()), q(shipped[i].first));
        QCOMPARE(q(list[i].at("name").get<std::string>()), q(shipped[i].second.name));
        QCOMPARE(q(list[i].at("description").get<std::string>()), q(shipped[i].second.description));
        if (shipped[i].first == "widenet")
            QCOMPARE(qint64(list[i].at("stored_parameters").get<std::int64_t>()), widenetStored());
    }
}

// Where shipped presets and studies are looked for: $WIDELAB_PRESETS first, then
// the share folder beside the program (BIN/../share/widelab/NAME, what an
// installed package reads), then the source tree. tests/packaging checks the
// installed case with the real package.
void TestCli::shippedFoldersInstalledFirstThenSourceTree()
{
    const QByteArray saved = qgetenv("WIDELAB_PRESETS");
    const auto restore = qScopeGuard([&saved] {
        if (saved.isNull())
            qunsetenv("WIDELAB_PRESETS");
        else
            qputenv("WIDELAB_PRESETS", saved);
    });
    const std::filesystem::path program = QFileInfo(QCoreApplication::applicationFilePath()).canonicalFilePath().toStdString();
    QCOMPARE(q(programDirectory().string()), q(program.parent_path().string()));
    const std::filesystem::path installed = (program.parent_path().parent_path() / "share" / "widelab").lexically_normal();

    qunsetenv("WIDELAB_PRESETS");
    std::vector<std::filesystem::path> folders = presetDirectories();
    QCOMPARE(int(folders.size()), 2);
    QCOMPARE(q(folders[0].string()), q((installed / "presets").string()));
    QCOMPARE(q(folders[1].string()), QStringLiteral(WIDELAB_PRESETS_DIR));
    QCOMPARE(q(shippedPresetDirectory().string()), QStringLiteral(WIDELAB_PRESETS_DIR));

    qputenv("WIDELAB_PRESETS", "/nonexistent/presets");
    folders = presetDirectories();
    QCOMPARE(int(folders.size()), 3);
    QCOMPARE(q(folders[0].string()), QStringLiteral("/nonexistent/presets"));
    // An empty or missing folder is passed over for the next that holds presets.
    QCOMPARE(q(shippedPresetDirectory().string()), QStringLiteral(WIDELAB_PRESETS_DIR));

    // Studies follow the same rule under their own name.
    const std::vector<std::filesystem::path> studies = studyDirectories();
    QVERIFY(studies.size() >= 2);
    QCOMPARE(q(studies[studies.size() - 2].string()), q((installed / "studies").string()));
    QCOMPARE(q(studies.back().filename().string()), QStringLiteral("studies"));
    QCOMPARE(q(studies.back().parent_path().string()), q(std::filesystem::path(WIDELAB_PRESETS_DIR).parent_path().string()));
}

// ---------------------------------------------------------------- forward

void TestCli::forward_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<double>("maxBalance");  // 0: no routing, so the balance loss is exactly 0

    QTest::newRow("transformer-1x48, dense") << "transformer-1x48" << 0.0;
    // Each routing call adds E * sum_e m_e P_e, which is in (0, E] (sum m_e = 1,
    // P_e <= 1); widenet routes G = layers = 6 times with E = 4.
    QTest::newRow("widenet, 6 routing calls") << "widenet" << 4.0 * 6;
}

void TestCli::forward()
{
    QFETCH(QString, preset);
    QFETCH(double, maxBalance);

    const CliResult result = cli({"forward", preset, "--batch", "2", "--length", "8", "--threads", "1"});
    QCOMPARE(result.code, 0);
    QVERIFY2(result.err.isEmpty(), qPrintable(result.err));

    const ModelDocument document = loadModelDocument(resolveConfigPath(preset.toStdString()));
    const QString line = lineStartingWith(result.out, q(document.name) + QStringLiteral(": "));
    QVERIFY2(!line.isEmpty(), qPrintable(result.out));
    QVERIFY2(line.contains(QStringLiteral("batch 2 x 8 tokens")), qPrintable(line));

    const QRegularExpression pattern(QStringLiteral("task loss (\\S+), balance loss (\\S+),"));
    const QRegularExpressionMatch match = pattern.match(line);
    QVERIFY2(match.hasMatch(), qPrintable(line));
    bool ok = false;
    const double task = match.captured(1).toDouble(&ok);
    QVERIFY2(ok, qPrintable(match.captured(1)));
    QVERIFY2(std::isfinite(task), qPrintable(line));
    QVERIFY2(task > 0.0, qPrintable(line));  // cross-entropy of a model that is not certain
    const double balance = match.captured(2).toDouble(&ok);
    QVERIFY2(ok, qPrintable(match.captured(2)));
    QVERIFY2(std::isfinite(balance), qPrintable(line));
    if (maxBalance == 0.0) {
        QCOMPARE(balance, 0.0);
    } else {
        QVERIFY2(balance > 0.0 && balance <= maxBalance, qPrintable(line));
    }
}

// ---------------------------------------------------------------- bench

void TestCli::bench_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("mode");

    QTest::newRow("transformer-1x48, train") << "transformer-1x48" << "train";
    QTest::newRow("widenet, train") << "widenet" << "train";
    QTest::newRow("multipath-3x4-features, infer") << "multipath-3x4-features" << "infer";
}

// The JSON report is complete and consistent with itself; nothing is timed.
void TestCli::bench()
{
    QFETCH(QString, preset);
    QFETCH(QString, mode);

    const CliResult result = cli({"bench", preset, "--mode", mode, "--batch", "2", "--seq", "8", "--steps", "2",
                                  "--warmup", "1", "--threads", "1", "--json"});
    QCOMPARE(result.code, 0);
    QVERIFY2(result.err.isEmpty(), qPrintable(result.err));
    const nlohmann::json r = nlohmann::json::parse(result.out.toStdString());

    QCOMPARE(r.at("mode").get<std::string>(), mode.toStdString());
    QCOMPARE(r.at("batch").get<int>(), 2);
    QCOMPARE(r.at("sequence").get<int>(), 8);
    QCOMPARE(r.at("threads").get<int>(), 1);
    QCOMPARE(r.at("step_seconds").size(), std::size_t{2});
    QVERIFY(!r.at("blas").get<std::string>().empty());
    QVERIFY(r.at("runtime").get<std::string>().find("BLAS: ") != std::string::npos);

    const double step = r.at("step_seconds_median").get<double>();
    const double tokensPerSecond = r.at("tokens_per_second").get<double>();
    const double achieved = r.at("achieved_flops").get<double>();
    const double peak = r.at("peak_flops").get<double>();
    QVERIFY(step > 0.0 && peak > 0.0);
    QVERIFY(std::abs(tokensPerSecond * step - 16.0) < 1e-6 * 16.0);
    QVERIFY(std::abs(achieved * step - r.at("flops_per_step").get<double>()) < 1e-6 * achieved * step);
    QVERIFY(std::abs(r.at("peak_ratio").get<double>() - achieved / peak) < 1e-9 * achieved / peak);

    // Model FLOPs: the forward count per token over 8 tokens (9 with a CLS
    // token) of each of 2 sequences, three times over when training.
    const double passes = mode == QStringLiteral("train") ? 3.0 : 1.0;
    const double perPosition = passes * 2.0 * r.at("forward_flops_per_token").get<double>();
    const double flops = r.at("flops_per_step").get<double>();
    QVERIFY2(flops >= 8.0 * perPosition * (1 - 1e-9) && flops <= 9.0 * perPosition * (1 + 1e-9),
             qPrintable(result.out));
    QVERIFY(r.at("flops_per_step_at_capacity").get<double>() >= flops * (1 - 1e-9));

    const auto& phases = r.at("phase_seconds_per_step");
    for (const char* name : {"attention", "ffn_experts", "routing_dispatch_combine", "paths_residual", "backward",
                             "optimizer", "measurement", "other"}) {
        QVERIFY2(phases.contains(name), name);
        QVERIFY2(phases.at(name).get<double>() >= 0.0, name);
    }
    QVERIFY(phases.at("attention").get<double>() > 0.0);
    QCOMPARE(phases.at("routing_dispatch_combine").get<double>() > 0.0, preset == QStringLiteral("widenet"));
    QCOMPARE(phases.at("optimizer").get<double>() > 0.0, mode == QStringLiteral("train"));

    QCOMPARE(r.at("device").get<std::string>(), std::string("cpu"));
    QCOMPARE(r.at("dtype").get<std::string>(), std::string("fp32"));
    QCOMPARE(r.at("peak_dtype").get<std::string>(), std::string("fp32"));
    QCOMPARE(r.at("mfu").get<double>(), r.at("peak_ratio").get<double>());
    QVERIFY(r.at("mfu_nominal").is_null());
    QVERIFY(r.at("peak_allocated_bytes").get<double>() > 0.0);
    QCOMPARE(r.at("moe_routing_share").is_null(), preset != QStringLiteral("widenet"));
    // The panel's estimate for training steps (none for inference); the host's
    // queue time and CUDA graphs are for GPUs only.
    QCOMPARE(r.at("memory_estimate_bytes").is_null(), mode != QStringLiteral("train"));
    if (mode == QStringLiteral("train"))
        QVERIFY(r.at("memory_estimate_bytes").get<double>() > 0.0);
    QVERIFY(r.at("queue_seconds_median").is_null());
    QCOMPARE(r.at("cuda_graph").get<bool>(), false);

    // Operators of one more step: the innermost ones are among all, and the
    // phases share them out exactly; only a mixture routes, only training
    // runs backward and the optimizer.
    const auto& ops = r.at("operators_per_step");
    const std::int64_t all = ops.at("all").get<std::int64_t>(), innermost = ops.at("innermost").get<std::int64_t>();
    QVERIFY2(innermost > 0 && all > innermost, qPrintable(QString::fromStdString(ops.dump())));
    std::int64_t shared = 0;
    for (const auto& [name, count] : ops.at("innermost_by_phase").items()) {
        QVERIFY2(phases.contains(name), name.c_str());
        shared += count.get<std::int64_t>();
    }
    QCOMPARE(shared, innermost);
    const auto& byPhase = ops.at("innermost_by_phase");
    QCOMPARE(byPhase.at("routing_dispatch_combine").get<std::int64_t>() > 0, preset == QStringLiteral("widenet"));
    QCOMPARE(byPhase.at("backward").get<std::int64_t>() > 0, mode == QStringLiteral("train"));
    QCOMPARE(byPhase.at("optimizer").get<std::int64_t>() > 0, mode == QStringLiteral("train"));
    std::int64_t listed = 0;
    for (const auto& entry : ops.at("most_frequent"))
        listed += entry.at("count").get<std::int64_t>();
    QVERIFY(listed > 0 && listed <= innermost);
}

// --device takes only a device this LibTorch can use, else it is a usage
// error; --bf16 runs under autocast (on the CPU too) and the JSON says so.
// Where CUDA is usable, the same on the GPU: the allocator's peaks, the
// routing share from the synchronised phase pass, the nominal MFU.
void TestCli::benchDevice()
{
    const QStringList common = {"bench", "widenet", "--batch", "2", "--seq", "8", "--steps", "2",
                                "--warmup", "1", "--threads", "1", "--json"};
    const CliResult bf16 = cli(common + QStringList{"--bf16"});
    QCOMPARE(bf16.code, 0);
    const nlohmann::json cpu = nlohmann::json::parse(bf16.out.toStdString());
    QCOMPARE(cpu.at("dtype").get<std::string>(), std::string("bf16"));
    QCOMPARE(cpu.at("peak_dtype").get<std::string>(), std::string("bf16"));
    QVERIFY(std::isfinite(cpu.at("loss").get<double>()));

    const CliResult badName = cli({"bench", "widenet", "--device", "gpu0"});
    QCOMPARE(badName.code, 2);
    QVERIFY2(badName.err.contains(QLatin1String("--device")), qPrintable(badName.err));
    const CliResult badPeak = cli({"bench", "widenet", "--peak-tflops", "fast"});
    QCOMPARE(badPeak.code, 2);
    const CliResult graphOnCpu = cli(common + QStringList{"--cuda-graph"});
    QCOMPARE(graphOnCpu.code, 2);
    QVERIFY2(graphOnCpu.err.contains(QLatin1String("--cuda-graph")), qPrintable(graphOnCpu.err));

    if (!torch::cuda::is_available()) {
        const CliResult noCuda = cli({"bench", "widenet", "--device", "cuda"});
        QCOMPARE(noCuda.code, 2);
        QVERIFY2(noCuda.err.contains(QLatin1String("CUDA")), qPrintable(noCuda.err));
        return;
    }
    const CliResult gpu = cli(common + QStringList{"--device", "cuda", "--bf16", "--peak-tflops", "1000"});
    QCOMPARE(gpu.code, 0);
    const nlohmann::json r = nlohmann::json::parse(gpu.out.toStdString());
    QCOMPARE(r.at("device").get<std::string>(), std::string("cuda:0"));
    QCOMPARE(r.at("dtype").get<std::string>(), std::string("bf16"));
    QVERIFY(std::isfinite(r.at("loss").get<double>()));
    const double allocated = r.at("peak_allocated_bytes").get<double>();
    QVERIFY(allocated > 0.0 && allocated <= r.at("peak_reserved_bytes").get<double>());
    const double share = r.at("moe_routing_share").get<double>();
    QVERIFY(share > 0.0 && share < 1.0);
    QVERIFY(std::abs(r.at("mfu_nominal").get<double>() - r.at("achieved_flops").get<double>() / 1e15) < 1e-9);
    const double queued = r.at("queue_seconds_median").get<double>();
    QVERIFY(queued > 0.0 && queued <= r.at("step_seconds_median").get<double>());
    QVERIFY(r.at("memory_estimate_bytes").get<double>() > 0.0);

    // The same steps captured once as a CUDA graph and replayed: they train
    // (a finite loss), and leave the host almost nothing to queue.
    const CliResult graph = cli(common + QStringList{"--device", "cuda", "--bf16", "--cuda-graph"});
    QCOMPARE(graph.code, 0);
    const nlohmann::json g = nlohmann::json::parse(graph.out.toStdString());
    QCOMPARE(g.at("cuda_graph").get<bool>(), true);
    QVERIFY(std::isfinite(g.at("loss").get<double>()));
    QVERIFY(g.at("tokens_per_second").get<double>() > 0.0);
    QVERIFY(g.at("moe_routing_share").is_null());  // no phase pass for replays
}

void TestCli::benchText()
{
    const CliResult result =
        cli({"bench", "transformer-1x48", "--batch", "1", "--seq", "4", "--steps", "1", "--warmup", "0"});
    QCOMPARE(result.code, 0);
    for (const char* expected : {"tokens/s", "achieved / peak", "fp32 matmul peak", "BLAS: ", "routing_dispatch_combine",
                                 "ATen operators per step", "the most frequent:"})
        QVERIFY2(result.out.contains(QLatin1String(expected)), qPrintable(result.out));

    const CliResult wrongMode = cli({"bench", "transformer-1x48", "--mode", "fast"});
    QCOMPARE(wrongMode.code, 2);
}

// ---------------------------------------------------------------- TextTable

void TestCli::textTableRendersExactly()
{
    // Widths 3 and 2; two spaces between columns; the first column padded on the
    // right, the others on the left; a rule as wide as a row.
    TextTable table({"a", "bb"});
    table.addRow({"ccc", "d"});
    table.addRule();
    table.addRow({"e", "ff"});
    QCOMPARE(q(table.render()), QStringLiteral("a    bb\n"
                                               "-------\n"
                                               "ccc   d\n"
                                               "-------\n"
                                               "e    ff\n"));
}

void TestCli::textTableAlignsColumns()
{
    TextTable table({"part", "stored", "active"});
    table.addRow({"embeddings", widelab::groupDigits(139264), widelab::groupDigits(139264)});
    table.addRow({"experts", widelab::groupDigits(2102272), widelab::groupDigits(1051136)});
    table.addRow({"x", "1", "22"});
    table.addRule();
    table.addRow({"total", widelab::groupDigits(2514954), widelab::groupDigits(1463818)});
    const QStringList all = lines(q(table.render()));
    QCOMPARE(all.size(), 7);  // header, rule, 3 rows, rule, total

    // Widths: "embeddings" 10, "2,102,272" 9 and "2,514,954" 9 -> 10 + 2 + 9 + 2 + 9 = 32.
    for (const auto& line : all)
        QCOMPARE(line.size(), 32);
    QCOMPARE(all[1], QString(32, QLatin1Char('-')));
    QCOMPARE(all[5], QString(32, QLatin1Char('-')));
    // First column left-aligned, the others right-aligned.
    QVERIFY(all[4].startsWith(QStringLiteral("x ")));
    QVERIFY(all[4].endsWith(QStringLiteral(" 22")));
    QCOMPARE(all[4].mid(12, 9), QStringLiteral("        1"));
    QCOMPARE(all[6], QStringLiteral("total       2,514,954  1,463,818"));
}

void TestCli::trainStopsCleanlyOnInterruptAndResumes()
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

void TestCli::damagedLatestCheckpointIsPassedOverOnTheTerminal()
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
    {
        std::fstream file(latest.toStdString(), std::ios::in | std::ios::out | std::ios::binary);
        file.seekg(0, std::ios::end);
        const std::streamoff middle = file.tellg() / 2;
        file.seekg(middle);
        const char byte = static_cast<char>(~file.get());
        file.seekp(middle);
        file.put(byte);
    }
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

void TestCli::headRolesLogitLensAndAblationScans()
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

void TestCli::studyRunsReportsAndContinues()
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

void TestCli::studyStopsOnInterruptAndContinues()
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

void TestCli::studyListsBuiltinStudies()
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

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
