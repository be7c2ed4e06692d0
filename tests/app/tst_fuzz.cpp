// Issue 15's fuzz suite: the real widelab-cli fed generated malformed
// configurations, data files, checkpoints and run directories, and (issue 38)
// run on a hostile machine: a disk that fills, a folder that turns read-only,
// two writers at once, an export killed midway, a text changed under its token
// cache. Every case must
// end with a clean exit and a message naming the file or key, or be accepted
// with correct results: no signal, no hang, no silently altered run.
//
// Seeded and bounded: WIDELAB_FUZZ_SEED (default below) fixes every case,
// WIDELAB_FUZZ_SECONDS (default 150) bounds the whole suite, WIDELAB_FUZZ_TIMEOUT
// (default 60) each process; a process still running then is a hang;
// WIDELAB_FUZZ_VERBOSE=1 prints every case. A failing
// case is printed with its seed, class and index, and its input is kept under
// $TMPDIR/widelab-fuzz-SEED/ so that it can be run again by hand.
#include <QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <QCryptographicHash>
#include <QThread>

#include <csignal>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>

namespace {

using Json = nlohmann::ordered_json;
using Rng = std::mt19937_64;

constexpr std::uint64_t kDefaultSeed = 15015;

// ------------------------------------------------------------------ settings

std::uint64_t fuzzSeed()
{
    bool ok = false;
    const qulonglong seed = qEnvironmentVariable("WIDELAB_FUZZ_SEED").toULongLong(&ok);
    return ok ? seed : kDefaultSeed;
}

double envSeconds(const char* name, double fallback)
{
    bool ok = false;
    const double value = qEnvironmentVariable(name).toDouble(&ok);
    return ok && value > 0 ? value : fallback;
}

// One generator per case, from (seed, class, index): a case is the same whatever
// ran before it, and the budget only decides how many run.
Rng caseRng(std::uint64_t seed, int klass, int index)
{
    std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                           static_cast<std::uint32_t>(klass), static_cast<std::uint32_t>(index)};
    return Rng(sequence);
}

std::int64_t uniform(Rng& rng, std::int64_t low, std::int64_t high)  // [low, high]
{
    return std::uniform_int_distribution<std::int64_t>(low, high)(rng);
}

template <typename T>
const T& pick(Rng& rng, const std::vector<T>& items)
{
    return items[static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(items.size()) - 1))];
}

QByteArray randomBytes(Rng& rng, std::int64_t count)
{
    QByteArray bytes(static_cast<int>(count), '\0');
    for (auto& byte : bytes)
        byte = static_cast<char>(uniform(rng, 0, 255));
    return bytes;
}

// ------------------------------------------------------------------ files

QByteArray readBytes(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

void writeBytes(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        qFatal("cannot write %s", qPrintable(path));
    file.write(bytes);
}

void copyTree(const QString& from, const QString& to)
{
    std::filesystem::copy(from.toStdString(), to.toStdString(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
}

// With Qt, not std::filesystem::remove_all: PyPI's libtorch.so exports its own
// copy of libstdc++'s filesystem functions, and in a program linked with it that
// copy of remove_all calls through a null pointer (LibTorch 2.11, GCC 12).
void removePath(const QString& path)
{
    if (QFileInfo(path).isDir() && !QFileInfo(path).isSymLink())
        QDir(path).removeRecursively();
    else
        QFile::remove(path);
}

QString fileName(const QString& path) { return QFileInfo(path).fileName(); }

// Checkpoint files of a run directory, "step-NNNNNNNN.pt" names, sorted.
QStringList stepCheckpoints(const QString& run)
{
    QStringList names = QDir(run + "/checkpoints").entryList({"step-*.pt"}, QDir::Files, QDir::Name);
    static const QRegularExpression pattern("^step-\\d{8}\\.pt$");
    names = names.filter(pattern);
    return names;
}

QString checkpointName(qint64 step) { return QString("step-%1.pt").arg(step, 8, 10, QLatin1Char('0')); }

// ------------------------------------------------------------------ processes

struct Proc {
    QStringList args;
    bool started = false;
    bool timedOut = false;
    bool crashed = false;  // ended by a signal
    int code = -1;
    QString out, err;
    double seconds = 0;

    QString command() const { return "widelab-cli " + args.join(' '); }
};

int g_timeoutMs = 60000;

Proc runCli(const QStringList& args, int timeoutMs = 0)
{
    Proc p;
    p.args = args;
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("OMP_WAIT_POLICY", "PASSIVE");
    environment.insert("OMP_NUM_THREADS", "1");
    process.setProcessEnvironment(environment);
    QElapsedTimer timer;
    timer.start();
    process.start(WIDELAB_CLI, args);
    p.started = process.waitForStarted(30000);
    if (!p.started)
        return p;
    if (!process.waitForFinished(timeoutMs > 0 ? timeoutMs : g_timeoutMs)) {
        p.timedOut = true;
        process.kill();
        process.waitForFinished(10000);
    }
    p.seconds = static_cast<double>(timer.elapsed()) / 1000.0;
    p.crashed = process.exitStatus() != QProcess::NormalExit;
    p.code = process.exitCode();
    p.out = QString::fromUtf8(process.readAllStandardOutput());
    p.err = QString::fromUtf8(process.readAllStandardError());
    return p;
}

QString excerpt(const QString& text, int length = 400)
{
    QString t = text.trimmed();
    if (t.size() > length)
        t = t.left(length) + " [...]";
    return t.replace('\n', " | ");
}

// Empty when the process ended as every case must end; otherwise why not.
// A failure must name one of `names` (a file, its path, a dotted key); with
// `anyKey`, any dotted configuration key counts as named too.
QString cleanEnd(const Proc& p, const QStringList& names, bool anyKey = false)
{
    if (!p.started)
        return "the process did not start";
    if (p.timedOut)
        return QString("hang: still running after %1 s").arg(g_timeoutMs / 1000);
    if (p.crashed)
        return "crash: ended by a signal; stderr: " + excerpt(p.err);
    if (p.code != 0 && p.code != 1 && p.code != 2)
        return QString("exit code %1; stderr: %2").arg(p.code).arg(excerpt(p.err));
    static const QStringList internals = {"terminate called", "json.exception", "Argument passed to at()",
                                          "Exception raised from", "frame #", "what():", "Segmentation fault",
                                          "core dumped", "basic_string::", "vector::_M_", "std::bad_alloc",
                                          "Assertion `"};
    for (const auto& marker : internals)
        if (p.err.contains(marker) || p.out.contains(marker))
            return "internal error text \"" + marker + "\": " + excerpt(p.err + p.out);
    if (p.code == 0)
        return {};
    if (p.err.trimmed().isEmpty())
        return QString("exit code %1 with an empty stderr").arg(p.code);
    for (const auto& name : names)
        if (!name.isEmpty() && p.err.contains(name))
            return {};
    static const QRegularExpression dottedKey("\\b(model|task|train)\\.[a-z_]+");
    if (anyKey && dottedKey.match(p.err).hasMatch())
        return {};
    return "the message names none of [" + names.join(", ") + "]: " + excerpt(p.err);
}

// ------------------------------------------------------------------ results

QJsonObject jsonObject(const QString& text)
{
    return QJsonDocument::fromJson(text.toUtf8()).object();
}

// The "train" lines of RUN/metrics.jsonl after `afterStep`, as "step loss accuracy
// learning_rate gradient_norm" with every digit: what must not change.
QStringList trainLines(const QString& run, qint64 afterStep = -1)
{
    QStringList lines;
    for (const QByteArray& line : readBytes(run + "/metrics.jsonl").split('\n')) {
        const QJsonObject json = QJsonDocument::fromJson(line).object();
        if (json.value("type").toString() != "train" || json.value("step").toDouble() <= static_cast<double>(afterStep))
            continue;
        QStringList fields;
        for (const char* key : {"step", "loss", "accuracy", "learning_rate", "gradient_norm"})
            fields << QString::number(json.value(key).toDouble(), 'g', 17);
        lines << fields.join(' ');
    }
    return lines;
}

// Empty when both lists are the same, else the first difference.
QString compareLines(const QStringList& got, const QStringList& expected)
{
    for (int i = 0; i < std::max(got.size(), expected.size()); ++i) {
        const QString a = i < got.size() ? got[i] : "(none)", b = i < expected.size() ? expected[i] : "(none)";
        if (a != b)
            return QString("train line %1: got \"%2\", expected \"%3\"").arg(i).arg(a, b);
    }
    return {};
}

// Numbers in `text` that no accounting can produce: negative counts, NaN, Inf.
bool hasAbsurdNumber(const QString& text)
{
    static const QRegularExpression absurd("(^|[\\s(:\"])-\\d|\\b(nan|inf|infinity)\\b",
                                           QRegularExpression::CaseInsensitiveOption);
    return absurd.match(text).hasMatch();
}

// ------------------------------------------------------------------ bookkeeping

struct ClassStats {
    QString name;
    int cases = 0, accepted = 0, refused = 0, failed = 0;
    QStringList failures;
};

// ------------------------------------------------------------------ JSON documents

using KeyPath = std::vector<std::string>;

QString dotted(const KeyPath& path)
{
    QStringList parts;
    for (const auto& key : path)
        parts << QString::fromStdString(key);
    return parts.join('.');
}

void collectPaths(const Json& json, KeyPath& prefix, std::vector<KeyPath>& paths)
{
    if (!json.is_object())
        return;
    for (const auto& item : json.items()) {
        prefix.push_back(item.key());
        paths.push_back(prefix);
        collectPaths(item.value(), prefix, paths);
        prefix.pop_back();
    }
}

std::vector<KeyPath> keyPaths(const Json& json)
{
    std::vector<KeyPath> paths;
    KeyPath prefix;
    collectPaths(json, prefix, paths);
    return paths;
}

Json& valueAt(Json& json, const KeyPath& path)
{
    Json* node = &json;
    for (const auto& key : path)
        node = &(*node)[key];
    return *node;
}

const std::string kPlaceholder = "@@WIDELAB-FUZZ-PLACEHOLDER@@";

// The document's text with the value at `path` replaced by raw text (which need
// not be JSON: that is the point).
std::string withRawValue(Json document, const KeyPath& path, const std::string& raw)
{
    valueAt(document, path) = kPlaceholder;
    std::string text = document.dump(2);
    const std::string quoted = "\"" + kPlaceholder + "\"";
    text.replace(text.find(quoted), quoted.size(), raw);
    return text;
}

std::string nested(Rng& rng, std::int64_t depth)
{
    const bool arrays = uniform(rng, 0, 1) == 0;
    std::string text;
    text.reserve(static_cast<std::size_t>(depth) * 8);
    for (std::int64_t i = 0; i < depth; ++i)
        text += arrays ? "[" : "{\"a\":";
    text += "1";
    for (std::int64_t i = 0; i < depth; ++i)
        text += arrays ? "]" : "}";
    return text;
}

}  // namespace

// ==================================================================== the suite

class TestFuzz : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void stopAndResumeWriteTheUninterruptedLines();
    void configurations();
    void dataFiles();
    void checkpoints();
    void runDirectories();
    void hostileMachine();
    void cleanupTestCase();

private:
    enum Class { Configurations = 1, DataFiles = 2, Checkpoints = 3, RunDirectories = 4, HostileMachine = 5 };

    bool timeLeft(double share) const { return m_clock.elapsed() < share * m_budgetSeconds * 1000.0; }
    QString path(const QString& name) const { return m_dir.filePath(name); }
    QString writeDocument(const QString& name, const Json& document) const;
    Proc train(const QString& config, const QString& out, const QStringList& extra = {});
    void finishClass(ClassStats& stats);
    // Records one case: empty `failure` is a pass (accepted or refused cleanly).
    void record(ClassStats& stats, int index, const QString& description, bool accepted, const QString& failure,
                const QStringList& keep);

    // Class 3 and 4 references: the undamaged run evaluated, inspected and exported
    // from one of its checkpoints, and resumed from it.
    struct Reference {
        QJsonObject eval;
        QJsonArray prediction, attention;
        QByteArray exported;
        QStringList resumedLines;  // train lines after the checkpoint's step
    };
    const Reference& reference(const QString& run, const QString& checkpoint, qint64 step, const QString& what);
    QString checkResult(const QString& command, const Proc& p, const QString& baseRun, const QString& exportFile,
                        qint64 resumeSteps, const std::set<qint64>& knownSteps);

    QTemporaryDir m_dir;
    QElapsedTimer m_clock;
    double m_budgetSeconds = 150;
    bool m_verbose = false;  // WIDELAB_FUZZ_VERBOSE: every case, not only the failing ones
    std::uint64_t m_seed = kDefaultSeed;
    QString m_keepDir;
    std::map<int, ClassStats> m_stats;
    int m_scratch = 0;

    Json m_listops, m_classification, m_languageModel;
    std::vector<std::pair<QString, Json>> m_presets;
    QByteArray m_tsv;            // the classification base file (LF)
    QString m_listopsRun;        // checkpoints at 2, 4, 6; best.pt
    QString m_foreignRun;        // another architecture
    QString m_classificationRun; // checkpoints at 2, 4; labels.json
    QString m_languageModelRun;  // checkpoints at 2, 4; cache/
    std::map<QString, Reference> m_references;
};

QString TestFuzz::writeDocument(const QString& name, const Json& document) const
{
    const QString file = path(name);
    writeBytes(file, QByteArray::fromStdString(document.dump(2)));
    return file;
}

Proc TestFuzz::train(const QString& config, const QString& out, const QStringList& extra)
{
    return runCli(QStringList{"train", config, "--out", out} + extra);
}

void TestFuzz::record(ClassStats& stats, int index, const QString& description, bool accepted,
                      const QString& failure, const QStringList& keep)
{
    ++stats.cases;
    if (m_verbose)
        qInfo().noquote() << QString("%1 case %2: %3 -> %4")
                                 .arg(stats.name)
                                 .arg(index)
                                 .arg(description, !failure.isEmpty() ? "FAILED" : accepted ? "accepted" : "refused");
    if (failure.isEmpty()) {
        ++(accepted ? stats.accepted : stats.refused);
        return;
    }
    ++stats.failed;
    const QString caseName = QString("%1-%2").arg(stats.name).arg(index);
    QString kept;
    for (const QString& input : keep) {
        if (input.isEmpty() || !QFileInfo::exists(input))
            continue;
        const QString target = m_keepDir + "/" + caseName + "-" + fileName(input);
        removePath(target);
        QDir().mkpath(m_keepDir);
        std::error_code ignored;
        std::filesystem::copy(input.toStdString(), target.toStdString(), std::filesystem::copy_options::recursive,
                              ignored);
        kept += (kept.isEmpty() ? "" : ", ") + target;
    }
    const QString line = QString("seed %1, %2 case %3: %4 -> %5%6")
                             .arg(m_seed)
                             .arg(stats.name)
                             .arg(index)
                             .arg(description, failure, kept.isEmpty() ? QString() : " [kept: " + kept + "]");
    stats.failures << line;
    qWarning().noquote() << "FUZZ FAILURE:" << line;
}

void TestFuzz::finishClass(ClassStats& stats)
{
    qInfo().noquote() << QString("fuzz %1: %2 cases, %3 accepted, %4 refused cleanly, %5 failed (%6 s elapsed)")
                             .arg(stats.name)
                             .arg(stats.cases)
                             .arg(stats.accepted)
                             .arg(stats.refused)
                             .arg(stats.failed)
                             .arg(static_cast<double>(m_clock.elapsed()) / 1000.0, 0, 'f', 1);
    QVERIFY2(stats.failures.isEmpty(),
             qPrintable(QString("%1 of %2 %3 cases failed:\n  ").arg(stats.failed).arg(stats.cases).arg(stats.name)
                        + stats.failures.join("\n  ")));
}

// ------------------------------------------------------------------ setup

void TestFuzz::initTestCase()
{
    m_clock.start();
    m_seed = fuzzSeed();
    m_budgetSeconds = envSeconds("WIDELAB_FUZZ_SECONDS", 150);
    g_timeoutMs = static_cast<int>(1000 * envSeconds("WIDELAB_FUZZ_TIMEOUT", 60));
    m_verbose = !qEnvironmentVariableIsEmpty("WIDELAB_FUZZ_VERBOSE");
    m_keepDir = QDir::temp().filePath(QString("widelab-fuzz-%1").arg(m_seed));
    QVERIFY(m_dir.isValid());
    qInfo().noquote() << QString("fuzz seed %1 (WIDELAB_FUZZ_SEED), budget %2 s (WIDELAB_FUZZ_SECONDS), "
                                 "%3 s per process (WIDELAB_FUZZ_TIMEOUT); failing inputs are kept in %4")
                             .arg(m_seed)
                             .arg(m_budgetSeconds)
                             .arg(g_timeoutMs / 1000)
                             .arg(m_keepDir);

    // The data files of the valid documents: deterministic, whatever the seed.
    Rng rng(7);
    const std::vector<std::string> words = {"good", "bad", "fine", "awful", "great", "poor", "nice", "dull",
                                            "film", "story", "actor", "plot", "very", "not", "quite", "the"};
    const std::vector<std::string> labels = {"pos", "neg", "mixed"};
    for (int row = 0; row < 60; ++row) {
        std::string text;
        for (std::int64_t w = uniform(rng, 3, 12); w > 0; --w)
            text += (text.empty() ? "" : " ") + pick(rng, words);
        m_tsv += QByteArray::fromStdString(labels[static_cast<std::size_t>(row % 3)] + "\t" + text + "\n");
    }
    writeBytes(path("base.tsv"), m_tsv);
    QByteArray lm;
    while (lm.size() < 4000)
        lm += QByteArray::fromStdString(pick(rng, words) + (uniform(rng, 0, 9) == 0 ? ".\n" : " "));
    writeBytes(path("base.txt"), lm);

    const Json model = {{"vocab_size", 20}, {"max_len", 32}, {"d_model", 16}, {"layers", 1}, {"heads", 2},
                        {"ffn_dim", 32},    {"dropout", 0.0}, {"num_classes", 10}};
    const Json trainSection = {{"steps", 6},           {"batch_size", 2},      {"learning_rate", 0.003},
                               {"warmup_steps", 1},    {"log_every", 1},       {"eval_every", 2},
                               {"eval_batches", 2},    {"checkpoint_every", 2}, {"keep_last", 3},
                               {"threads", 1},         {"device", "cpu"},      {"seed", 1}};
    m_listops = {{"name", "fuzz listops"},
                 {"model", model},
                 {"task", {{"kind", "listops"}, {"min_length", 5}, {"max_length", 30}, {"train_size", 64},
                           {"validation_size", 8}, {"test_size", 8}}},
                 {"train", trainSection}};
    m_classification = m_listops;
    m_classification["name"] = "fuzz classification";
    m_classification["model"]["vocab_size"] = 258;
    m_classification["model"]["num_classes"] = 3;
    m_classification["task"] = {{"kind", "classification"}, {"path", path("base.tsv").toStdString()},
                                {"tokenizer", "byte"}, {"vocab_limit", 200}, {"validation_fraction", 0.2},
                                {"test_fraction", 0.2}};
    m_classification["train"]["steps"] = 4;
    m_languageModel = m_classification;
    m_languageModel["name"] = "fuzz language model";
    m_languageModel["model"].erase("num_classes");
    m_languageModel["model"]["head"] = "language_model";
    m_languageModel["task"] = {{"kind", "language_model"}, {"path", path("base.txt").toStdString()},
                               {"tokenizer", "byte"}, {"vocab_limit", 200}, {"validation_fraction", 0.1},
                               {"test_fraction", 0.1}};

    const QDir presets(WIDELAB_PRESETS_DIR);
    for (const QString& name : presets.entryList({"*.json"}, QDir::Files, QDir::Name)) {
        const Json preset = Json::parse(readBytes(presets.filePath(name)).toStdString(), nullptr, false);
        QVERIFY2(!preset.is_discarded(), qPrintable(name));
        m_presets.emplace_back(name, preset);
    }
    QVERIFY(!m_presets.empty());

    // The valid documents are accepted and train: the fuzz cases' baseline.
    for (const auto& [name, document] :
         std::vector<std::pair<QString, Json>>{{"listops", m_listops}, {"classification", m_classification},
                                               {"language_model", m_languageModel}}) {
        const QString config = writeDocument("valid-" + name + ".json", document);
        const Proc check = runCli({"check", config});
        QVERIFY2(check.code == 0 && !check.crashed, qPrintable(check.command() + ": " + check.err));
        const Proc trained = train(config, path("valid-run-" + name));
        QVERIFY2(trained.code == 0 && !trained.crashed, qPrintable(trained.command() + ": " + trained.err));
    }
    m_listopsRun = path("valid-run-listops");
    m_classificationRun = path("valid-run-classification");
    m_languageModelRun = path("valid-run-language_model");
    QCOMPARE(stepCheckpoints(m_listopsRun), QStringList({checkpointName(2), checkpointName(4), checkpointName(6)}));
    QCOMPARE(stepCheckpoints(m_classificationRun), QStringList({checkpointName(2), checkpointName(4)}));
    QVERIFY(QFileInfo::exists(m_listopsRun + "/checkpoints/best.pt"));

    Json foreign = m_listops;
    foreign["model"]["d_model"] = 32;
    foreign["model"]["heads"] = 4;
    foreign["train"]["steps"] = 2;
    m_foreignRun = path("valid-run-foreign");
    const Proc trained = train(writeDocument("valid-foreign.json", foreign), m_foreignRun);
    QVERIFY2(trained.code == 0, qPrintable(trained.err));
    qInfo().noquote() << QString("fuzz setup: %1 s").arg(static_cast<double>(m_clock.elapsed()) / 1000.0, 0, 'f', 1);
}

void TestFuzz::cleanupTestCase()
{
    int cases = 0, failed = 0;
    for (const auto& [klass, stats] : m_stats) {
        qInfo().noquote() << QString("fuzz total %1: %2 cases (%3 accepted, %4 refused cleanly, %5 failed)")
                                 .arg(stats.name, -16)
                                 .arg(stats.cases)
                                 .arg(stats.accepted)
                                 .arg(stats.refused)
                                 .arg(stats.failed);
        cases += stats.cases;
        failed += stats.failed;
    }
    qInfo().noquote() << QString("fuzz total: %1 cases, %2 failed, seed %3, %4 s")
                             .arg(cases)
                             .arg(failed)
                             .arg(m_seed)
                             .arg(static_cast<double>(m_clock.elapsed()) / 1000.0, 0, 'f', 1);
}

// ------------------------------------------------------------------ stop and resume

// A run stopped (SIGINT) at a step that is not a multiple of train.log_every and
// resumed writes the same "train" lines as a run that was never interrupted:
// the checkpoint keeps the pending interval's sums.
void TestFuzz::stopAndResumeWriteTheUninterruptedLines()
{
    Json document = m_listops;
    document["train"]["steps"] = 150;
    document["train"]["log_every"] = 7;
    document["train"]["eval_every"] = 1000;
    document["train"]["checkpoint_every"] = 1000;
    document["train"]["schedule"] = "warmup_cosine";
    document["train"]["warmup_steps"] = 10;
    const QString config = writeDocument("stop-resume.json", document);
    const QString whole = path("stop-resume-whole");
    const Proc uninterrupted = train(config, whole);
    QVERIFY2(uninterrupted.code == 0 && !uninterrupted.crashed, qPrintable(uninterrupted.err));
    const QStringList expected = trainLines(whole);
    QCOMPARE(expected.size(), 150 / 7 + 1);

    qint64 stoppedAt = -1;
    QString run;
    for (int attempt = 0; attempt < 4 && (stoppedAt < 0 || stoppedAt % 7 == 0); ++attempt) {
        run = path(QString("stop-resume-%1").arg(attempt));
        QProcess process;
        process.setProcessChannelMode(QProcess::MergedChannels);
        process.start(WIDELAB_CLI, {"train", config, "--out", run});
        QVERIFY(process.waitForStarted());
        QString output;
        const QString wait = QString("step %1/").arg(7 * (attempt + 1));
        while (!output.contains(wait) && process.state() == QProcess::Running && process.waitForReadyRead(g_timeoutMs))
            output += QString::fromUtf8(process.readAll());
        QTest::qWait(attempt * 3);  // a different step each attempt
        ::kill(static_cast<pid_t>(process.processId()), SIGINT);
        QVERIFY2(process.waitForFinished(g_timeoutMs), "hang: the stopped run did not end");
        output += QString::fromUtf8(process.readAll());
        QCOMPARE(process.exitStatus(), QProcess::NormalExit);
        QCOMPARE(process.exitCode(), 0);
        const QRegularExpressionMatch stopped = QRegularExpression("stopped at step (\\d+)").match(output);
        if (!stopped.hasMatch())
            continue;  // it finished before the signal came
        stoppedAt = stopped.captured(1).toLongLong();
    }
    if (stoppedAt < 0 || stoppedAt % 7 == 0)
        QSKIP("every attempt stopped at a multiple of log_every or finished first: nothing to compare");
    qInfo().noquote() << QString("fuzz stop/resume: stopped at step %1 (log_every 7)").arg(stoppedAt);
    const Proc resumed = runCli({"train", "--resume", "--out", run});
    QVERIFY2(resumed.code == 0 && !resumed.crashed, qPrintable(resumed.err));
    const QString difference = compareLines(trainLines(run), expected);
    QVERIFY2(difference.isEmpty(), qPrintable(QString("stopped at step %1: ").arg(stoppedAt) + difference));
}

// ------------------------------------------------------------------ class 1: configurations

void TestFuzz::configurations()
{
    ClassStats& stats = m_stats[Configurations];
    stats.name = "configurations";
    enum Kind { Delete, Null, WrongType, ExtremeNumber, UnknownKey, DuplicateKey, Deep, NanText, Truncated,
                RandomBytes, InvalidUtf8, Empty, Bom, AbsurdSize, Kinds };
    static const char* const kindNames[] = {"delete a key", "null", "wrong type", "extreme number", "unknown key",
                                            "duplicate key", "deep nesting", "NaN-like text", "truncated",
                                            "random bytes", "invalid UTF-8", "empty file", "BOM", "absurd size"};
    std::map<std::string, QString> baseCheck;  // check's output for each unmutated document

    for (int index = 0; index < Kinds || timeLeft(0.45); ++index) {
        Rng rng = caseRng(m_seed, Configurations, index);
        const auto kind = static_cast<Kind>(index % Kinds);
        // The tiny run documents most of the time, a shipped preset otherwise (never trained).
        const int base = static_cast<int>(uniform(rng, 0, 4));
        const bool preset = base >= 3;
        Json document = base == 0 ? m_listops : base == 1 ? m_classification : base == 2 ? m_languageModel
                                                                                           : pick(rng, m_presets).second;
        const QString baseName = base == 0 ? "listops" : base == 1 ? "classification" : base == 2 ? "language_model"
                                                                                                 : "preset";
        const std::vector<KeyPath> paths = keyPaths(document);
        KeyPath key = pick(rng, paths);
        QString description = QString("%1 on %2").arg(kindNames[kind], baseName);
        std::string text;
        // What a refusal must name: the mutated key, or the file (parse errors).
        QStringList names;
        bool mustRefuse = false, anyKey = false, sameAsBase = false;

        const std::vector<Json> numbers = {1e308, -1, 0, -1e308, 1e17, 9223372036854775807LL, 1.5, 1000000,
                                           -0.0, 4294967297LL};
        switch (kind) {
        case Delete: {
            Json& parent = key.size() == 1 ? document : valueAt(document, KeyPath(key.begin(), key.end() - 1));
            parent.erase(key.back());
            text = document.dump(2);
            names << dotted(key);
            anyKey = true;
            break;
        }
        case Null:
            valueAt(document, key) = nullptr;
            text = document.dump(2);
            names << dotted(key);
            break;
        case WrongType: {
            const Json original = valueAt(document, key);
            std::vector<Json> others;
            if (!original.is_string())
                others.push_back("12");
            if (!original.is_array())
                others.push_back(Json::array({1, 2}));
            if (!original.is_object())
                others.push_back(Json::object({{"x", 1}}));
            if (!original.is_boolean())
                others.push_back(true);
            if (!original.is_number())
                others.push_back(3);
            valueAt(document, key) = pick(rng, others);
            text = document.dump(2);
            description += " (" + QString::fromStdString(valueAt(document, key).dump()) + ")";
            names << dotted(key);
            mustRefuse = true;
            break;
        }
        case ExtremeNumber: {
            // At a number of the document (every document has some).
            std::vector<KeyPath> numeric;
            for (const auto& p : paths)
                if (valueAt(document, p).is_number())
                    numeric.push_back(p);
            key = pick(rng, numeric);
            valueAt(document, key) = pick(rng, numbers);
            text = document.dump(2);
            description += " (" + QString::fromStdString(valueAt(document, key).dump()) + ")";
            names << dotted(key);
            anyKey = true;
            break;
        }
        case UnknownKey: {
            const std::vector<std::string> unknown = {"zork", "head_dims", "lerning_rate", "layer", "steps ",
                                                      "Model", "tokeniser"};
            std::vector<KeyPath> objects = {KeyPath{}};
            for (const auto& p : paths)
                if (valueAt(document, p).is_object())
                    objects.push_back(p);
            const KeyPath parent = pick(rng, objects);
            const std::string name = pick(rng, unknown);
            (parent.empty() ? document : valueAt(document, parent))[name] = 1;
            KeyPath full = parent;
            full.push_back(name);
            text = document.dump(2);
            names << dotted(full);
            description += " (" + dotted(full) + ")";
            mustRefuse = true;
            break;
        }
        case DuplicateKey: {
            // The key twice, with another value the second time: which one counts is
            // nowhere said, so the document must be refused.
            Json original = valueAt(document, key);
            Json other = original.is_number() ? Json(original.get<double>() + 1)
                         : original.is_string() ? Json(original.get<std::string>() + "x")
                                                : Json(123);
            if (uniform(rng, 0, 1))
                std::swap(other, original);
            text = withRawValue(document, key, original.dump() + ", \"" + key.back() + "\": " + other.dump());
            names << dotted(key) << ("\"" + QString::fromStdString(key.back()) + "\"");
            description += " (" + dotted(key) + ": " + QString::fromStdString(original.dump()) + ", then "
                           + QString::fromStdString(other.dump()) + ")";
            mustRefuse = true;
            break;
        }
        case Deep: {
            static const std::vector<std::int64_t> depths = {10, 100, 1000, 10000, 100000};
            const std::int64_t depth = pick(rng, depths);
            text = withRawValue(document, key, nested(rng, depth));
            description += QString(" (depth %1 at %2)").arg(depth).arg(dotted(key));
            names << dotted(key);
            mustRefuse = true;
            anyKey = true;
            break;
        }
        case NanText: {
            const std::vector<std::string> nans = {"NaN", "nan", "Infinity", "-Infinity", "inf", "1e999", "0x10",
                                                   "+1", ".5", "01"};
            const std::string raw = pick(rng, nans);
            text = withRawValue(document, key, raw);
            description += " (" + QString::fromStdString(raw) + " at " + dotted(key) + ")";
            mustRefuse = raw != "1e999";  // a JSON number, if an absurd one
            anyKey = true;
            names << dotted(key);
            break;
        }
        case Truncated: {
            const std::string full = document.dump(2);
            text = full.substr(0, static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(full.size()) - 2)));
            description += QString(" (%1 of %2 bytes)").arg(text.size()).arg(full.size());
            mustRefuse = true;
            break;
        }
        case RandomBytes:
            text = randomBytes(rng, uniform(rng, 1, 3000)).toStdString();
            mustRefuse = true;
            break;
        case InvalidUtf8: {
            const std::vector<std::string> bad = {"\xff", "\xc3\x28", "\xe2\x82", "\xed\xa0\x80", "\xf8\x88\x80\x80\x80",
                                                  "\xc0\xaf"};
            const std::string raw = "\"a" + pick(rng, bad) + "b\"";
            if (uniform(rng, 0, 1)) {
                text = withRawValue(document, key, raw);
                description += " (in the value of " + dotted(key) + ")";
            } else {
                document[kPlaceholder] = 1;
                text = document.dump(2);
                const std::string quoted = "\"" + kPlaceholder + "\"";
                text.replace(text.find(quoted), quoted.size(), raw);
                description += " (in a key)";
            }
            mustRefuse = true;
            break;
        }
        case Empty:
            text = uniform(rng, 0, 1) ? "" : "  \n\t ";
            mustRefuse = true;
            break;
        case Bom:
            text = "\xEF\xBB\xBF" + document.dump(2);
            sameAsBase = true;
            break;
        case AbsurdSize: {
            const std::vector<std::pair<std::string, Json>> sizes = {
                {"layers", 1000000}, {"d_model", 1000000000}, {"experts", 1000000}, {"vocab_size", 1000000000000LL},
                {"max_len", 1000000000}, {"heads", 100000000}, {"ffn_dim", 100000000000000000LL},
                {"paths", 100000}, {"head_dim", 1000000000}};
            const auto& [name, value] = pick(rng, sizes);
            document["model"][name] = value;
            if (name == "experts" || uniform(rng, 0, 2) == 0)
                document["model"]["top_k"] = 2;
            text = document.dump(2);
            description += QString(" (model.%1 = %2)").arg(QString::fromStdString(name), QString::fromStdString(value.dump()));
            names << "model." + QString::fromStdString(name);
            anyKey = true;
            break;
        }
        case Kinds:
            break;
        }
        if (kind == Delete || kind == Null || kind == WrongType || kind == ExtremeNumber)
            description += " at " + dotted(key);

        const QString file = path(QString("config-%1.json").arg(index));
        writeBytes(file, QByteArray::fromStdString(text));
        // Every configuration message starts with the file: a refusal of a document
        // whose key was changed must name the key too; one that is not JSON, the file.
        const bool aboutTheText = kind == Deep || kind == NanText || kind == Truncated || kind == RandomBytes
                                  || kind == InvalidUtf8 || kind == Empty || kind == Bom;
        QStringList refusalNames = names;
        if (aboutTheText)
            refusalNames << file << fileName(file);
        QString failure;
        const Proc check = runCli({"check", file});
        failure = cleanEnd(check, refusalNames, anyKey);
        if (failure.isEmpty() && mustRefuse && check.code == 0) {
            failure = "check accepted it";
            if (!preset) {  // and train: is it check alone, or both?
                const Proc trained = train(file, path(QString("config-run-%1").arg(index)), {"--steps", "2"});
                if (const QString trainFailure = cleanEnd(trained, refusalNames, anyKey); !trainFailure.isEmpty())
                    failure += "; train: " + trainFailure;
                else
                    failure += trained.code == 0 ? ", and so did train"
                                                 : "; train refuses it: " + excerpt(trained.err, 200);
            }
        }
        if (failure.isEmpty() && sameAsBase && check.code == 0) {
            const std::string baseKey = preset ? "preset" : baseName.toStdString();
            if (!preset) {
                if (!baseCheck.count(baseKey)) {
                    const QString plain = path(QString("config-%1-plain.json").arg(index));
                    writeBytes(plain, QByteArray::fromStdString(document.dump(2)));
                    baseCheck[baseKey] = runCli({"check", plain}).out;
                }
                if (check.out != baseCheck[baseKey])
                    failure = "check accepted it with another result than without the BOM";
            }
        }
        if (failure.isEmpty()) {
            const Proc params = runCli({"params", file});
            failure = cleanEnd(params, refusalNames, anyKey);
            if (failure.isEmpty() && params.code == 0 && hasAbsurdNumber(params.out))
                failure = "params printed an impossible number: " + excerpt(params.out, 1500);
        }
        // A sample is trained: what check accepts, train must accept.
        const bool trainIt = !preset && (uniform(rng, 0, 3) == 0 || (check.code == 0 && uniform(rng, 0, 1) == 0));
        bool accepted = check.code == 0;
        if (failure.isEmpty() && trainIt) {
            const QString out = path(QString("config-run-%1").arg(index));
            const Proc trained = train(file, out, {"--steps", "2"});
            description += " (trained)";
            failure = cleanEnd(trained, refusalNames, anyKey);
            const bool resourceRefusal = trained.err.contains("memory") || trained.err.contains("not finite");
            if (failure.isEmpty() && check.code == 0 && trained.code != 0 && !resourceRefusal)
                failure = "check accepts it but train refuses it: " + excerpt(trained.err);
            if (failure.isEmpty() && check.code != 0 && trained.code == 0)
                failure = "check refuses it but train accepts it: " + excerpt(check.err);
            if (failure.isEmpty() && trained.code == 0 && trainLines(out).isEmpty())
                failure = "train exited 0 but wrote no train line to metrics.jsonl";
            accepted = trained.code == 0;
            if (failure.isEmpty())
                removePath(out);
        }
        record(stats, index, description, accepted, failure, {file});
    }
    finishClass(stats);
}

// ------------------------------------------------------------------ class 2: data files

void TestFuzz::dataFiles()
{
    ClassStats& stats = m_stats[DataFiles];
    stats.name = "data files";
    enum Kind { RandomBytes, InvalidUtf8, Unicode, LineEnds, Empty, HeaderOnly, NoSeparator, UnclosedQuote,
                HugeLine, NulBytes, TextLabels, OneLabel, Bom, TooShort, NotAFile, Kinds };
    static const char* const kindNames[] = {"random bytes", "invalid UTF-8", "accents/CJK/emoji", "line endings",
                                            "empty file", "only a header", "no separator", "unclosed quote",
                                            "huge line", "NUL bytes", "text labels", "one label", "BOM",
                                            "too short", "not a file"};
    const std::vector<std::string> tokenizers = {"byte", "character", "word"};
    const std::vector<std::string> unicode = {"caf\xc3\xa9", "na\xc3\xafve", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
                                              "\xf0\x9f\x98\x80", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
                                              "\xce\xb1\xce\xb2\xce\xb3", "\xd8\xb3\xd9\x84\xd8\xa7\xd9\x85", "plain"};

    for (int index = 0; index < Kinds || timeLeft(0.65); ++index) {
        Rng rng = caseRng(m_seed, DataFiles, index);
        const auto kind = static_cast<Kind>(index % Kinds);
        const bool languageModel = kind != HeaderOnly && kind != NoSeparator && kind != UnclosedQuote
                                   && kind != TextLabels && kind != OneLabel && kind != LineEnds
                                   && uniform(rng, 0, 2) == 0;
        const bool csv = !languageModel && (kind == UnclosedQuote || uniform(rng, 0, 2) == 0);
        std::string tokenizer = pick(rng, tokenizers);
        if (kind == InvalidUtf8)
            tokenizer = uniform(rng, 0, 1) ? "character" : "word";
        Json document = languageModel ? m_languageModel : m_classification;
        document["task"]["tokenizer"] = tokenizer;
        const QString data = path(QString("data-%1.%2").arg(index).arg(languageModel ? "txt" : csv ? "csv" : "tsv"));
        QString description = QString("%1, %2 %3 tokenizer")
                                  .arg(kindNames[kind], languageModel ? "language model" : csv ? "CSV" : "TSV")
                                  .arg(QString::fromStdString(tokenizer));

        // A valid file of this kind, to start from.
        auto validRows = [&](const std::vector<std::string>& extra, int rows, const std::string& lineEnd) {
            const std::vector<std::string> words = {"good", "bad", "fine", "awful", "great", "plot", "actor"};
            std::string text;
            for (int row = 0; row < rows; ++row) {
                std::string line;
                for (std::int64_t w = uniform(rng, 2, 8); w > 0; --w)
                    line += (line.empty() ? "" : " ") + (extra.empty() || uniform(rng, 0, 1) ? pick(rng, words)
                                                                                           : pick(rng, extra));
                const std::string label = std::vector<std::string>{"pos", "neg", "mixed"}[static_cast<std::size_t>(row % 3)];
                if (languageModel)
                    text += line + lineEnd;
                else
                    text += label + (csv ? "," : "\t") + line + lineEnd;
            }
            return text;
        };
        QByteArray bytes;
        bool mustAccept = false, mustRefuse = false, sameAsLf = false;
        std::string lf;
        switch (kind) {
        case RandomBytes:
            bytes = randomBytes(rng, uniform(rng, 1, 5000));
            break;
        case InvalidUtf8: {
            std::string text = validRows({}, 40, "\n");
            const std::vector<std::string> bad = {"\xff", "\xc3\x28", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf", "\x80"};
            const std::string cut = pick(rng, bad);
            // Into a text, not a label: after the separator of some row.
            std::size_t at = text.find(languageModel ? ' ' : csv ? ',' : '\t',
                                       static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(text.size()) / 2)));
            text.insert(at == std::string::npos ? 0 : at + 1, cut + "x");
            bytes = QByteArray::fromStdString(text);
            mustRefuse = true;
            break;
        }
        case Unicode:
            // A language model needs a window of 33 tokens for each split: with the
            // word tokenizer, 40 rows of 2-8 words can be too few (seed 77, case 17).
            bytes = QByteArray::fromStdString(validRows(unicode, languageModel ? 200 : 40, "\n"));
            mustAccept = true;
            break;
        case LineEnds: {
            lf = validRows({}, 45, "\n");
            const int style = static_cast<int>(uniform(rng, 0, 2));
            std::string text;
            for (const char c : lf) {
                if (c != '\n')
                    text += c;
                else if (style == 0 || (style == 2 && uniform(rng, 0, 2) == 0))
                    text += "\r\n";
                else if (style == 1 || uniform(rng, 0, 1) == 0)
                    text += "\r";
                else
                    text += "\n";
            }
            description += style == 0 ? " (CRLF)" : style == 1 ? " (CR only)" : " (mixed)";
            bytes = QByteArray::fromStdString(text);
            sameAsLf = true;
            mustAccept = true;
            break;
        }
        case Empty:
            bytes = uniform(rng, 0, 1) ? QByteArray() : QByteArray("\n\n\r\n");
            mustRefuse = true;
            break;
        case HeaderOnly:
            bytes = csv ? "label,text\n" : "label\ttext\n";
            break;
        case NoSeparator: {
            std::string text = validRows({}, 30, "\n");
            text.insert(static_cast<std::size_t>(uniform(rng, 0, 1) ? 0 : text.size()), "just some words without a separator\n");
            bytes = QByteArray::fromStdString(text);
            mustRefuse = true;
            break;
        }
        case UnclosedQuote: {
            std::string text = validRows({}, 30, "\n");
            text += "pos,\"an unclosed quoted text\nneg,more\n";
            bytes = QByteArray::fromStdString(text);
            mustRefuse = true;
            break;
        }
        case HugeLine: {
            std::string text = validRows({}, 30, "\n");
            std::string huge(static_cast<std::size_t>(uniform(rng, 1, 4) * 1000000), 'a');
            for (std::size_t i = 7; i < huge.size(); i += 7)
                huge[i] = ' ';
            text += languageModel ? huge + "\n" : std::string("pos") + (csv ? "," : "\t") + huge + "\n";
            bytes = QByteArray::fromStdString(text);
            break;
        }
        case NulBytes: {
            std::string text = validRows({}, 40, "\n");
            for (std::int64_t n = uniform(rng, 1, 5); n > 0; --n)
                text.insert(static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(text.size()))), 1, '\0');
            bytes = QByteArray::fromStdString(text);
            break;
        }
        case TextLabels: {
            std::string text;
            const std::vector<std::string> labels = {"1.5", "yes", "-3", "caf\xc3\xa9", "\"quoted\"", "a b",
                                                     "0", "2", "999999", "00", "1", "7"};
            const std::int64_t set = uniform(rng, 0, 3);  // names, names, numbers, numbers
            for (int row = 0; row < 40; ++row)
                text += labels[static_cast<std::size_t>(set * 3 + row % 3)] + (csv ? "," : "\t") + "some text "
                        + std::to_string(row) + "\n";
            description += " (" + QString::fromStdString(labels[static_cast<std::size_t>(set * 3)]) + ", ...)";
            bytes = QByteArray::fromStdString(text);
            break;
        }
        case OneLabel: {
            std::string text;
            for (int row = 0; row < 30; ++row)
                text += std::string("only") + (csv ? "," : "\t") + "text number " + std::to_string(row) + "\n";
            bytes = QByteArray::fromStdString(text);
            break;
        }
        case Bom:
            bytes = "\xEF\xBB\xBF" + QByteArray::fromStdString(validRows({}, 40, "\n"));
            mustAccept = true;
            break;
        case TooShort:
            bytes = languageModel ? QByteArray("ab") : QByteArray(csv ? "pos,a\n" : "pos\ta\n");
            break;
        case NotAFile:
            QDir().mkpath(data);
            break;
        case Kinds:
            break;
        }
        if (kind != NotAFile)
            writeBytes(data, bytes);
        document["task"]["path"] = data.toStdString();
        const QString config = writeDocument(QString("data-%1.json").arg(index), document);
        const QString out = path(QString("data-run-%1").arg(index));
        const Proc trained = train(config, out, {"--steps", "2"});
        QString failure = cleanEnd(trained, {data, fileName(data)}, /*anyKey=*/kind == OneLabel || kind == HeaderOnly || kind == TextLabels || kind == TooShort);
        if (failure.isEmpty() && mustAccept && trained.code != 0)
            failure = "refused a valid file: " + excerpt(trained.err);
        if (failure.isEmpty() && mustRefuse && trained.code == 0)
            failure = "accepted it";
        if (failure.isEmpty() && trained.code == 0 && trainLines(out).isEmpty())
            failure = "train exited 0 but wrote no train line";
        if (failure.isEmpty() && sameAsLf) {
            // The same rows with "\n" line ends must train exactly alike.
            const QString lfData = path(QString("data-%1-lf.%2").arg(index).arg(csv ? "csv" : "tsv"));
            writeBytes(lfData, QByteArray::fromStdString(lf));
            document["task"]["path"] = lfData.toStdString();
            const QString lfOut = path(QString("data-run-%1-lf").arg(index));
            const Proc reference = train(writeDocument(QString("data-%1-lf.json").arg(index), document), lfOut,
                                         {"--steps", "2"});
            if (reference.code != 0)
                failure = "the LF file itself is refused: " + excerpt(reference.err);
            else if (const QString difference = compareLines(trainLines(out), trainLines(lfOut)); !difference.isEmpty())
                failure = "trains differently from the same rows with LF line ends: " + difference;
        }
        record(stats, index, description, trained.code == 0, failure, {data, config});
        if (failure.isEmpty())
            removePath(out);
    }
    finishClass(stats);
}

// ------------------------------------------------------------------ classes 3 and 4: references

const TestFuzz::Reference& TestFuzz::reference(const QString& run, const QString& checkpoint, qint64 step,
                                               const QString& what)
{
    const QString key = run + "|" + checkpoint + "|" + what;
    auto found = m_references.find(key);
    if (found != m_references.end())
        return found->second;
    Reference& r = m_references[key];
    if (what == "eval") {
        r.eval = jsonObject(runCli({"eval", run, "--json", "--threads", "1", "--checkpoint", checkpoint}).out);
    } else if (what == "inspect") {
        const QJsonObject json = jsonObject(runCli({"inspect", run, "--text", "abc", "--json", "--checkpoint", checkpoint}).out);
        r.prediction = json.value("prediction").toArray();
        r.attention = json.value("attention").toArray();
    } else if (what == "export") {
        const QString file = path(QString("reference-%1.pt").arg(++m_scratch));
        runCli({"export", run, "--out", file, "--checkpoint", checkpoint});
        r.exported = readBytes(file);
    } else {
        // Resumed from `checkpoint`: the undamaged run with the later checkpoints gone.
        const QString copy = path(QString("reference-run-%1").arg(++m_scratch));
        copyTree(run, copy);
        for (const QString& name : stepCheckpoints(copy))
            if (name.mid(5, 8).toLongLong() > step)
                QFile::remove(copy + "/checkpoints/" + name);
        const Proc resumed = runCli({"train", "--resume", "--out", copy, "--steps", what.mid(7)});
        if (resumed.code == 0)
            r.resumedLines = trainLines(copy, step);
        else
            qWarning().noquote() << "reference resume failed:" << resumed.err;
    }
    return r;
}

// For a command that exited 0 on a damaged copy of `baseRun`: empty when its result
// is the undamaged run's from the checkpoint it says it used.
QString TestFuzz::checkResult(const QString& command, const Proc& p, const QString& baseRun, const QString& exportFile,
                              qint64 resumeSteps, const std::set<qint64>& knownSteps)
{
    auto checkpointOf = [&](qint64 step) -> QString {
        if (!knownSteps.count(step))
            return {};
        return checkpointName(step);
    };
    if (command == "eval") {
        const QJsonObject got = jsonObject(p.out);
        const qint64 step = static_cast<qint64>(got.value("step").toDouble(-1));
        const QString checkpoint = checkpointOf(step);
        if (checkpoint.isEmpty())
            return QString("evaluated at step %1, which no undamaged checkpoint holds: %2").arg(step).arg(excerpt(p.out));
        const QJsonObject expected = reference(baseRun, checkpoint, step, "eval").eval;
        for (const char* field : {"loss", "accuracy", "examples", "step"})
            if (got.value(field) != expected.value(field))
                return QString("silently altered: eval %1 is %2, the undamaged %3 gives %4")
                    .arg(field)
                    .arg(got.value(field).toDouble(), 0, 'g', 17)
                    .arg(checkpoint)
                    .arg(expected.value(field).toDouble(), 0, 'g', 17);
        return {};
    }
    if (command == "inspect") {
        const QJsonObject got = jsonObject(p.out);
        const qint64 step = static_cast<qint64>(got.value("step").toDouble(-1));
        const QString checkpoint = checkpointOf(step);
        if (checkpoint.isEmpty())
            return QString("inspected at step %1, which no undamaged checkpoint holds").arg(step);
        const Reference& expected = reference(baseRun, checkpoint, step, "inspect");
        if (got.value("prediction").toArray() != expected.prediction || got.value("attention").toArray() != expected.attention)
            return "silently altered: inspect's prediction or attention differ from the undamaged " + checkpoint;
        return {};
    }
    if (command == "export") {
        const QRegularExpressionMatch match = QRegularExpression("step (\\d+)\\)").match(p.out);
        const QString checkpoint = match.hasMatch() ? checkpointOf(match.captured(1).toLongLong()) : QString();
        if (checkpoint.isEmpty())
            return "exported a step no undamaged checkpoint holds: " + excerpt(p.out);
        if (readBytes(exportFile) != reference(baseRun, checkpoint, 0, "export").exported)
            return "silently altered: the exported weights differ from the undamaged " + checkpoint + "'s";
        return {};
    }
    // train --resume: "... from step N", then the lines an undamaged resume from N writes.
    const QRegularExpressionMatch match = QRegularExpression("from step (\\d+)").match(p.out);
    if (!match.hasMatch())
        return "resume exited 0 but did not say from which step (a new run?): " + excerpt(p.out);
    const qint64 step = match.captured(1).toLongLong();
    const QString checkpoint = checkpointOf(step);
    if (checkpoint.isEmpty())
        return QString("resumed from step %1, which no undamaged checkpoint holds").arg(step);
    const QStringList expected = reference(baseRun, checkpoint, step, "resume " + QString::number(resumeSteps)).resumedLines;
    if (expected.isEmpty())
        return "the undamaged resume from " + checkpoint + " failed";
    const QString run = p.args.at(p.args.indexOf("--out") + 1);
    if (const QString difference = compareLines(trainLines(run, step), expected); !difference.isEmpty())
        return "silently altered: resumed from " + checkpoint + ", " + difference;
    return {};
}

// ------------------------------------------------------------------ class 3: checkpoints

void TestFuzz::checkpoints()
{
    ClassStats& stats = m_stats[Checkpoints];
    stats.name = "checkpoints";
    enum Kind { FlipHeader, FlipMiddle, FlipEnd, Truncate, RandomBytes, Foreign, OrphanTemporary, Garbage,
                EmptyFile, Directory, DamagedBest, AllDamaged, Kinds };
    static const char* const kindNames[] = {"bytes flipped in the header", "bytes flipped in the middle",
                                            "bytes flipped at the end (zip index)", "truncated", "random bytes",
                                            "another architecture's checkpoint", "orphan temporary file",
                                            "garbage step-99999999.pt", "empty file", "a directory",
                                            "damaged best.pt", "every checkpoint truncated"};
    const QStringList commands = {"eval", "inspect", "export", "resume"};
    const std::set<qint64> knownSteps = {2, 4, 6};
    const QString newest = checkpointName(6);
    const QByteArray foreign = readBytes(m_foreignRun + "/checkpoints/" + checkpointName(2));

    for (int index = 0; index < Kinds * 2 || timeLeft(0.85); ++index) {
        Rng rng = caseRng(m_seed, Checkpoints, index);
        const auto kind = static_cast<Kind>(index % Kinds);
        const QString command = commands[(index / Kinds + static_cast<int>(kind)) % commands.size()];
        const QString run = path(QString("checkpoint-run-%1").arg(index));
        copyTree(m_listopsRun, run);
        const QString checkpoints = run + "/checkpoints/";
        QString damaged = checkpoints + newest;
        QByteArray bytes = readBytes(damaged);
        QString description = kindNames[kind];
        auto flip = [&](qint64 from, qint64 to) {
            const qint64 count = uniform(rng, 1, 8);
            QStringList offsets;
            for (qint64 i = 0; i < count; ++i) {
                const qint64 at = uniform(rng, std::max<qint64>(0, from), std::min<qint64>(bytes.size(), to) - 1);
                bytes[static_cast<int>(at)] = static_cast<char>(bytes[static_cast<int>(at)] ^ (1 << uniform(rng, 0, 7)));
                offsets << QString::number(at);
            }
            description += " (offsets " + offsets.join(',') + " of " + QString::number(bytes.size()) + ")";
        };
        std::set<QString> good = {checkpointName(2), checkpointName(4), newest};
        switch (kind) {
        case FlipHeader:
            flip(0, 512);
            break;
        case FlipMiddle:
            flip(512, bytes.size() - 1024);
            break;
        case FlipEnd:
            flip(bytes.size() - 1024, bytes.size());
            break;
        case Truncate: {
            const qint64 length = uniform(rng, 0, bytes.size() - 1);
            bytes.truncate(static_cast<int>(length));
            description += QString(" (%1 of %2 bytes)").arg(length).arg(readBytes(damaged).size());
            break;
        }
        case RandomBytes:
            bytes = randomBytes(rng, uniform(rng, 0, 1) ? bytes.size() : uniform(rng, 1, 100000));
            break;
        case Foreign:
            bytes = foreign;
            break;
        case OrphanTemporary:
            damaged = checkpoints + QString("step-00000099.pt.tmp-%1-0").arg(uniform(rng, 100, 99999));
            bytes = bytes.left(static_cast<int>(uniform(rng, 0, bytes.size())));
            break;
        case Garbage:
            damaged = checkpoints + "step-99999999.pt";
            bytes = randomBytes(rng, uniform(rng, 0, 5000));
            break;
        case EmptyFile:
            bytes.clear();
            break;
        case Directory:
            break;
        case DamagedBest:
            damaged = checkpoints + "best.pt";
            bytes = readBytes(damaged);
            flip(0, bytes.size());
            break;
        case AllDamaged:
            for (const QString& name : stepCheckpoints(run)) {
                const QByteArray all = readBytes(checkpoints + name);
                writeBytes(checkpoints + name, all.left(static_cast<int>(uniform(rng, 0, all.size() - 1))));
            }
            bytes = readBytes(damaged);
            good.clear();
            break;
        case Kinds:
            break;
        }
        if (kind == Directory) {
            QFile::remove(damaged);
            QDir().mkpath(damaged + "/model");
        } else {
            writeBytes(damaged, bytes);
        }
        if (kind != OrphanTemporary && kind != Garbage && kind != DamagedBest)
            good.erase(newest);

        const QString exportFile = path(QString("checkpoint-export-%1.pt").arg(index));
        const QString which = kind == DamagedBest ? "best" : "latest";
        const qint64 resumeSteps = 8;
        Proc p;
        if (command == "eval")
            p = runCli({"eval", run, "--json", "--threads", "1", "--checkpoint", which});
        else if (command == "inspect")
            p = runCli({"inspect", run, "--text", "abc", "--json", "--checkpoint", which});
        else if (command == "export")
            p = runCli({"export", run, "--out", exportFile, "--checkpoint", which});
        else
            p = runCli({"train", "--resume", "--out", run, "--steps", QString::number(resumeSteps)});
        description += " -> " + p.command();

        QStringList names = {fileName(damaged)};
        if (kind == AllDamaged)
            names = stepCheckpoints(run);
        QString failure = cleanEnd(p, names);
        if (failure.isEmpty() && p.code == 0) {
            if (kind == DamagedBest && command != "resume") {
                // best.pt is the undamaged run's best: step 6 here (validation only improves).
                const QString expectedBest = QString::number(6);
                if (command == "eval") {
                    const QJsonObject got = jsonObject(p.out), expected = reference(m_listopsRun, "best.pt", 0, "eval").eval;
                    if (got.value("loss") != expected.value("loss"))
                        failure = "silently altered: a damaged best.pt evaluates to another loss than the undamaged one";
                } else if (command == "inspect") {
                    const QJsonObject got = jsonObject(p.out);
                    if (got.value("prediction").toArray() != reference(m_listopsRun, "best.pt", 0, "inspect").prediction)
                        failure = "silently altered: a damaged best.pt predicts otherwise than the undamaged one";
                } else if (readBytes(exportFile) != reference(m_listopsRun, "best.pt", 0, "export").exported) {
                    failure = "silently altered: a damaged best.pt exports other weights than the undamaged one";
                }
                Q_UNUSED(expectedBest);
            } else {
                failure = checkResult(command, p, m_listopsRun, exportFile, resumeSteps, knownSteps);
            }
        }
        if (failure.isEmpty() && command == "resume") {
            // Resume never deletes a good checkpoint it did not supersede: of the good
            // ones and those it wrote, the newest keep_last (3) must all be there.
            const QStringList after = stepCheckpoints(run);
            // Those it wrote: after the step it resumed from ("from step N").
            const QRegularExpressionMatch from = QRegularExpression("from step (\\d+)").match(p.out);
            std::set<QString> expectedKept = good;
            if (p.code == 0 && from.hasMatch())
                for (const QString& name : after)
                    if (name.mid(5, 8).toLongLong() > from.captured(1).toLongLong() && name != "step-99999999.pt")
                        expectedKept.insert(name);
            std::vector<QString> sorted(expectedKept.begin(), expectedKept.end());
            while (sorted.size() > 3)
                sorted.erase(sorted.begin());
            for (const QString& name : sorted)
                if (!after.contains(name))
                    failure = "resume deleted the good checkpoint " + name + " (left: " + after.join(", ") + ")";
        }
        record(stats, index, description, p.code == 0, failure, {run});
        if (failure.isEmpty())
            removePath(run);
    }
    finishClass(stats);
}

// ------------------------------------------------------------------ class 4: run directories

void TestFuzz::runDirectories()
{
    ClassStats& stats = m_stats[RunDirectories];
    stats.name = "run directories";
    const QStringList files = {"config.json", "tokenizer.json", "labels.json", "metrics.jsonl", "status.json",
                               "checkpoints", "log.txt"};
    enum Damage { Remove, Garbage, TruncateIt, WrongShape, ADirectory, MetricsLines, ConfigKey, Kinds };
    static const char* const damageNames[] = {"removed", "random bytes", "truncated", "valid JSON of the wrong shape",
                                              "a directory", "damaged lines", "a key changed"};
    const QStringList commands = {"eval", "inspect", "export", "resume"};
    const std::set<qint64> knownSteps = {2, 4};
    // The files each command reads: damage to another must not matter.
    const std::map<QString, QStringList> reads = {
        {"eval", {"config.json", "tokenizer.json", "labels.json", "checkpoints"}},
        {"inspect", {"config.json", "tokenizer.json", "labels.json", "checkpoints"}},
        {"export", {"config.json", "tokenizer.json", "labels.json", "checkpoints"}},
        {"resume", {"config.json", "tokenizer.json", "labels.json", "checkpoints", "metrics.jsonl", "status.json", "log.txt"}}};

    for (int index = 0; index < files.size() * 2 || timeLeft(0.9); ++index) {
        Rng rng = caseRng(m_seed, RunDirectories, index);
        const QString file = files[index % files.size()];
        // Every (file, command) pair in the first files x commands cases.
        const QString command = commands[(index / files.size()) % commands.size()];
        std::vector<Damage> damages = {Remove, Garbage, TruncateIt, ADirectory};
        if (file.endsWith(".json"))
            damages.push_back(WrongShape);
        if (file == "metrics.jsonl")
            damages = {MetricsLines, MetricsLines, MetricsLines, Garbage, TruncateIt, Remove};
        if (file == "config.json")
            damages.push_back(ConfigKey);
        if (file == "checkpoints")
            damages = {Remove, Garbage, Garbage};  // a file where the directory was
        const Damage damage = pick(rng, damages);

        const QString run = path(QString("rundir-%1").arg(index));
        copyTree(m_classificationRun, run);
        const QString target = run + "/" + file;
        QByteArray bytes = readBytes(target);
        QString description = file + " " + damageNames[damage];
        bool changesMeaning = false;  // a valid edit of what the run is: results may differ
        switch (damage) {
        case Remove:
            removePath(target);
            break;
        case Garbage:
            removePath(target);
            writeBytes(target, randomBytes(rng, uniform(rng, 0, 3000)));
            break;
        case TruncateIt:
            bytes.truncate(static_cast<int>(uniform(rng, 0, std::max<qint64>(0, bytes.size() - 1))));
            writeBytes(target, bytes);
            description += QString(" (%1 bytes)").arg(bytes.size());
            break;
        case WrongShape: {
            const std::vector<std::string> shapes = {"[]", "{}", "5", "\"x\"", "null", "[1,2,3]", "{\"kind\":\"word\"}",
                                                     "[\"a\",\"a\",\"b\"]", "[\"pos\"]", "{\"model\":{}}",
                                                     "{\"kind\":\"character\",\"vocabulary\":[1,2]}",
                                                     "{\"state\":7,\"step\":\"x\"}"};
            const std::string shape = pick(rng, shapes);
            writeBytes(target, QByteArray::fromStdString(shape));
            description += " (" + QString::fromStdString(shape) + ")";
            break;
        }
        case ADirectory:
            removePath(target);
            QDir().mkpath(target + "/x");
            break;
        case MetricsLines: {
            const std::vector<std::string> lines = {"garbage", "{", "[]", "5", "null", "{\"type\":\"train\",\"step\":1e308,\"loss\":1}",
                                                    "{\"type\":\"train\",\"step\":\"x\"}", "{\"step\":-5}",
                                                    "{\"type\":\"eval\",\"step\":[1]}", "{\"type\":\"train\",\"step\":3,\"loss\":", "\x01\x02\xff\xfe",
                                                    "{\"type\":\"probe\",\"step\":2,\"attention\":7}"};
            QList<QByteArray> all = bytes.split('\n');
            for (std::int64_t n = uniform(rng, 1, 3); n > 0; --n) {
                const std::string line = pick(rng, lines);
                all.insert(static_cast<int>(uniform(rng, 0, all.size())), QByteArray::fromStdString(line));
                description += " +" + QString::fromUtf8(QByteArray::fromStdString(line).toPercentEncoding("{}[]\":,. "));
            }
            if (uniform(rng, 0, 2) == 0) {  // and a last line cut short
                QByteArray joined = all.join('\n');
                joined.chop(static_cast<int>(uniform(rng, 1, 20)));
                writeBytes(target, joined);
                description += " (last line cut)";
            } else {
                writeBytes(target, all.join('\n'));
            }
            break;
        }
        case ConfigKey: {
            Json config = Json::parse(bytes.toStdString());
            const std::vector<KeyPath> paths = keyPaths(config);
            const KeyPath key = pick(rng, paths);
            const std::vector<Json> values = {nullptr, "x", -1, 0, 1e308, Json::array(), 64};
            valueAt(config, key) = pick(rng, values);
            writeBytes(target, QByteArray::fromStdString(config.dump(2)));
            description += " (" + dotted(key) + " = " + QString::fromStdString(valueAt(config, key).dump()) + ")";
            changesMeaning = true;
            break;
        }
        case Kinds:
            break;
        }
        const QString exportFile = path(QString("rundir-export-%1.pt").arg(index));
        const qint64 resumeSteps = 6;
        Proc p;
        if (command == "eval")
            p = runCli({"eval", run, "--json", "--threads", "1"});
        else if (command == "inspect")
            p = runCli({"inspect", run, "--text", "abc", "--json"});
        else if (command == "export")
            p = runCli({"export", run, "--out", exportFile});
        else
            p = runCli({"train", "--resume", "--out", run, "--steps", QString::number(resumeSteps)});
        description += " -> " + p.command();
        // A configuration key that was changed may be named by its key; a missing
        // checkpoints directory by the run ("RUN: the run has no checkpoint yet").
        QStringList names = {file};
        if (file == "checkpoints")
            names << run;
        QString failure = cleanEnd(p, names, damage == ConfigKey);
        const bool read = reads.at(command).contains(file);
        if (failure.isEmpty() && p.code != 0 && !read)
            failure = "refused over " + file + ", which " + command + " does not need: " + excerpt(p.err);
        if (failure.isEmpty() && p.code == 0 && !changesMeaning)
            failure = checkResult(command, p, m_classificationRun, exportFile, resumeSteps, knownSteps);
        record(stats, index, description, p.code == 0, failure, {run});
        if (failure.isEmpty())
            removePath(run);
    }
    finishClass(stats);
}

// ------------------------------------------------------------------ a hostile machine

namespace {

// A tmpfs of `kib` KiB at `folder` (root only: false elsewhere), remounted to
// another size or read-only, and gone with the object.
class SmallDisk {
public:
    SmallDisk(const QString& folder, qint64 kib) : m_folder(folder.toStdString())
    {
        QDir().mkpath(folder);
        m_mounted = ::mount("tmpfs", m_folder.c_str(), "tmpfs", 0, ("size=" + std::to_string(kib) + "k").c_str()) == 0;
    }
    ~SmallDisk()
    {
        if (m_mounted)
            ::umount2(m_folder.c_str(), MNT_DETACH);
    }
    bool mounted() const { return m_mounted; }
    bool resize(qint64 kib) const
    {
        return ::mount("tmpfs", m_folder.c_str(), "tmpfs", MS_REMOUNT, ("size=" + std::to_string(kib) + "k").c_str()) == 0;
    }
    bool readOnly() const { return ::mount("tmpfs", m_folder.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr) == 0; }

private:
    std::string m_folder;
    bool m_mounted = false;
};

// The steps of RUN/metrics.jsonl's "train" lines, in file order.
QList<qint64> trainSteps(const QString& run)
{
    QList<qint64> steps;
    for (const QByteArray& line : readBytes(run + "/metrics.jsonl").split('\n')) {
        const QJsonObject json = QJsonDocument::fromJson(line).object();
        if (json.value("type").toString() == "train")
            steps << static_cast<qint64>(json.value("step").toDouble());
    }
    return steps;
}

// Empty when the train lines are steps 1..last, each once, in order.
QString everyStepOnce(const QString& run, qint64 last)
{
    const QList<qint64> steps = trainSteps(run);
    for (qint64 step = 1; step <= last; ++step)
        if (steps.size() < step || steps[step - 1] != step)
            return QString("metrics.jsonl's train lines are not steps 1..%1 once each: %2 lines, line %3 is step %4")
                .arg(last)
                .arg(steps.size())
                .arg(step)
                .arg(steps.size() >= step ? steps[step - 1] : -1);
    return steps.size() == last ? QString() : QString("%1 train lines for %2 steps").arg(steps.size()).arg(last);
}

// Empty when NAME.json's record of an export matches every file it lists (SHA-256
// by Qt), no temporary is left beside it, and the weights are listed.
QString wholeExport(const QString& weights)
{
    const QString document = weights.left(weights.lastIndexOf('.')) + ".json";
    const QJsonObject record = jsonObject(QString::fromUtf8(readBytes(document))).value("export").toObject()
                                   .value("files").toObject();
    if (!record.contains(fileName(weights)))
        return document + " does not record " + fileName(weights);
    for (auto it = record.begin(); it != record.end(); ++it) {
        const QByteArray digest = QCryptographicHash::hash(readBytes(QFileInfo(weights).dir().filePath(it.key())),
                                                           QCryptographicHash::Sha256).toHex();
        if (QString::fromLatin1(digest) != it.value().toString())
            return it.key() + "'s SHA-256 is not the one " + fileName(document) + " records";
    }
    const QStringList left = QFileInfo(weights).dir().entryList({"*.tmp-*"}, QDir::Files);
    return left.isEmpty() ? QString() : "temporaries left: " + left.join(", ");
}

}  // namespace

// Issue 38's classes. Disk full and read-only need root (a tmpfs is mounted);
// elsewhere those kinds are counted as skipped and said so.
void TestFuzz::hostileMachine()
{
    ClassStats& stats = m_stats[HostileMachine];
    stats.name = "hostile machine";
    enum Kind { DiskFull, ReadOnly, TwoTrainers, TwoExports, KilledExport, ChangedText, Kinds };
    int skipped = 0;
    for (int index = 0; index < Kinds || timeLeft(1.0); ++index) {
        Rng rng = caseRng(m_seed, HostileMachine, index);
        const Kind kind = static_cast<Kind>(index % Kinds);
        const QString work = path(QString("hostile-%1").arg(index));
        QDir().mkpath(work);
        QString description, failure;
        bool accepted = true;
        switch (kind) {
        case DiskFull: {
            // A run on a disk that fills, then has room again: resumed, it has
            // every metrics line once.
            const qint64 kib = uniform(rng, 40, 400);
            SmallDisk disk(work + "/disk", kib);
            if (!disk.mounted()) {
                ++skipped;
                continue;
            }
            Json document = m_listops;
            const qint64 steps = uniform(rng, 12, 40);
            document["train"]["steps"] = steps;
            document["train"]["checkpoint_every"] = uniform(rng, 2, 8);
            document["train"]["eval_every"] = uniform(rng, 3, 10);
            const QString config = writeDocument(QString("hostile-%1.json").arg(index), document);
            const QString run = work + "/disk/run";
            description = QString("disk full: %1 KiB, %2 steps").arg(kib).arg(steps);
            const Proc first = train(config, run);
            failure = cleanEnd(first, {"No space left on device (ENOSPC)", run});
            accepted = first.code == 0;
            if (!failure.isEmpty())
                break;
            disk.resize(64 * 1024);
            if (first.code != 0) {
                const bool checkpointed = !stepCheckpoints(run).isEmpty();
                if (!checkpointed)
                    removePath(run);
                const Proc second = checkpointed ? runCli({"train", "--resume", "--out", run}) : train(config, run);
                description += " -> " + excerpt(first.err, 120) + " -> " + second.command();
                if (second.code != 0)
                    failure = "after space came back: " + cleanEnd(second, {}) + excerpt(second.err);
            }
            if (failure.isEmpty())
                failure = everyStepOnce(run, steps);
            break;
        }
        case ReadOnly: {
            // A finished run on a folder that turned read-only: readers work,
            // a writer stops naming the reason.
            SmallDisk disk(work + "/disk", 8 * 1024);
            if (!disk.mounted()) {
                ++skipped;
                continue;
            }
            const QString run = work + "/disk/run";
            copyTree(m_listopsRun, run);
            disk.readOnly();
            const QString command = pick(rng, std::vector<QString>{"resume", "eval", "inspect", "export", "export into"});
            Proc p;
            if (command == "resume")
                p = runCli({"train", "--resume", "--out", run, "--steps", "8"});
            else if (command == "eval")
                p = runCli({"eval", run, "--json"});
            else if (command == "inspect")
                p = runCli({"inspect", run, "--text", "[MAX 1 2 ]", "--json"});
            else
                p = runCli({"export", run, "--out", (command == "export" ? work : work + "/disk") + "/m.safetensors"});
            description = "read-only folder: " + p.command();
            failure = cleanEnd(p, {"Read-only file system"});  // spdlog's log.txt says it without the name
            accepted = p.code == 0;
            const bool writes = command == "resume" || command == "export into";
            if (failure.isEmpty() && (p.code == 0) == writes)
                failure = writes ? "wrote into a read-only folder?" : "a reader refused a read-only run: " + excerpt(p.err);
            break;
        }
        case TwoTrainers: {
            // Two resumes of one run at once: one is refused, or they take turns.
            const QString run = work + "/run";
            copyTree(m_listopsRun, run);
            const QStringList args = {"train", "--resume", "--out", run, "--steps", "14"};
            QProcess a, b;
            a.start(WIDELAB_CLI, args);
            QThread::msleep(static_cast<unsigned long>(uniform(rng, 0, 200)));
            b.start(WIDELAB_CLI, args);
            a.waitForFinished(g_timeoutMs);
            b.waitForFinished(g_timeoutMs);
            description = "two trainers of one run";
            const QString errA = QString::fromUtf8(a.readAllStandardError()), errB = QString::fromUtf8(b.readAllStandardError());
            for (const auto& [process, err] : {std::pair<QProcess*, QString>{&a, errA}, {&b, errB}})
                if (process->exitStatus() != QProcess::NormalExit || (process->exitCode() != 0 && !err.contains("in use by another training run")))
                    failure = "a trainer ended otherwise: " + excerpt(err);
            if (failure.isEmpty())
                failure = everyStepOnce(run, 14);
            break;
        }
        case TwoExports:
        case KilledExport: {
            // Exports of two checkpoints to one name at once, or one killed
            // midway over an earlier one: the set is whole afterwards (the
            // next export's, for the killed one) and nothing is left over.
            const QString weights = work + "/m." + pick(rng, std::vector<QString>{"safetensors", "pt"});
            const QStringList first = {"export", m_classificationRun, "--out", weights, "--checkpoint", checkpointName(2)};
            const QStringList second = {"export", m_classificationRun, "--out", weights, "--checkpoint", checkpointName(4)};
            if (kind == TwoExports) {
                QProcess a, b;
                a.start(WIDELAB_CLI, first);
                b.start(WIDELAB_CLI, second);
                a.waitForFinished(g_timeoutMs);
                b.waitForFinished(g_timeoutMs);
                description = "two exports to one name at once";
                if (a.exitCode() != 0 || b.exitCode() != 0 || a.exitStatus() != QProcess::NormalExit || b.exitStatus() != QProcess::NormalExit)
                    failure = "an export failed: " + excerpt(QString::fromUtf8(a.readAllStandardError() + b.readAllStandardError()));
            } else {
                const Proc earlier = runCli(first);
                QProcess killed;
                killed.start(WIDELAB_CLI, second);
                killed.waitForStarted();
                const qint64 delay = uniform(rng, 0, 1500);
                QThread::msleep(static_cast<unsigned long>(delay));
                ::kill(static_cast<pid_t>(killed.processId()), SIGKILL);
                killed.waitForFinished(g_timeoutMs);
                const Proc again = runCli(first);
                description = QString("an export killed after %1 ms, then exported again").arg(delay);
                if (earlier.code != 0 || again.code != 0)
                    failure = "an export failed: " + excerpt(earlier.err + again.err);
            }
            if (failure.isEmpty())
                failure = wholeExport(weights);
            break;
        }
        case ChangedText: {
            // A language model's text replaced by another of the same size and
            // time (cp -p), or its cache cut short: eval tokenizes again.
            const QString run = work + "/run";
            copyTree(m_languageModelRun, run);
            const QString text = work + "/text.txt";
            QByteArray original = readBytes(path("base.txt"));
            writeBytes(text, original);
            Json config = Json::parse(readBytes(run + "/config.json").toStdString());
            config["task"]["path"] = text.toStdString();
            writeBytes(run + "/config.json", QByteArray::fromStdString(config.dump(2)));
            removePath(run + "/cache");  // base.txt's
            const Proc before = runCli({"eval", run, "--json"});
            const bool cutCache = uniform(rng, 0, 1) == 0;
            if (cutCache) {
                const QStringList caches = QDir(run + "/cache").entryList({"*.tokens"}, QDir::Files);
                for (const QString& cache : caches)
                    std::filesystem::resize_file((run + "/cache/" + cache).toStdString(),
                                                 static_cast<std::uintmax_t>(uniform(rng, 0, 200)));
                description = "token cache cut short";
            } else {
                struct stat times = {};
                ::stat(text.toLocal8Bit().constData(), &times);
                std::reverse(original.begin(), original.end());
                writeBytes(text, original);
                const struct timespec kept[2] = {times.st_atim, times.st_mtim};  // as cp -p keeps them
                ::utimensat(AT_FDCWD, text.toLocal8Bit().constData(), kept, 0);
                description = "text replaced, same size and time";
            }
            const Proc after = runCli({"eval", run, "--json"});
            failure = cleanEnd(after, {text});
            if (failure.isEmpty() && (before.code != 0 || after.code != 0))
                failure = "eval failed: " + excerpt(before.err + after.err);
            const double lossBefore = jsonObject(before.out).value("loss").toDouble();
            const double lossAfter = jsonObject(after.out).value("loss").toDouble();
            if (failure.isEmpty() && cutCache != (lossBefore == lossAfter))
                failure = QString("eval loss %1 then %2: %3").arg(lossBefore).arg(lossAfter)
                              .arg(cutCache ? "the same text evaluates otherwise" : "the old tokens were used");
            if (failure.isEmpty() && QDir(run + "/cache").entryList({"*"}, QDir::Files).size() != 1)
                failure = "cache/ holds " + QDir(run + "/cache").entryList({"*"}, QDir::Files).join(", ");
            break;
        }
        case Kinds:
            break;
        }
        record(stats, index, description, accepted, failure, {work});
        if (failure.isEmpty())
            removePath(work);
    }
    if (skipped > 0)
        qInfo().noquote() << QString("fuzz hostile machine: %1 disk-full and read-only cases skipped: mounting a "
                                     "tmpfs needs root").arg(skipped);
    finishClass(stats);
}

QTEST_GUILESS_MAIN(TestFuzz)
#include "tst_fuzz.moc"
