// Tests the widelab-cli commands that read a configuration (app/cli/Commands, through runCli): params
// and its counts worked out by hand, check and its issues and warnings, deeply nested files, attention,
// keys, and presets and the folders they come from.
#include "CliTestSupport.h"

using namespace widelab;
using namespace widelab::clitest;

namespace {

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

}  // namespace

class TestCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
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
    void presetsListsEveryShippedPreset();
    void presetsJson();
    void shippedFoldersInstalledFirstThenSourceTree();
    void attentionListsEveryMechanism();
    void keysListEveryKeyOfTheSchema();
    void diffNamesEachKeyThatDiffersOnceResolved();
    void diffFindsNothingBetweenADefaultAndItsValueWrittenOut();
    void diffRefusesWhatIsNotADocument();
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

void TestCli::diffNamesEachKeyThatDiffersOnceResolved()
{
    QTemporaryDir dir;
    const QString a = writeFile(dir, QStringLiteral("a.json"), R"({"name": "x", "model": {"d_model": 64, "heads": 4}})");
    const QString b = writeFile(dir, QStringLiteral("b.json"), R"({"name": "x", "model": {"d_model": 64, "heads": 8}})");
    const CliResult result = cli({"diff", a, b, "--json"});
    QCOMPARE(result.code, 0);
    const nlohmann::json json = nlohmann::json::parse(result.out.toStdString());
    // heads as written; head_dim derived from it, d_model / heads: 64 / 4 and 64 / 8.
    const nlohmann::json expected = nlohmann::json::parse(R"([
        {"key": "model.head_dim", "a": 16, "b": 8},
        {"key": "model.heads", "a": 4, "b": 8}])");
    QCOMPARE(q(json.at("differences").dump()), q(expected.dump()));

    // The table: a description left out is the empty one.
    const QString c = writeFile(dir, QStringLiteral("c.json"),
                                R"({"name": "x", "description": "mine", "model": {"d_model": 64, "heads": 4}})");
    const CliResult table = cli({"diff", a, c});
    QCOMPARE(table.code, 0);
    QVERIFY2(table.out.startsWith(QStringLiteral("1 key differs between A = ")), qPrintable(table.out));
    const QStringList row = lineStartingWith(table.out, QStringLiteral("description")).split(QLatin1Char(' '), Qt::SkipEmptyParts);
    QCOMPARE(row, QStringList({QStringLiteral("description"), QStringLiteral("\"\""), QStringLiteral("\"mine\"")}));

    // Presets by name: the Wide Attention paper's deep and wide models differ in depth and heads.
    const CliResult presets = cli({"diff", "transformer-6x8", "transformer-1x48", "--json"});
    QCOMPARE(presets.code, 0);
    QMap<QString, QString> byKey;
    const nlohmann::json listed = nlohmann::json::parse(presets.out.toStdString());
    for (const auto& difference : listed.at("differences"))
        byKey.insert(q(difference.at("key").get<std::string>()),
                     q(difference.at("a").dump()) + QStringLiteral(" -> ") + q(difference.at("b").dump()));
    QCOMPARE(byKey.value(QStringLiteral("model.layers")), QStringLiteral("6 -> 1"));
    QCOMPARE(byKey.value(QStringLiteral("model.heads")), QStringLiteral("8 -> 48"));
    QVERIFY(!byKey.contains(QStringLiteral("model.d_model")));
}

void TestCli::diffFindsNothingBetweenADefaultAndItsValueWrittenOut()
{
    QTemporaryDir dir;
    const QString a = writeFile(dir, QStringLiteral("a.json"), R"({"name": "x", "model": {"d_model": 64, "heads": 4}})");
    // train.steps' default is 2,000 and head_dim's 64 / 4.
    const QString b = writeFile(dir, QStringLiteral("b.json"),
                                R"({"name": "x", "model": {"d_model": 64, "heads": 4, "head_dim": 16}, "train": {"steps": 2000}})");
    const CliResult result = cli({"diff", a, b});
    QCOMPARE(result.code, 0);
    QVERIFY2(result.out.startsWith(QStringLiteral("No key differs")), qPrintable(result.out));
}

void TestCli::diffRefusesWhatIsNotADocument()
{
    QTemporaryDir dir;
    const QString a = writeFile(dir, QStringLiteral("a.json"), R"({"name": "x"})");
    QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("empty-run")));
    const CliResult folder = cli({"diff", a, dir.filePath(QStringLiteral("empty-run"))});
    QCOMPARE(folder.code, 1);
    QVERIFY2(folder.err.contains(QStringLiteral("empty-run")) && folder.err.contains(QStringLiteral("config.json")),
             qPrintable(folder.err));
    const QString broken = writeFile(dir, QStringLiteral("broken.json"), "{\"name\": ");
    const CliResult damaged = cli({"diff", a, broken});
    QCOMPARE(damaged.code, 1);
    QVERIFY2(damaged.err.contains(QStringLiteral("broken.json")), qPrintable(damaged.err));
    const CliResult one = cli({"diff", a});
    QCOMPARE(one.code, 2);
    QVERIFY2(one.err.contains(QStringLiteral("two runs")), qPrintable(one.err));
}

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
