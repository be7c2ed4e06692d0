// defines: what issue 15's fuzz suite (tst_fuzz_inputs, tst_fuzz_runs) shares (widelab::fuzztest): the
// seed and one generator per case, files, widelab-cli processes and how each must end, train lines
// compared, and FuzzTestCase: the setup both parts start from (the valid documents and their runs),
// each case recorded and counted per class, and the part's share of the time budget.
//
// Seeded and bounded: WIDELAB_FUZZ_SEED (default below) fixes every case,
// WIDELAB_FUZZ_SECONDS (default 150) bounds the whole suite, both parts together:
// each part gets its own share of it (FuzzTestCase's constructor), timed from its own
// start, and the two add up to it: tst_fuzz_inputs 60 % (configurations, then data
// files), tst_fuzz_runs 40 % (a run stopped and resumed, checkpoints, run directories,
// a hostile machine; more than the classes' share of the one suite, for the
// least cases of each kind that it runs whatever the budget, and its own setup).
// Within a part the classes divide its share as they divided the one suite's budget.
// WIDELAB_FUZZ_TIMEOUT (default 60) bounds each process; a
// process still running then is a hang; WIDELAB_FUZZ_VERBOSE=1 prints every case.
// A failing case is printed with its seed, class and index, and its input is kept
// under $TMPDIR/widelab-fuzz-SEED/ so that it can be run again by hand.
#pragma once

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

namespace widelab::fuzztest {

using Json = nlohmann::ordered_json;
using Rng = std::mt19937_64;

constexpr std::uint64_t kDefaultSeed = 15015;

// ------------------------------------------------------------------ settings

inline std::uint64_t fuzzSeed()
{
    bool ok = false;
    const qulonglong seed = qEnvironmentVariable("WIDELAB_FUZZ_SEED").toULongLong(&ok);
    return ok ? seed : kDefaultSeed;
}

inline double envSeconds(const char* name, double fallback)
{
    bool ok = false;
    const double value = qEnvironmentVariable(name).toDouble(&ok);
    return ok && value > 0 ? value : fallback;
}

// One generator per case, from (seed, class, index): a case is the same whatever
// ran before it, and the budget only decides how many run.
inline Rng caseRng(std::uint64_t seed, int klass, int index)
{
    std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                           static_cast<std::uint32_t>(klass), static_cast<std::uint32_t>(index)};
    return Rng(sequence);
}

inline std::int64_t uniform(Rng& rng, std::int64_t low, std::int64_t high)  // [low, high]
{
    return std::uniform_int_distribution<std::int64_t>(low, high)(rng);
}

template <typename T>
const T& pick(Rng& rng, const std::vector<T>& items)
{
    return items[static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(items.size()) - 1))];
}

inline QByteArray randomBytes(Rng& rng, std::int64_t count)
{
    QByteArray bytes(static_cast<int>(count), '\0');
    for (auto& byte : bytes)
        byte = static_cast<char>(uniform(rng, 0, 255));
    return bytes;
}

// ------------------------------------------------------------------ files

inline QByteArray readBytes(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

inline void writeBytes(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        qFatal("cannot write %s", qPrintable(path));
    file.write(bytes);
}

// With Qt, not std::filesystem::remove_all: PyPI's libtorch.so exports its own
// copy of libstdc++'s filesystem functions, and in a program linked with it that
// copy of remove_all calls through a null pointer (LibTorch 2.11, GCC 12).
inline void removePath(const QString& path)
{
    if (QFileInfo(path).isDir() && !QFileInfo(path).isSymLink())
        QDir(path).removeRecursively();
    else
        QFile::remove(path);
}

inline QString fileName(const QString& path) { return QFileInfo(path).fileName(); }

// Checkpoint files of a run directory, "step-NNNNNNNN.pt" names, sorted.
inline QStringList stepCheckpoints(const QString& run)
{
    QStringList names = QDir(run + "/checkpoints").entryList({"step-*.pt"}, QDir::Files, QDir::Name);
    static const QRegularExpression pattern("^step-\\d{8}\\.pt$");
    names = names.filter(pattern);
    return names;
}

inline QString checkpointName(qint64 step) { return QString("step-%1.pt").arg(step, 8, 10, QLatin1Char('0')); }

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

inline int g_timeoutMs = 60000;

inline Proc runCli(const QStringList& args, int timeoutMs = 0)
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

inline QString excerpt(const QString& text, int length = 400)
{
    QString t = text.trimmed();
    if (t.size() > length)
        t = t.left(length) + " [...]";
    return t.replace('\n', " | ");
}

// Empty when the process ended as every case must end; otherwise why not.
// A failure must name one of `names` (a file, its path, a dotted key); with
// `anyKey`, any dotted configuration key counts as named too.
inline QString cleanEnd(const Proc& p, const QStringList& names, bool anyKey = false)
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

// The "train" lines of RUN/metrics.jsonl after `afterStep`, as "step loss accuracy
// learning_rate gradient_norm" with every digit: what must not change.
inline QStringList trainLines(const QString& run, qint64 afterStep = -1)
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
inline QString compareLines(const QStringList& got, const QStringList& expected)
{
    for (int i = 0; i < std::max(got.size(), expected.size()); ++i) {
        const QString a = i < got.size() ? got[i] : "(none)", b = i < expected.size() ? expected[i] : "(none)";
        if (a != b)
            return QString("train line %1: got \"%2\", expected \"%3\"").arg(i).arg(a, b);
    }
    return {};
}

// ------------------------------------------------------------------ bookkeeping

struct ClassStats {
    QString name;
    int cases = 0, accepted = 0, refused = 0, failed = 0;
    QStringList failures;
};

// ------------------------------------------------------------------ JSON documents

using KeyPath = std::vector<std::string>;

inline QString dotted(const KeyPath& path)
{
    QStringList parts;
    for (const auto& key : path)
        parts << QString::fromStdString(key);
    return parts.join('.');
}

inline void collectPaths(const Json& json, KeyPath& prefix, std::vector<KeyPath>& paths)
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

inline std::vector<KeyPath> keyPaths(const Json& json)
{
    std::vector<KeyPath> paths;
    KeyPath prefix;
    collectPaths(json, prefix, paths);
    return paths;
}

inline Json& valueAt(Json& json, const KeyPath& path)
{
    Json* node = &json;
    for (const auto& key : path)
        node = &(*node)[key];
    return *node;
}

// ==================================================================== the suite

// The setup, the bookkeeping and the budget of both parts. A part runs the classes that
// in the one suite ran from `from` to `to` of its budget (the shares its classes pass to
// timeLeft), in `weight` of WIDELAB_FUZZ_SECONDS on its own clock: a class that ran until
// `share` of the budget runs until (share - from) / (to - from) of the part's time.
class FuzzTestCase : public QObject {
protected:
    FuzzTestCase(const char* part, double from, double to, double weight)
        : m_part(part), m_sliceFrom(from), m_sliceTo(to), m_weight(weight)
    {
    }

    void initTestCase();
    void cleanupTestCase();
    // This part's slice of the budget, said once initTestCase has read it.
    void logSlice() const
    {
        qInfo().noquote() << QString("fuzz %1: %2 s of the %3 s budget (the one suite's %4 to %5 of it)")
                                 .arg(m_part)
                                 .arg(m_weight * m_budgetSeconds)
                                 .arg(m_budgetSeconds)
                                 .arg(m_sliceFrom)
                                 .arg(m_sliceTo);
    }

    enum Class { Configurations = 1, DataFiles = 2, Checkpoints = 3, RunDirectories = 4, HostileMachine = 5 };

    bool timeLeft(double share) const
    {
        return m_clock.elapsed()
               < (share - m_sliceFrom) / (m_sliceTo - m_sliceFrom) * m_weight * m_budgetSeconds * 1000.0;
    }
    QString path(const QString& name) const { return m_dir.filePath(name); }
    QString writeDocument(const QString& name, const Json& document) const;
    Proc train(const QString& config, const QString& out, const QStringList& extra = {});
    void finishClass(ClassStats& stats);
    // Records one case: empty `failure` is a pass (accepted or refused cleanly).
    void record(ClassStats& stats, int index, const QString& description, bool accepted, const QString& failure,
                const QStringList& keep);

    const char* m_part;
    double m_sliceFrom, m_sliceTo;  // the one suite's shares its classes ran in
    double m_weight;                // this part's share of m_budgetSeconds
    QTemporaryDir m_dir;
    QElapsedTimer m_clock;
    double m_budgetSeconds = 150;  // WIDELAB_FUZZ_SECONDS: both parts together
    bool m_verbose = false;  // WIDELAB_FUZZ_VERBOSE: every case, not only the failing ones
    std::uint64_t m_seed = kDefaultSeed;
    QString m_keepDir;
    std::map<int, ClassStats> m_stats;

    Json m_listops, m_classification, m_languageModel;
    std::vector<std::pair<QString, Json>> m_presets;
    QByteArray m_tsv;            // the classification base file (LF)
    QString m_listopsRun;        // checkpoints at 2, 4, 6; best.pt
    QString m_foreignRun;        // another architecture
    QString m_classificationRun; // checkpoints at 2, 4; labels.json
    QString m_languageModelRun;  // checkpoints at 2, 4; cache/
};

inline QString FuzzTestCase::writeDocument(const QString& name, const Json& document) const
{
    const QString file = path(name);
    writeBytes(file, QByteArray::fromStdString(document.dump(2)));
    return file;
}

inline Proc FuzzTestCase::train(const QString& config, const QString& out, const QStringList& extra)
{
    return runCli(QStringList{"train", config, "--out", out} + extra);
}

inline void FuzzTestCase::record(ClassStats& stats, int index, const QString& description, bool accepted,
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

inline void FuzzTestCase::finishClass(ClassStats& stats)
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

inline void FuzzTestCase::initTestCase()
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

inline void FuzzTestCase::cleanupTestCase()
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

}  // namespace widelab::fuzztest
