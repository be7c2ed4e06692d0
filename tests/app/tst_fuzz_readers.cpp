// Issue 15's fuzz suite, class 5: the desktop app's readers of a run directory
// (RunRecord::addMetricsLine, loadRunRecord, FollowReader) fed generated damaged
// metrics.jsonl lines and status.json files in-process. No case may crash; a
// point on a curve must carry the line's own numbers (a damaged field is not
// read as 0); loading a run with a damaged line warns naming the file and line.
// Seeded by WIDELAB_FUZZ_SEED as tst_fuzz_inputs and tst_fuzz_runs; it takes a second or two.
#include "FollowReader.h"
#include "RunRecord.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <random>

using namespace widelab;

namespace {

constexpr std::uint64_t kDefaultSeed = 15015;

std::uint64_t fuzzSeed()
{
    bool ok = false;
    const qulonglong seed = qEnvironmentVariable("WIDELAB_FUZZ_SEED").toULongLong(&ok);
    return ok ? seed : kDefaultSeed;
}

using Rng = std::mt19937_64;

std::int64_t uniform(Rng& rng, std::int64_t low, std::int64_t high)
{
    return std::uniform_int_distribution<std::int64_t>(low, high)(rng);
}

bool writeBytes(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly | QIODevice::Truncate) && file.write(bytes) == bytes.size();
}

// Valid lines as the trainer writes them (docs/run-directory.md).
const QList<QByteArray> kValidLines = {
    R"({"type":"train","step":10,"wall_seconds":1.5,"loss":2.25,"task_loss":2.2,"balance_loss":0.05,"accuracy":0.25,"learning_rate":0.001,"gradient_norm":1.5,"tokens_per_second":1000,"step_seconds":0.01,"layernorm":{"attention_gamma":[[1,1]],"attention_beta":[[0,0]],"ffn_gamma":[[1,1]],"ffn_beta":[[0,0]]},"routing":[{"block":0,"tokens_per_expert":[3,5],"dropped_percent_per_choice":[0,1],"unused_experts":0,"router_entropy":0.5,"load_vs_fair":[0.8,1.2]}],"paths":[{"block":0,"sublayer":"attention","paths":2,"alpha":[0.5,0.5],"beta":1,"diversity":0.1}]})",
    R"({"type":"eval","step":10,"split":"validation","loss":2.5,"accuracy":0.2,"perplexity":0,"examples":16})",
    R"({"type":"probe","step":10,"text":"ab","tokens":["a","b"],"attention":[[[[1,0],[0.5,0.5]]]],"experts":[[[0],[1]]],"prediction":[0.5,0.5],"prediction_labels":["x","y"]})",
};

const char* const kCurveFields[] = {"loss", "accuracy", "balance_loss", "learning_rate", "gradient_norm",
                                    "tokens_per_second"};

// A damaged version of a valid line: a field of another type, an absurd number,
// cut short, random bytes, deep nesting, or text that is not JSON.
QByteArray damaged(Rng& rng, QString& how)
{
    const QByteArray valid = kValidLines[static_cast<int>(uniform(rng, 0, kValidLines.size() - 1))];
    QJsonObject json = QJsonDocument::fromJson(valid).object();
    const QStringList keys = json.keys();
    const QString key = keys[static_cast<int>(uniform(rng, 0, keys.size() - 1))];
    const QList<QJsonValue> values = {QJsonValue("x"), QJsonValue(QJsonArray{1, 2}), QJsonValue(QJsonObject{{"a", 1}}),
                                      QJsonValue(true), QJsonValue(QJsonValue::Null), QJsonValue(1e308),
                                      QJsonValue(-1e308), QJsonValue(-5), QJsonValue(QJsonArray{QJsonArray{}}),
                                      QJsonValue(QJsonArray{QJsonArray{QJsonArray{"x"}}})};
    switch (uniform(rng, 0, 5)) {
    case 0:
    case 1: {
        const QJsonValue value = values[static_cast<int>(uniform(rng, 0, values.size() - 1))];
        json.insert(key, value);
        how = key + " = " + QString::fromUtf8(QJsonDocument(QJsonArray{value}).toJson(QJsonDocument::Compact));
        return QJsonDocument(json).toJson(QJsonDocument::Compact);
    }
    case 2: {
        const qint64 length = uniform(rng, 1, valid.size() - 1);
        how = QString("cut at %1").arg(length);
        return valid.left(static_cast<int>(length));
    }
    case 3: {
        QByteArray bytes(static_cast<int>(uniform(rng, 1, 300)), '\0');
        for (auto& byte : bytes) {
            byte = static_cast<char>(uniform(rng, 1, 255));
            if (byte == '\n')
                byte = ' ';
        }
        how = "random bytes";
        return bytes;
    }
    case 4: {
        const int depth = static_cast<int>(std::vector<int>{10, 1000, 100000}[static_cast<std::size_t>(uniform(rng, 0, 2))]);
        how = QString("%1 nested at %2").arg(depth).arg(key);
        QByteArray text = valid;
        const QByteArray needle = "\"" + key.toUtf8() + "\":";
        return text.insert(text.indexOf(needle) + needle.size(), QByteArray(depth, '[') + "1" + QByteArray(depth, ']') + ",\"zz\":");
    }
    default: {
        const QList<QByteArray> texts = {"NaN", "[]", "5", "null", "\"train\"", "{\"type\":\"train\",\"step\":NaN}",
                                         "{\"type\":\"train\",\"step\":1e999,\"loss\":1}", "\xff\xfe{}"};
        const QByteArray text = texts[static_cast<int>(uniform(rng, 0, texts.size() - 1))];
        how = "text " + QString::fromLatin1(text.toPercentEncoding("{}[]\":,. "));
        return text;
    }
    }
}

// Empty when every point `added` holds the numbers of `line`: no damaged field
// read as a number it does not hold, and every point at the line's step.
QString pointsFaithful(const QByteArray& line, const CurveBatch& added)
{
    const QJsonObject json = QJsonDocument::fromJson(line).object();
    for (auto it = added.begin(); it != added.end(); ++it) {
        QString field = it.key();
        if (json.value("type").toString() == "eval")
            field = field == "validation_loss" ? "loss" : field == "validation_accuracy" ? "accuracy" : field;
        const QJsonValue value = json.value(field), step = json.value("step");
        for (const CurvePoint& point : it.value()) {
            if (!step.isDouble() || point.step != step.toDouble() || !std::isfinite(point.step))
                return QString("a point of %1 at step %2 from a line whose step is %3")
                    .arg(it.key())
                    .arg(point.step)
                    .arg(QString::fromUtf8(QJsonDocument(QJsonArray{step}).toJson(QJsonDocument::Compact)));
            // A tag (routing/block_2/..., memory/...) names a number inside the line, not
            // a field of it: what it holds is checked where the line decodes (tst_metricscodec,
            // tst_metricscalars); here, that it comes from this line's step.
            if (it.key().contains(QLatin1Char('/')))
                continue;
            if (value.isDouble() ? point.value != value.toDouble() : !(value.isNull() && std::isnan(point.value)))
                return QString("a point of %1 with value %2 from a line where it is %3")
                    .arg(it.key())
                    .arg(point.value)
                    .arg(QString::fromUtf8(QJsonDocument(QJsonArray{value}).toJson(QJsonDocument::Compact)));
        }
    }
    return {};
}

QStringList g_messages;

void collectMessages(QtMsgType type, const QMessageLogContext&, const QString& message)
{
    if (type != QtDebugMsg && type != QtInfoMsg)
        g_messages << message;
}

}  // namespace

class TestFuzzReaders : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("fuzz readers: seed %llu (WIDELAB_FUZZ_SEED)", static_cast<unsigned long long>(fuzzSeed())); }
    void metricsLines();
    void runWithDamagedLines();
    void damagedStatus();
};

// Each damaged line alone into a record: no crash, no invented point.
void TestFuzzReaders::metricsLines()
{
    Rng rng(fuzzSeed() ^ 0x5a5a);
    QStringList failures;
    int cases = 0;
    for (; cases < 500; ++cases) {
        QString how;
        const QByteArray line = damaged(rng, how);
        RunRecord record;
        const CurveBatch added = record.addMetricsLine(line);
        if (const QString problem = pointsFaithful(line, added); !problem.isEmpty())
            failures << QString("case %1 (%2): %3").arg(cases).arg(how, problem);
    }
    qInfo("fuzz readers: %d damaged lines, %lld read into invented points", cases, static_cast<long long>(failures.size()));
    failures.removeDuplicates();
    QVERIFY2(failures.isEmpty(), qPrintable(failures.mid(0, 15).join("\n")));
}

// A run whose metrics.jsonl holds a damaged line among good ones: the good
// lines' points are all there, and the window is told which line was skipped.
void TestFuzzReaders::runWithDamagedLines()
{
    Rng rng(fuzzSeed() ^ 0xa5a5);
    QStringList failures;
    int cases = 0;
    for (; cases < 40; ++cases) {
        QTemporaryDir dir;
        writeBytes(dir.filePath("config.json"), "{}");
        QByteArray text;
        const int bad = static_cast<int>(uniform(rng, 1, 6));
        QString how;
        int goodTrainLines = 0;
        for (int line = 1; line <= 6; ++line) {
            if (line == bad) {
                QByteArray damage = damaged(rng, how);
                damage.replace('\n', ' ');
                text += damage + "\n";
            } else {
                // Steps 11 to 16, past the damaged line's own step (10): a damage that leaves
                // that line valid (a finite step_seconds) must not make a good one go back.
                text += QStringLiteral(R"({"type":"train","step":%1,"wall_seconds":%1,"loss":%2})").arg(10 + line).arg(0.5 * line).toUtf8() + "\n";
                ++goodTrainLines;
            }
        }
        writeBytes(dir.filePath("metrics.jsonl"), text);
        RunRecord record;
        QString error;
        g_messages.clear();
        const QtMessageHandler previous = qInstallMessageHandler(collectMessages);
        QStringList warnings;  // the loader's own list, what the window's log shows
        const bool loaded = loadRunRecord(dir.path(), record, &error, nullptr, &warnings);
        qInstallMessageHandler(previous);
        g_messages += warnings;
        if (!loaded) {
            failures << QString("case %1 (%2): not loaded: %3").arg(cases).arg(how, error);
            continue;
        }
        int lossPoints = 0;
        for (const CurvePoint& point : record.curves.value("loss"))
            lossPoints += point.step >= 11 && point.step <= 16 && point.value == 0.5 * (point.step - 10) ? 1 : 0;
        if (lossPoints < goodTrainLines)
            failures << QString("case %1 (%2): %3 of the %4 good lines' loss points").arg(cases).arg(how).arg(lossPoints).arg(goodTrainLines);
        // A line that is not a train, eval or probe line of this format is skipped; say so.
        const QJsonObject json = QJsonDocument::fromJson(text.split('\n').at(bad - 1)).object();
        const bool wellFormed = !json.isEmpty() && json.value("step").isDouble() && std::isfinite(json.value("step").toDouble());
        if (!wellFormed) {
            const bool named = std::any_of(g_messages.begin(), g_messages.end(), [&](const QString& m) {
                return m.contains("metrics.jsonl") && m.contains(QString::number(bad));
            });
            if (!named)
                failures << QString("case %1 (%2 at line %3): no warning names metrics.jsonl and the line (messages: %4)")
                                .arg(cases)
                                .arg(how)
                                .arg(bad)
                                .arg(g_messages.join(" | "));
        }
    }
    qInfo("fuzz readers: %d runs with a damaged metrics line, %lld failed", cases, static_cast<long long>(failures.size()));
    QVERIFY2(failures.isEmpty(), qPrintable(failures.mid(0, 15).join("\n")));
}

// A damaged status.json is reported naming the file, never taken for a status.
void TestFuzzReaders::damagedStatus()
{
    Rng rng(fuzzSeed() ^ 0x3c3c);
    const QList<QByteArray> texts = {"", "{", "[]", "null", "5", "{\"state\":\"training\"}",
                                     "{\"host\":1,\"pid\":\"x\",\"state\":\"flying\",\"step\":-1,\"total_steps\":1e308,\"updated\":\"now\"}",
                                     "{\"host\":\"h\",\"pid\":1,\"state\":\"training\",\"step\":1e308,\"total_steps\":5,\"updated\":0}"};
    QStringList failures;
    int cases = 0;
    for (; cases < 40; ++cases) {
        QTemporaryDir dir;
        writeBytes(dir.filePath("config.json"), "{}");
        QByteArray text = texts[static_cast<int>(uniform(rng, 0, texts.size() - 1))];
        if (uniform(rng, 0, 2) == 0) {
            text = QByteArray(static_cast<int>(uniform(rng, 1, 200)), '\0');
            for (auto& byte : text)
                byte = static_cast<char>(uniform(rng, 0, 255));
        }
        writeBytes(dir.filePath("status.json"), text);
        FollowReader reader(dir.path(), LineTail((dir.path() + "/metrics.jsonl").toStdString()),
                            LineTail((dir.path() + "/log.txt").toStdString()));
        const FollowUpdate update = reader.look(true);
        const QString shown = QString::fromLatin1(text.toPercentEncoding("{}[]\":,. "));
        if (update.status && update.statusError.isEmpty()) {
            // Taken as a status: then it must be one (a known state, a sane step).
            const RunStatus& s = *update.status;
            if (s.step < 0 || s.step > s.totalSteps)
                failures << QString("case %1 (%2): taken as a status at step %3 of %4").arg(cases).arg(shown).arg(s.step).arg(s.totalSteps);
        } else if (!update.statusError.contains("status.json")) {
            failures << QString("case %1 (%2): the error does not name status.json: %3").arg(cases).arg(shown, update.statusError);
        }
    }
    qInfo("fuzz readers: %d damaged status.json, %lld failed", cases, static_cast<long long>(failures.size()));
    QVERIFY2(failures.isEmpty(), qPrintable(failures.mid(0, 15).join("\n")));
}

QTEST_MAIN(TestFuzzReaders)
#include "tst_fuzz_readers.moc"
