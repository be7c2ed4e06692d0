// Tests core/train/RunConfig: a run document (model, task, train) is refused for
// everything `train` would refuse before reading its data (the check `check` shares),
// null, repeated keys and deep nesting in any section, absurd sizes, and the warnings;
// and the run directory's own files go through the same bounded parser.
#include "TestSupport.h"
#include "vocab/KeyRules.h"
#include "vocab/ConfigError.h"
#include "config/ConfigSchema.h"
#include "vocab/JsonText.h"
#include "config/Presets.h"
#include "data/ListOps.h"
#include "model/ParameterCount.h"
#include "train/RunConfig.h"
#include "run/RunDirectory.h"
#include "run/RunStatus.h"
#include "train/Trainer.h"

#include <QtTest>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

using namespace widelab;

namespace {

// The trainer's checks of the document alone: past its memory check, which asks
// this machine (check warns about it; train refuses without --force).
TrainerOptions documentOnly()
{
    TrainerOptions options;
    options.force = true;
    return options;
}

QString q(const std::string& text) { return QString::fromStdString(text); }

QString joined(const std::vector<ConfigIssue>& issues)
{
    QStringList lines;
    for (const auto& issue : issues)
        lines << q(issue.text());
    return lines.join(QStringLiteral(" | "));
}

// A small run that trains on the CPU in seconds: tinyRun's model and task.
const char* kTiny = R"({
    "model": {"vocab_size": 20, "max_len": 40, "d_model": 32, "layers": 2, "heads": 4, "ffn_dim": 64,
              "num_classes": 10},
    "task": {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 64, "validation_size": 16,
             "test_size": 16},
    "train": {"steps": 20, "batch_size": 8, "warmup_steps": 5, "device": "cpu", "threads": 1}})";

// kTiny (or `base`) with `patch` merged in (JSON merge patch; null removes a key).
std::string document(const std::string& patch, const std::string& base = kTiny)
{
    nlohmann::json json = nlohmann::json::parse(base);
    json.merge_patch(nlohmann::json::parse(patch));
    return json.dump();
}

std::optional<ConfigError> runError(const std::string& text, const std::string& origin = "")
{
    try {
        parseRunDocument(text, origin);
    } catch (const ConfigError& error) {
        return error;
    }
    return std::nullopt;
}

std::string nestedArrays(int depth)
{
    return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']');
}

QString writeFile(const QString& path, const std::string& text)
{
    std::ofstream(path.toStdString(), std::ios::binary) << text;
    return path;
}

// Text files for the file tasks: 400 labelled rows, and about 20 kB of prose.
void writeDataFiles(const QTemporaryDir& dir)
{
    std::ostringstream rows;
    for (int i = 0; i < 400; ++i)
        rows << (i % 2) << "\t" << (i % 2 ? "a fine example number " : "a poor example number ") << i << "\n";
    writeFile(dir.filePath(QStringLiteral("rows.tsv")), rows.str());
    std::ostringstream prose;
    for (int i = 0; i < 400; ++i)
        prose << "The quick brown fox " << i << " jumps over the lazy dog.\n";
    writeFile(dir.filePath(QStringLiteral("prose.txt")), prose.str());
}

}  // namespace

class TestRunConfig : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();

    // What train would refuse, the document check refuses.
    void checkAcceptedIsTrainAccepted_data();
    void checkAcceptedIsTrainAccepted();
    void shippedPresetsAsRuns();
    void documentOnlyChecks_data();
    void documentOnlyChecks();
    void deviceNames_data();
    void deviceNames();

    // Malformed input in the run sections.
    void deepNestingInRunSections_data();
    void deepNestingInRunSections();
    void nullInRunSections_data();
    void nullInRunSections();
    void repeatedKeyInRunSections();

    // Warnings.
    void warnings_data();
    void warnings();
    void resolvedDocumentsWarnOfNothing();
    void trainerLogsTheWarnings();

    // The run directory's files.
    void runDirectoryFilesAreBounded();

    // The schema (config/ConfigSchema) the readers and the panel share.
    void schemaListsEveryKeyWithItsDefault();
    void readersTakeTheSchemasRanges();
    void derivedKeysNameTheirRule();
    void applicabilityRulesNameSchemaKeys();
    void resolvingNeverFailsAndFollowsTheRules();

private:
    QTemporaryDir m_data;
};

void TestRunConfig::initTestCase()
{
    QVERIFY(m_data.isValid());
    writeDataFiles(m_data);
}

// ---------------------------------------------------------------- check == train

void TestRunConfig::checkAcceptedIsTrainAccepted_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("refusedKey");  // empty: accepted

    const std::string rows = m_data.filePath(QStringLiteral("rows.tsv")).toStdString();
    const std::string prose = m_data.filePath(QStringLiteral("prose.txt")).toStdString();
    const std::string classification = R"({"model": {"vocab_size": 258, "num_classes": 2},
        "task": {"kind": "classification", "path": ")" + rows + R"(", "validation_fraction": 0.1}})";
    const std::string language = R"({"model": {"vocab_size": 258, "max_len": 16, "head": "language_model"},
        "task": {"kind": "language_model", "path": ")" + prose + R"(", "validation_fraction": 0.1}})";

    // rows.tsv's lines are "source TAB target" pairs too (a digit into a sentence).
    const std::string translation = R"({"model": {"head": "translation", "vocab_size": 300, "max_len": 64},
        "task": {"kind": "translation", "path": ")" + rows + R"(", "tokenizer": "bpe", "bpe_merges": 10,
                 "max_subwords": 63, "validation_fraction": 0.1}})";

    QTest::newRow("listops") << q(document("{}")) << "";
    QTest::newRow("translation") << q(document(translation)) << "";
    QTest::newRow("translation, two files")
        << q(document(R"({"task": {"target_path": ")" + prose + R"("}})", document(translation))) << "";
    QTest::newRow("classification, bytes") << q(document(classification)) << "";
    QTest::newRow("classification, characters")
        << q(document(classification))
               .replace(QStringLiteral("\"kind\":\"classification\""),
                        QStringLiteral("\"kind\":\"classification\",\"tokenizer\":\"character\",\"vocab_limit\":20"))
        << "";
    QTest::newRow("language model, bytes") << q(document(language)) << "";
    QTest::newRow("language model, words")
        << q(document(R"({"task": {"tokenizer": "word", "vocab_limit": 200}})", document(language))) << "";

    // Each refused before the trainer starts (they used to pass the document
    // check and fail, or hang, only once training began).
    QTest::newRow("listops, vocabulary too small") << q(document(R"({"model": {"vocab_size": 10}})"))
                                                   << "model.vocab_size";
    QTest::newRow("bytes, vocabulary 256") << q(document(R"({"model": {"vocab_size": 256}})", document(classification)))
                                           << "model.vocab_size";
    QTest::newRow("device cuda:1234") << q(document(R"({"train": {"device": "cuda:1234"}})")) << "train.device";
    QTest::newRow("device with 20 digits") << q(document(R"({"train": {"device": "cuda:99999999999999999999"}})"))
                                           << "train.device";
    QTest::newRow("no validation split")
        << q(document(R"({"task": {"validation_fraction": 0}})", document(classification))) << "task.validation_fraction";
    QTest::newRow("listops, 2^40 examples") << q(document(R"({"task": {"train_size": 1099511627776}})"))
                                            << "task.train_size";
    QTest::newRow("listops, five classes") << q(document(R"({"model": {"num_classes": 5}})")) << "model.num_classes";
    QTest::newRow("language model, classification head")
        << q(document(R"({"model": {"head": "classification"}})", document(language))) << "task.kind";
    QTest::newRow("sequence longer than max_len") << q(document(R"({"task": {"sequence_length": 41}})"))
                                                  << "task.sequence_length";
    QTest::newRow("translation, byte tokenizer")
        << q(document(R"({"task": {"tokenizer": "byte"}})", document(translation))) << "task.tokenizer";
    QTest::newRow("translation, pairs longer than the model's positions")
        << q(document(R"({"task": {"max_subwords": 64}})", document(translation))) << "task.max_subwords";
    QTest::newRow("translation, missing target file")
        << q(document(R"({"task": {"target_path": "/nonexistent/es.txt"}})", document(translation)))
        << "task.target_path";
    QTest::newRow("translation task, classification head")
        << q(document(R"({"model": {"head": "classification"}})", document(translation))) << "task.kind";
    QTest::newRow("translation head, language-model task")
        << q(document(R"({"model": {"head": "translation"}})", document(language))) << "model.head";
    QTest::newRow("path is a directory")
        << q(document(R"({"task": {"path": ")" + m_data.path().toStdString() + R"("}})", document(classification)))
        << "task.path";
}

void TestRunConfig::checkAcceptedIsTrainAccepted()
{
    QFETCH(QString, text);
    QFETCH(QString, refusedKey);

    std::optional<RunDocument> run;
    try {
        run = parseRunDocument(text.toStdString(), "run.json");
    } catch (const ConfigError& error) {
        QVERIFY2(!refusedKey.isEmpty(), error.what());
        bool named = false;
        for (const ConfigIssue& issue : error.issues())
            named = named || q(issue.key) == refusedKey;
        QVERIFY2(named, error.what());
        return;
    }
    QVERIFY2(refusedKey.isEmpty(), qPrintable(refusedKey + QStringLiteral(" was accepted")));
    // Accepted by the check: the trainer starts (reads the data, builds the model).
    QTemporaryDir directory;
    try {
        Trainer trainer(*run, directory.filePath(QStringLiteral("run")).toStdString(), documentOnly());
        QVERIFY(trainer.totalSteps() > 0);
    } catch (const std::exception& error) {
        QFAIL(qPrintable(QStringLiteral("check accepted it, the trainer refused: ") + error.what()));
    }
}

void TestRunConfig::shippedPresetsAsRuns()
{
    // Each preset as `train PRESET` reads it (its default task, ListOps), with
    // small splits: whatever the document check accepts, the trainer starts.
    int accepted = 0;
    for (const std::string& name : listPresets()) {
        std::ostringstream text;
        text << std::ifstream(resolveConfigPath(name), std::ios::binary).rdbuf();
        const std::string patched = document(
            R"({"task": {"train_size": 16, "validation_size": 8, "test_size": 8}, "train": {"device": "cpu", "threads": 1}})",
            text.str());
        std::optional<RunDocument> run;
        try {
            run = parseRunDocument(patched, name);
        } catch (const ConfigError& error) {
            // A language-model preset, or one whose max_len is shorter than ListOps' expressions.
            QVERIFY2(!error.issues().empty() && !error.issues().back().key.empty(), error.what());
            continue;
        }
        ++accepted;
        if (modelCost(run->model).total.stored > 50'000'000)
            continue;  // building a paper-scale model here adds time and proves nothing more
        QTemporaryDir directory;
        try {
            Trainer trainer(*run, directory.filePath(QStringLiteral("run")).toStdString(), documentOnly());
        } catch (const std::exception& error) {
            QFAIL(qPrintable(q(name) + QStringLiteral(": check accepted it, the trainer refused: ") + error.what()));
        }
    }
    QVERIFY2(accepted >= 5, qPrintable(QString::number(accepted)));
}

void TestRunConfig::documentOnlyChecks_data()
{
    QTest::addColumn<QString>("patch");
    QTest::addColumn<QString>("issue");

    QTest::newRow("listops vocabulary")
        << R"({"model": {"vocab_size": 10}})"
        << QStringLiteral("model.vocab_size: 10 is smaller than the ListOps vocabulary (%1 tokens)")
               .arg(listOpsTokenizer().vocabSize());
    QTest::newRow("listops sizes")
        << R"({"task": {"train_size": 200000000, "max_length": 30}})"
        << "task.train_size: ListOps is generated up front: 200000000 + 16 + 16 examples of up to 30 tokens exceed the "
           "2^32 tokens WideLab generates; lower the sizes or task.max_length";
    QTest::newRow("device") << R"({"train": {"device": "cuda:0:1"}})"
                            << "train.device: \"cuda:0:1\" is not auto, cpu, cuda or cuda:N";
    QTest::newRow("missing file") << R"({"model": {"vocab_size": 258}, "task": {"kind": "classification",
                                        "path": "/nonexistent/rows.tsv"}})"
                                  << "task.path: no such file: /nonexistent/rows.tsv";
    QTest::newRow("byte vocabulary") << R"({"model": {"vocab_size": 257}, "task": {"kind": "language_model",
                                           "path": "/nonexistent/prose.txt"}})"
                                     << "model.vocab_size: 257 is smaller than the byte tokenizer's vocabulary "
                                        "(258 tokens)";
    QTest::newRow("translation model on ListOps")
        << R"({"model": {"head": "translation"}})"
        << "model.head: \"translation\" trains on pairs of texts: it needs task.kind \"translation\"";
    QTest::newRow("translation, 250 subword units in 128 positions")
        << R"({"model": {"head": "translation", "vocab_size": 300}, "task": {"kind": "translation",
              "path": "/nonexistent/pairs.tsv", "tokenizer": "bpe"}})"
        << "task.max_subwords: 250 subword units and the </s> (or <s>) of a target need model.max_len 251, which is "
           "40";
    // Images.
    QTest::newRow("image model on ListOps") << R"({"model": {"input": "image"}})"
                                            << "model.input: \"listops\" is a text task: it needs model.input \"tokens\"";
    QTest::newRow("token model on shapes") << R"({"task": {"kind": "shapes"}})"
                                           << "model.input: \"shapes\" is an image task: it needs model.input \"image\"";
    QTest::newRow("image folder without a path") << R"({"model": {"input": "image"}, "task": {"kind": "image_folder"}})"
                                                 << "task.path: missing: \"image_folder\" reads its images from a folder";
    QTest::newRow("CIFAR-10 folder missing")
        << R"({"model": {"input": "image"}, "task": {"kind": "cifar10", "path": "/nonexistent/cifar"}})"
        << "task.path: no such folder: /nonexistent/cifar";
    QTest::newRow("Fashion-MNIST folder missing")
        << R"({"model": {"input": "image"}, "task": {"kind": "fashion_mnist", "path": "/nonexistent/fm"}})"
        << "task.path: no such folder: /nonexistent/fm";
    QTest::newRow("Fashion-MNIST with 5 classes")
        << R"({"model": {"input": "image", "num_classes": 5}, "task": {"kind": "fashion_mnist"}})"
        << "model.num_classes: \"fashion_mnist\" has 10 classes, got 5";
    QTest::newRow("shapes with 5 classes") << R"({"model": {"input": "image", "num_classes": 5}, "task": {"kind": "shapes"}})"
                                           << "model.num_classes: \"shapes\" has 10 classes, got 5";
    QTest::newRow("crop padding as large as the image")
        << R"({"model": {"input": "image", "image_size": 8, "patch_size": 4}, "task": {"kind": "shapes", "crop_padding": 8}})"
        << "task.crop_padding: 8 is not below model.image_size (8): a crop could hold no pixel of the image";
}

void TestRunConfig::documentOnlyChecks()
{
    QFETCH(QString, patch);
    QFETCH(QString, issue);

    const auto error = runError(document(patch.toStdString()));
    QVERIFY(error.has_value());
    QStringList texts;
    for (const ConfigIssue& i : error->issues())
        texts << q(i.text());
    QVERIFY2(texts.contains(issue), qPrintable(texts.join(QLatin1Char('\n'))));
}

void TestRunConfig::deviceNames_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("valid");

    for (const char* name : {"auto", "cpu", "cuda", "cuda:0", "cuda:7", "cuda:999"})
        QTest::newRow(name) << name << true;
    for (const char* name : {"", "gpu", "CPU", "cuda:", "cuda:1000", "cuda:-1", "cuda:0:1", " cpu", "mps"})
        QTest::newRow(qPrintable(QStringLiteral("bad '%1'").arg(QString::fromLatin1(name)))) << name << false;
}

void TestRunConfig::deviceNames()
{
    QFETCH(QString, name);
    QFETCH(bool, valid);
    QCOMPARE(isDeviceName(name.toStdString()), valid);
    // The document says the same.
    const auto error = runError(document(nlohmann::json{{"train", {{"device", name.toStdString()}}}}.dump()));
    QCOMPARE(!error.has_value(), valid);
}

// ---------------------------------------------------------------- malformed input

void TestRunConfig::deepNestingInRunSections_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("line");

    const std::string deep = nestedArrays(10000);
    QTest::newRow("train.steps") << q("{\"model\": {},\n\"train\": {\"steps\": " + deep + "}}") << 2;
    QTest::newRow("task.path") << q("{\"model\": {}, \"task\": {\"path\": " + deep + "}}") << 1;
    QTest::newRow("train.probes") << q("{\"model\": {}, \"train\": {\"probes\": [\"a\",\n\n" + deep + "]}}") << 3;
    QTest::newRow("a whole section") << q("{\"model\": {}, \"task\": " + deep + "}") << 1;
}

void TestRunConfig::deepNestingInRunSections()
{
    QFETCH(QString, text);
    QFETCH(int, line);

    const auto error = runError(text.toStdString(), "run.json");
    QVERIFY(error.has_value());
    QCOMPARE(QString::fromUtf8(error->what()), QStringLiteral("run.json: nesting deeper than 64 levels at line %1").arg(line));
}

void TestRunConfig::nullInRunSections_data()
{
    QTest::addColumn<QString>("patch");
    QTest::addColumn<QString>("issue");

    // A merge patch's null removes a key, so the nulls are written into the text below.
    QTest::newRow("train.steps") << R"("train": {"steps": null})"
                                 << "train.steps: null is not allowed; remove the key to use the default 2000";
    QTest::newRow("train.learning_rate") << R"("train": {"learning_rate": null})"
                                         << "train.learning_rate: null is not allowed; remove the key to use the "
                                            "default 0.001";
    QTest::newRow("train.device") << R"("train": {"device": null})"
                                  << "train.device: null is not allowed; remove the key to use the default \"auto\"";
    QTest::newRow("task.kind") << R"("task": {"kind": null})"
                               << "task.kind: null is not allowed; remove the key to use the default \"listops\"";
    QTest::newRow("train.probes") << R"("train": {"probes": null})"
                                  << "train.probes: null is not allowed; remove the key to use the default";
    QTest::newRow("a whole section") << R"("train": null)" << "train: expected an object, got null";
}

void TestRunConfig::nullInRunSections()
{
    QFETCH(QString, patch);
    QFETCH(QString, issue);

    const auto error = runError("{\"model\": {}, " + patch.toStdString() + "}");
    QVERIFY(error.has_value());
    QCOMPARE(int(error->issues().size()), 1);
    QCOMPARE(q(error->issues().front().text()), issue);
}

void TestRunConfig::repeatedKeyInRunSections()
{
    const auto error = runError(R"({"model": {}, "train": {"steps": 10, "batch_size": 4, "steps": 20}})", "run.json");
    QVERIFY(error.has_value());
    QCOMPARE(int(error->issues().size()), 2);
    QCOMPARE(q(error->issues()[1].key), QStringLiteral("train.steps"));
    QVERIFY(q(error->issues()[1].reason).startsWith(QStringLiteral("repeated key")));
}

// ---------------------------------------------------------------- warnings

void TestRunConfig::warnings_data()
{
    QTest::addColumn<QString>("patch");
    QTest::addColumn<QString>("base");  // "listops" (kTiny) or "file" (a classification file)
    QTest::addColumn<QStringList>("keys");

    QTest::newRow("none") << "{}" << "listops" << QStringList{};
    QTest::newRow("warm-up longer than the run") << R"({"train": {"warmup_steps": 50}})" << "listops"
                                                 << QStringList{"train.warmup_steps"};
    QTest::newRow("warm-up by default, short run") << R"({"train": {"warmup_steps": null, "steps": 50}})" << "listops"
                                                   << QStringList{"train.warmup_steps"};
    QTest::newRow("warm-up of a constant schedule") << R"({"train": {"schedule": "constant", "warmup_steps": 5}})"
                                                    << "listops" << QStringList{"train.warmup_steps"};
    QTest::newRow("min ratio without cosine") << R"({"train": {"schedule": "inverse_sqrt",
                                                    "min_learning_rate_ratio": 0.1}})"
                                              << "listops" << QStringList{"train.min_learning_rate_ratio"};
    QTest::newRow("momentum of adamw") << R"({"train": {"momentum": 0.5}})" << "listops"
                                       << QStringList{"train.momentum"};
    QTest::newRow("betas of sgd") << R"({"train": {"optimizer": "sgd", "beta1": 0.8, "epsilon": 1e-6}})" << "listops"
                                  << QStringList{"train.beta1", "train.epsilon"};
    QTest::newRow("momentum at its default") << R"({"train": {"momentum": 0.9}})" << "listops" << QStringList{};
    QTest::newRow("eval and logging after the run")
        << R"({"train": {"eval_every": 21, "log_every": 100, "checkpoint_every": 20}})" << "listops"
        << QStringList{"train.eval_every", "train.log_every"};
    QTest::newRow("tokenizer for listops") << R"({"task": {"tokenizer": "word", "vocab_limit": 100}})" << "listops"
                                           << QStringList{"task.tokenizer", "task.vocab_limit"};
    QTest::newRow("path for listops") << R"({"task": {"path": "x.tsv", "validation_fraction": 0.1}})" << "listops"
                                      << QStringList{"task.path", "task.validation_fraction"};
    QTest::newRow("listops sizes for a file") << R"({"task": {"train_size": 10, "max_length": 10}})" << "file"
                                              << QStringList{"task.max_length", "task.train_size"};
    QTest::newRow("vocab_limit of bytes") << R"({"task": {"vocab_limit": 100}})" << "file"
                                          << QStringList{"task.vocab_limit"};
    QTest::newRow("vocab_limit above vocab_size") << R"({"task": {"tokenizer": "word", "vocab_limit": 300}})" << "file"
                                                  << QStringList{"task.vocab_limit"};
    QTest::newRow("model warnings too") << R"({"model": {"capacity_factor": 2}})" << "listops"
                                        << QStringList{"model.capacity_factor"};
}

void TestRunConfig::warnings()
{
    QFETCH(QString, patch);
    QFETCH(QString, base);
    QFETCH(QStringList, keys);

    const std::string rows = m_data.filePath(QStringLiteral("rows.tsv")).toStdString();
    const std::string start = base == QLatin1String("file")
                                  ? document(R"({"model": {"vocab_size": 258, "num_classes": 2},
                                       "task": {"kind": "classification", "path": ")" + rows + R"(",
                                       "min_length": null, "max_length": null, "train_size": null,
                                       "validation_size": null, "test_size": null}})")
                                  : std::string(kTiny);
    RunDocument run;
    try {
        run = parseRunDocument(document(patch.toStdString(), start));
    } catch (const ConfigError& error) {
        QFAIL(error.what());
    }
    QStringList got;
    for (const ConfigIssue& warning : run.warnings)
        got << q(warning.key);
    QCOMPARE(got, keys);
    if (keys.contains(QStringLiteral("train.warmup_steps")) && !patch.contains(QStringLiteral("constant")))
        QVERIFY2(q(run.warnings.front().reason).contains(QStringLiteral("the run ends during warm-up")),
                 qPrintable(joined(run.warnings)));
}

void TestRunConfig::resolvedDocumentsWarnOfNothing()
{
    // What `check` prints and a run's config.json hold: every key written out,
    // most of them without effect for this run, all at their defaults.
    for (const std::string& text : {std::string(kTiny), document(R"({"model": {"vocab_size": 258, "head": "language_model"},
                                        "task": {"kind": "language_model", "path": "/nonexistent"},
                                        "train": {"optimizer": "sgd"}})")}) {
        const RunDocument run = parseRunDocument(text, "", /*requireDataFiles=*/false);
        const RunDocument again = parseRunDocument(run.toJson().dump(), "", false);
        QVERIFY2(again.warnings.size() == run.warnings.size(), qPrintable(joined(again.warnings)));
    }
}

void TestRunConfig::trainerLogsTheWarnings()
{
    QTemporaryDir directory;
    const RunDocument run = parseRunDocument(document(R"({"train": {"warmup_steps": 50}})"));
    QCOMPARE(int(run.warnings.size()), 1);
    const std::filesystem::path runDirectory = directory.filePath(QStringLiteral("run")).toStdString();
    {
        Trainer trainer(run, runDirectory);
    }
    std::ostringstream log;
    log << std::ifstream(runDirectory / "log.txt").rdbuf();
    QVERIFY2(q(log.str()).contains(q(run.warnings.front().text())), qPrintable(q(log.str())));
}

// ---------------------------------------------------------------- run directory

void TestRunConfig::runDirectoryFilesAreBounded()
{
    QTemporaryDir directory;
    const std::filesystem::path run = directory.path().toStdString();
    const std::string deep = nestedArrays(100000);

    // config.json
    writeFile(q((run / "config.json").string()), deep);
    try {
        readRunDocument(run);
        QFAIL("a deep config.json was read");
    } catch (const ConfigError& error) {
        QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("config.json: nesting deeper than 64 levels")),
                 error.what());
    }

    // tokenizer.json, read after a valid config.json
    writeFile(q((run / "config.json").string()), parseRunDocument(kTiny).toJson().dump());
    writeFile(q((run / "tokenizer.json").string()), "{\"kind\": \"word\", \"tokens\": " + deep + "}");
    try {
        openRun(run);
        QFAIL("a deep tokenizer.json was read");
    } catch (const DataError& error) {
        QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("tokenizer.json: nesting deeper than 64")),
                 error.what());
    }
    writeFile(q((run / "tokenizer.json").string()), R"({"kind": "word", "kind": "byte"})");
    try {
        openRun(run);
        QFAIL("a tokenizer.json with a repeated key was read");
    } catch (const DataError& error) {
        QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("kind: repeated key")), error.what());
    }

    // status.json: reported as unreadable, not a crash.
    std::string reason;
    QVERIFY(!parseRunStatus(deep, &reason).has_value());
    QVERIFY(!reason.empty());
}

void TestRunConfig::schemaListsEveryKeyWithItsDefault()
{
    // Reading a document that gives no key: every value is a default, and the
    // schema must state the same one (and list exactly the keys written).
    nlohmann::json resolved = parseRunDocument(R"({"model": {}})").toJson();
    resolved["name"] = "";
    resolved["description"] = "";
    std::set<std::string> written;
    for (const auto& [section, value] : resolved.items()) {
        if (!value.is_object()) {
            written.insert(section);
            continue;
        }
        for (const auto& item : value.items())
            written.insert(section + "." + item.key());
    }
    std::set<std::string> listed;
    for (const KeySpec& spec : configSchema()) {
        QVERIFY2(listed.insert(spec.key).second, qPrintable(q(spec.key + " is listed twice")));
        const nlohmann::json& value = spec.section().empty() ? resolved.at(spec.key)
                                                             : resolved.at(spec.section()).at(spec.name());
        QVERIFY2(value == spec.defaultValue,
                 qPrintable(q(spec.key + ": read " + value.dump() + ", schema " + spec.defaultValue.dump())));
        if (spec.type == KeyType::Choice)
            QVERIFY2(std::find(spec.choices.begin(), spec.choices.end(), spec.defaultValue.get<std::string>())
                         != spec.choices.end(),
                     qPrintable(q(spec.key)));
    }
    QVERIFY(listed == written);
    // model: 41, model.attention and attention_mix, and the mechanisms' own keys; task 23, train 34.
    QCOMPARE(configSchema().size(), std::size_t{2 + 41 + 2 + ModelConfig::defaultAttentionOptions().size() + 23 + 34});
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, keySpec("model.not_a_key"));
}

void TestRunConfig::readersTakeTheSchemasRanges()
{
    // Just past each end of a key's range, and a choice that is none of the
    // schema's, the reader refuses that key; at each end it accepts it.
    auto issuesFor = [](const KeySpec& spec, const nlohmann::json& value) {
        nlohmann::json document = {{"model", nlohmann::json::object()}};
        document[spec.section()][spec.name()] = value;
        std::vector<std::string> keys;
        try {
            parseRunDocument(document.dump(), "", false);
        } catch (const ConfigError& error) {
            for (const ConfigIssue& issue : error.issues())
                if (issue.reason.find("outside the allowed range") != std::string::npos
                    || issue.reason.find("is not one of") != std::string::npos)
                    keys.push_back(issue.key);
        }
        return keys;
    };
    int checked = 0;
    for (const KeySpec& spec : configSchema()) {
        const std::vector<std::string> only = {spec.key};
        if (spec.type == KeyType::Integer) {
            const auto min = static_cast<std::int64_t>(spec.min), max = static_cast<std::int64_t>(spec.max);
            QVERIFY2(issuesFor(spec, min - 1) == only, qPrintable(q(spec.key)));
            QVERIFY2(issuesFor(spec, max + 1) == only, qPrintable(q(spec.key)));
            QVERIFY2(issuesFor(spec, min).empty() && issuesFor(spec, max).empty(), qPrintable(q(spec.key)));
            ++checked;
        } else if (spec.type == KeyType::Number) {
            const double span = spec.max - spec.min;
            QVERIFY2(issuesFor(spec, spec.min - span) == only, qPrintable(q(spec.key)));
            QVERIFY2(issuesFor(spec, spec.max + span) == only, qPrintable(q(spec.key)));
            QVERIFY2(issuesFor(spec, spec.min).empty() && issuesFor(spec, spec.max).empty(), qPrintable(q(spec.key)));
            ++checked;
        } else if (spec.type == KeyType::Choice) {
            QVERIFY2(issuesFor(spec, "not-a-choice") == only, qPrintable(q(spec.key)));
            for (const std::string& choice : spec.choices)
                QVERIFY2(issuesFor(spec, choice).empty(), qPrintable(q(spec.key + " " + choice)));
            ++checked;
        }
    }
    QVERIFY(checked > 50);
}

void TestRunConfig::derivedKeysNameTheirRule()
{
    std::set<std::string> derived;
    for (const KeySpec& spec : configSchema()) {
        if (!spec.derived())
            continue;
        derived.insert(spec.key);
        QVERIFY2(!spec.dependsOn.empty(), qPrintable(q(spec.key)));
        for (const std::string& input : spec.dependsOn)
            QVERIFY2(keySpec(input).key == input, qPrintable(q(input)));
    }
    QVERIFY((derived == std::set<std::string>{"model.head_dim", "model.ffn_dim", "model.top_k", "model.router_noise_std",
                                               "model.routing_groups", "model.eval_capacity_factor",
                                               "model.decoder_layers", "model.decoder_paths"}));
    QCOMPARE(q(keySpec("model.head_dim").derivedRule), QStringLiteral("d_model / heads"));
    QCOMPARE(q(keySpec("model.routing_groups").derivedRule), QStringLiteral("layers"));
}

// The table of when a key has an effect (vocab/KeyRules) knows no schema: every key
// it names, and every choice its rules compare with, must be the schema's.
void TestRunConfig::applicabilityRulesNameSchemaKeys()
{
    for (const KeyRule& rule : keyRules())
        for (const std::string& key : rule.keys)
            QVERIFY2(std::any_of(configSchema().begin(), configSchema().end(),
                                 [&](const KeySpec& spec) { return spec.key == key; }),
                     qPrintable(q(key)));
    const std::vector<std::pair<const char*, const char*>> compared = {
        {"model.input", "image"},        {"model.head", "language_model"}, {"model.attention", "mixed"},
        {"task.kind", "listops"},        {"task.kind", "image_folder"},    {"task.kind", "cifar10"},
        {"task.kind", "shapes"},         {"task.kind", "fashion_mnist"},   {"task.tokenizer", "byte"},       {"train.optimizer", "sgd"},
        {"train.schedule", "constant"},  {"train.schedule", "warmup_cosine"}};
    for (const auto& [key, choice] : compared) {
        const std::vector<std::string>& choices = keySpec(key).choices;
        QVERIFY2(std::find(choices.begin(), choices.end(), choice) != choices.end(), choice);
    }
}

void TestRunConfig::resolvingNeverFailsAndFollowsTheRules()
{
    // Values worked out by hand from the rules: 512 / 16, 4 x 512, min(2, 8), 1 / 8, 12.
    const auto resolved = resolveRunDocument(nlohmann::json::parse(
        R"({"model": {"d_model": 512, "heads": 16, "experts": 8, "layers": 12}, "train": {"steps": 7}})"));
    const auto& model = resolved.at("model");
    QCOMPARE(model.at("head_dim").get<int>(), 32);
    QCOMPARE(model.at("ffn_dim").get<int>(), 2048);
    QCOMPARE(model.at("top_k").get<int>(), 2);
    QCOMPARE(model.at("router_noise_std").get<double>(), 0.125);
    QCOMPARE(model.at("routing_groups").get<int>(), 12);
    QCOMPARE(model.at("eval_capacity_factor").get<double>(), 2.0);  // classification
    const auto languageModel = resolveRunDocument(nlohmann::json::parse(
        R"({"model": {"head": "language_model", "experts": 4}, "task": {"kind": "language_model", "path": "x"}})"));
    QCOMPARE(languageModel.at("model").at("eval_capacity_factor").get<double>(), 0.0);  // never drops: causal-safe
    QCOMPARE(resolved.at("train").at("steps").get<int>(), 7);
    QCOMPARE(resolved.at("task").at("kind").get<std::string>(), std::string("listops"));

    // A document with problems still resolves: bad values take their defaults.
    const auto broken = resolveRunDocument(nlohmann::json::parse(
        R"({"model": {"layers": "six", "experts": 4, "nonsense": 1}, "train": 5, "task": {"kind": "dance"}})"));
    QCOMPARE(broken.at("model").at("layers").get<int>(), 6);
    QCOMPARE(broken.at("model").at("routing_groups").get<int>(), 6);
    QCOMPARE(broken.at("model").at("router_noise_std").get<double>(), 0.25);
    QCOMPARE(broken.at("train").at("steps").get<int>(), 2000);
    QCOMPARE(broken.at("task").at("kind").get<std::string>(), std::string("listops"));
    QCOMPARE(resolveRunDocument(nlohmann::json::array()).at("model").at("layers").get<int>(), 6);
}

QTEST_GUILESS_MAIN(TestRunConfig)
#include "tst_runconfig.moc"
