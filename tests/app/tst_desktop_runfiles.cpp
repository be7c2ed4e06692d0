// Tests of the desktop app (app/gui) reading a run's files: metrics lines checked where they are
// decoded, damaged metrics and run files as messages naming the file, the insights live and read back
// alike (text and image probes, the true class), and what the configuration says of heads and probes.
// Runs offscreen (QT_QPA_PLATFORM=offscreen); no torch header is included here.
#include "DesktopTestSupport.h"

using namespace widelab;
using namespace widelab::desktoptest;

namespace {

// A metrics.jsonl line through the core's reader, as RunRecord::addMetricsLine reads it.
std::optional<MetricsRecord> decodedLine(const QByteArray& line, QString* reason)
{
    std::string why;
    std::optional<MetricsRecord> record =
        decodeMetricsLine(std::string_view(line.constData(), static_cast<std::size_t>(line.size())), &why);
    if (!record && reason)
        *reason = QString::fromStdString(why);
    return record;
}

// `line` as a line of `type` ("type" may be left out), read by the core's checked
// reader as RunRecord::add is given it: nullopt, saying why, for a line the
// reader refuses or one of another type.
std::optional<MetricsRecord> lineOfType(QJsonObject line, const char* type, QString* reason)
{
    if (!line.contains(QStringLiteral("type")))
        line.insert(QStringLiteral("type"), QLatin1String(type));
    std::optional<MetricsRecord> record = decodedLine(QJsonDocument(line).toJson(QJsonDocument::Compact), reason);
    if (record && record->typeName != type) {
        if (reason)
            *reason = QStringLiteral("a %1 line, not a %2 line").arg(QString::fromStdString(record->typeName), QLatin1String(type));
        return std::nullopt;
    }
    return record;
}

std::optional<TrainingSnapshot> snapshotFromJson(const QJsonObject& line, QString* reason)
{
    const std::optional<MetricsRecord> record = lineOfType(line, "train", reason);
    return record ? std::optional<TrainingSnapshot>(record->train) : std::nullopt;
}

std::optional<ProbeResult> probeFromJson(const QJsonObject& line, QString* reason)
{
    const std::optional<MetricsRecord> record = lineOfType(line, "probe", reason);
    return record ? std::optional<ProbeResult>(record->probe) : std::nullopt;
}

// metrics.jsonl lines as the trainer writes them (docs/run-directory.md), small.
const QByteArray kGoodTrain =
    R"({"type":"train","step":2,"wall_seconds":1.5,"loss":2.5,"accuracy":0.25,)"
    R"("routing":[{"block":1,"tokens_per_expert":[5,0,7],"dropped_percent_per_choice":[12.5,40],"unused_experts":1,)"
    R"("router_entropy":0.75,"load_vs_fair":[1.25,0,1.75]}],)"
    R"("layernorm":{"attention_gamma":[[1,0.5],[2,1.5]],"attention_beta":[[0,-0.25],[0.25,0.5]],)"
    R"("ffn_gamma":[[1,1],[0.75,1.25]],"ffn_beta":[[0.125,0],[0,-0.125]]},)"
    R"("paths":[{"block":0,"sublayer":"ffn","paths":2,"alpha":[0.5,0.25,0.125,0.0625],"beta":0.75,"diversity":0.375}]})";
const QByteArray kGoodProbe =
    R"({"type":"probe","step":4,"text":"a b","tokens":["a","b"],"attention":[[[[0.25,0.75],[1,0]]]],)"
    R"("experts":[[[2,-1],[0,1]]],"prediction":[0.125,0.875],"prediction_labels":["0","1"]})";

QByteArray trainAt(qint64 step, double loss)
{
    return QStringLiteral(R"({"type":"train","step":%1,"wall_seconds":%1,"loss":%2})").arg(step).arg(loss).toUtf8();
}

// The log lines that name `line` of metrics.jsonl.
QStringList warningsFor(const LogPanel* log, int line)
{
    QStringList found;
    for (const QString& shown : log->visibleLines())
        if (shown.contains(QStringLiteral("metrics.jsonl, line %1:").arg(line)))
            found.append(shown);
    return found;
}

// A ListOps expression's value, computed here from its text: MIN, MAX, MED
// (the lower middle of an even count, averaged down), SM (sum modulo 10).
int listOpsValue(const QString& text)
{
    static const QRegularExpression token(QStringLiteral("\\[MIN|\\[MAX|\\[MED|\\[SM|\\]|[0-9]"));
    QStringList tokens;
    for (auto it = token.globalMatch(text); it.hasNext();)
        tokens << it.next().captured();
    qsizetype at = 0;
    std::function<int()> value = [&]() -> int {
        const QString t = tokens.value(at++);
        if (t.size() == 1 && t[0].isDigit())
            return t.toInt();
        QVector<int> arguments;
        while (at < tokens.size() && tokens[at] != QStringLiteral("]"))
            arguments << value();
        ++at;  // the closing bracket
        std::sort(arguments.begin(), arguments.end());
        if (arguments.isEmpty())
            return -1;
        if (t == QStringLiteral("[MIN"))
            return arguments.front();
        if (t == QStringLiteral("[MAX"))
            return arguments.back();
        if (t == QStringLiteral("[MED")) {
            const qsizetype n = arguments.size();
            return n % 2 == 1 ? arguments[n / 2] : (arguments[n / 2 - 1] + arguments[n / 2]) / 2;
        }
        int sum = 0;
        for (int a : arguments)
            sum += a;
        return sum % 10;
    };
    return tokens.isEmpty() ? -1 : value();
}

}  // namespace

class TestDesktopRunFiles : public DesktopTestCase {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { DesktopTestCase::initTestCase(); }
    void snapshotsAndMetricsLinesGiveTheSameInsights();
    void metricsLinesAreCheckedAtTheBoundary();
    void aDamagedMetricsFileIsReadWithOneWarningPerBadLine();
    void damagedRunFilesAreMessagesNamingTheFile();
    void probeLinesCarryTheTrueClassWhenKnown();
    void theConfigurationSaysWhatEachHeadsMapIsAndWhetherProbesAreImages();
    void anImageProbeGivesTheSamePictureLiveAndReadBack();
};

// The views see the same data live (the core's snapshot and probe as they are)
// and read back (parsed from the metrics.jsonl line the core writes for it).
void TestDesktopRunFiles::snapshotsAndMetricsLinesGiveTheSameInsights()
{
    const TrainingSnapshot s = test::snapshotWithInsights(30);

    ProbeResult probe;
    probe.step = 30;
    probe.text = "a b";
    probe.tokens = {"a", "b"};
    probe.attention = {{{{0.25f, 0.75f}, {1.0f, 0.0f}}}};  // one layer, one head
    probe.experts = {{{2, -1}, {0, 1}}};
    probe.prediction = {0.125f, 0.875f};
    probe.predictionLabels = {"0", "1"};

    const QJsonObject line = QJsonDocument::fromJson(QByteArray::fromStdString(toJson(s).dump())).object();
    QString reason;
    const std::optional<TrainingSnapshot> read = snapshotFromJson(line, &reason);
    QVERIFY2(read.has_value(), qPrintable(reason));
    for (const TrainingSnapshot& state : {s, *read}) {
        QCOMPARE(state.step, std::int64_t{30});
        QCOMPARE(state.routing.size(), std::size_t{1});
        QCOMPARE(state.routing[0].block, std::int64_t{1});
        QVERIFY(state.routing[0].tokensPerExpert == (std::vector<std::int64_t>{5, 0, 7}));
        QVERIFY(state.routing[0].droppedPercentPerChoice == (std::vector<double>{12.5, 40.0}));
        QCOMPARE(state.routing[0].unusedExperts, std::int64_t{1});
        QCOMPARE(state.routing[0].routerEntropy, 0.75);
        QVERIFY(state.routing[0].loadVsFair == (std::vector<double>{1.25, 0.0, 1.75}));
        QCOMPARE(state.routing[0].share(2), 7.0 / 12.0);
        QVERIFY(state.attentionGamma == (std::vector<std::vector<float>>{{1.0f, 0.5f}, {2.0f, 1.5f}}));
        QVERIFY(state.ffnBeta == (std::vector<std::vector<float>>{{0.125f, 0.0f}, {0.0f, -0.125f}}));
        QCOMPARE(state.divergence.gammaAllPairs, 0.25);
        QCOMPARE(state.divergence.betaElementwise, 0.0625);
        QCOMPARE(state.attentionDivergence.gammaElementwise, 3.5);
        QCOMPARE(state.paths.size(), std::size_t{1});
        QCOMPARE(state.paths[0].sublayer, std::string("ffn"));
        QCOMPARE(state.paths[0].paths, std::int64_t{2});
        QVERIFY(state.paths[0].alpha == (std::vector<float>{0.5f, 0.25f, 0.125f, 0.0625f}));
        QCOMPARE(state.paths[0].featureName(3), std::string("mean without path 2"));
        QCOMPARE(state.paths[0].beta, 0.75f);
        QCOMPARE(state.paths[0].diversity, 0.375);
    }
    const QJsonObject probeLine = QJsonDocument::fromJson(QByteArray::fromStdString(toJson(probe).dump())).object();
    const std::optional<ProbeResult> readProbe = probeFromJson(probeLine, &reason);
    QVERIFY2(readProbe.has_value(), qPrintable(reason));
    for (const ProbeResult& c : {probe, *readProbe}) {
        QCOMPARE(c.step, std::int64_t{30});
        QCOMPARE(probeTextOf(c), QStringLiteral("a b"));
        QCOMPARE(probeTokens(c), (QStringList{"a", "b"}));
        QCOMPARE(probeLayers(c), 1);
        QCOMPARE(probeHeads(c), 1);
        QCOMPARE(probeWeight(c, 0, 0, 0, 1), 0.75f);  // row = query
        QCOMPARE(probeWeight(c, 0, 0, 1, 0), 1.0f);
        QVERIFY(c.experts == (std::vector<std::vector<std::vector<std::int64_t>>>{{{2, -1}, {0, 1}}}));
        QVERIFY(c.prediction == (std::vector<float>{0.125f, 0.875f}));
        QCOMPARE(probeLabels(c), (QStringList{"0", "1"}));
    }
}

// Every line is checked where it is decoded: types, finite numbers, a step from
// 0 to 2^53, and shapes that agree; the reason says what is wrong, and where.
void TestDesktopRunFiles::metricsLinesAreCheckedAtTheBoundary()
{
    QString reason;
    const std::optional<MetricsRecord> train = decodedLine(kGoodTrain, &reason);
    QVERIFY2(train.has_value(), qPrintable(reason));
    QCOMPARE(train->type, MetricsRecord::Type::Train);
    QCOMPARE(train->step, qint64{2});
    QCOMPARE(train->train.wallSeconds, 1.5);
    QCOMPARE(train->values.at("loss"), 2.5);
    QVERIFY(!train->values.count("gradient_norm"));  // not written: no point, not a 0
    QCOMPARE(train->train.routing.size(), std::size_t{1});
    QCOMPARE(train->train.paths.size(), std::size_t{1});
    const std::optional<MetricsRecord> probe = decodedLine(kGoodProbe, &reason);
    QVERIFY2(probe.has_value(), qPrintable(reason));
    QCOMPARE(probeTokenCount(probe->probe), 2);
    QCOMPARE(probeWeight(probe->probe, 0, 0, 0, 1), 0.75f);
    // null is how the trainer writes NaN: a gap, not an error.
    const std::optional<MetricsRecord> diverged = decodedLine(R"({"type":"train","step":3,"loss":null})", &reason);
    QVERIFY2(diverged.has_value(), qPrintable(reason));
    QVERIFY(std::isnan(diverged->values.at("loss")));
    // A type this version does not know passes untouched.
    QCOMPARE(decodedLine(R"({"type":"note","text":1})", &reason)->type, MetricsRecord::Type::Other);

    auto replaced = [](QByteArray line, const char* from, const char* to) { return line.replace(from, to); };
    const QList<QPair<QByteArray, QString>> bad{
        {"not JSON at all", QStringLiteral("not JSON")},
        {QByteArray("\x00\x01\x02\x03 blob", 9), QStringLiteral("not JSON")},
        {QByteArray("PK\x03\x04\xde\xad\xbe\xef", 8), QStringLiteral("not valid UTF-8 (byte 7")},
        {R"({"type":"probe","step":1,"text":"caf)" + QByteArray("\xe9") + R"(","tokens":["a"]})",
         QStringLiteral("not valid UTF-8")},
        {"[1, 2]", QStringLiteral("not a JSON object")},
        {R"({"step":1})", QStringLiteral("\"type\" is missing")},
        {R"({"type":"train","step":1e308,"loss":1})", QStringLiteral("\"step\" is 1e+308, not a whole number from 0 to 2^53")},
        {R"({"type":"train","step":9007199254740994})", QStringLiteral("2^53")},  // 2^53 + 2
        {R"({"type":"eval","step":-2,"split":"validation","loss":1,"accuracy":0})", QStringLiteral("\"step\" is -2")},
        {R"({"type":"train","step":2.5})", QStringLiteral("not a whole number")},
        {R"({"type":"train","step":"7"})", QStringLiteral("\"step\" is \"7\"")},
        {R"({"type":"train","loss":1})", QStringLiteral("no \"step\"")},
        {R"({"type":"train","step":1,"loss":"low"})", QStringLiteral("\"loss\" is \"low\", not a number")},
        {R"({"type":"train","step":1,"wall_seconds":-5})", QStringLiteral("below 0")},
        {replaced(kGoodTrain, "\"load_vs_fair\":[1.25,0,1.75]", "\"load_vs_fair\":[1.25]"),
         QStringLiteral("\"routing[0].load_vs_fair\" has 1 values for 3 experts")},
        {replaced(kGoodTrain, "\"tokens_per_expert\":[5,0,7]", "\"tokens_per_expert\":[]"), QStringLiteral("0 experts")},
        {replaced(kGoodTrain, "\"tokens_per_expert\":[5,0,7]", "\"tokens_per_expert\":[5,-1,7]"),
         QStringLiteral("\"routing[0].tokens_per_expert[1]\" is -1")},
        {replaced(kGoodTrain, "\"ffn_gamma\":[[1,1],[0.75,1.25]]", "\"ffn_gamma\":[[1,1],[0.75]]"),
         QStringLiteral("\"layernorm.ffn_gamma[1]\" has 1 channels but")},
        {replaced(kGoodTrain, "\"ffn_beta\":[[0.125,0],[0,-0.125]]", "\"ffn_beta\":[[0.125,0]]"),
         QStringLiteral("\"layernorm.ffn_gamma\" is 2 x 2 but \"layernorm.ffn_beta\" is 1 x 2")},
        {replaced(kGoodTrain, "\"alpha\":[0.5,0.25,0.125,0.0625]", "\"alpha\":[0.5,0.25,0.125]"),
         QStringLiteral("has 3 weights for 2 paths")},
        {replaced(kGoodTrain, "\"sublayer\":\"ffn\"", "\"sublayer\":\"mlp\""), QStringLiteral("not \"attention\", \"ffn\" or \"cross_attention\"")},
        {replaced(kGoodTrain, "\"block\":0,", "\"block\":100000,"), QStringLiteral("\"paths[0].block\" is 100000")},
        {R"({"type":"probe","step":1,"text":"","tokens":[],"attention":[[[]]]})", QStringLiteral("the probe has no tokens")},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1,0],[0,1]]]]"),
         QStringLiteral("\"attention[0][0]\" has 3 rows for 2 tokens")},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1]]]]"),
         QStringLiteral("\"attention[0][0][1]\" has 1 weights for 2 tokens")},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1,0]]],[[[1,0],[0,1]],[[1,0],[0,1]]]]"),
         QStringLiteral("\"attention[1]\" has 2 heads but \"attention[0]\" has 1")},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1500,0]]]]"),
         QStringLiteral("is 1500, not an attention weight")},
        {replaced(kGoodProbe, "[[[2,-1],[0,1]]]", "[[[2,-1]]]"), QStringLiteral("\"experts[0]\" has 1 entries for 2 tokens")},
        {replaced(kGoodProbe, "[[[2,-1],[0,1]]]", "[[[2,-1],[0]]]"), QStringLiteral("has 1 choices but")},
        {replaced(kGoodProbe, "[[[2,-1],[0,1]]]", "[[[2,-7],[0,1]]]"), QStringLiteral("is -7")},
        {replaced(kGoodProbe, "\"prediction_labels\":[\"0\",\"1\"]", "\"prediction_labels\":[\"0\"]"),
         QStringLiteral("has 1 labels for 2 predictions")},
        {replaced(kGoodProbe, "\"text\":\"a b\"", "\"text\":7"), QStringLiteral("\"text\" is 7, not a text")},
        {R"({"type":"eval","step":4,"split":"validation","loss":"x","accuracy":0.5})", QStringLiteral("\"loss\" is \"x\"")},
    };
    for (const auto& [line, expected] : bad) {
        reason.clear();
        QVERIFY2(!decodedLine(line, &reason).has_value(), line.constData());
        QVERIFY2(reason.contains(expected), qPrintable(QStringLiteral("%1\n  reason: %2\n  expected: %3")
                                                          .arg(QString::fromUtf8(line), reason, expected)));
    }
}

// A saved run whose metrics.jsonl holds garbage among its lines opens: each bad
// line is skipped with one warning in the log naming the file and the line, the
// status bar counts them, no dialog per line, and the good lines are all shown
// with chart ranges that only they set.
void TestDesktopRunFiles::aDamagedMetricsFileIsReadWithOneWarningPerBadLine()
{
    const QString run = m_dir.filePath(QStringLiteral("damaged-metrics"));
    QVERIFY(QDir().mkpath(run));
    QVERIFY(writeJson(run + QStringLiteral("/config.json"), tinyDocument(10)));
    const QList<QByteArray> lines{
        kGoodTrain,                                                                  // 1
        "garbage that is not JSON",                                                  // 2: bad
        R"({"type":"train","step":1e308,"wall_seconds":3,"loss":0.1})",              // 3: bad
        R"({"type":"probe","step":2,"text":"","tokens":[],"attention":[[[]]]})",     // 4: bad
        QByteArray("\x00\x7f\x10\x02\x00\x00 binary", 13),                           // 5: bad
        R"({"type":"probe","step":2,"text":"caf)" + QByteArray("\xe9\"}"),            // 6: bad (invalid UTF-8)
        "",                                                                          // 7: empty, ignored
        trainAt(4, 2.0),                                                             // 8
        trainAt(3, 9.0),                                                             // 9: bad (goes back)
        R"({"type":"eval","step":4,"split":"validation","loss":2.25,"accuracy":0.5})",  // 10
        kGoodProbe,                                                                  // 11
        R"({"type":"train","step":5,"lo)",                                           // 12: bad (cut off)
        trainAt(6, 1.5),                                                             // 13
    };
    QByteArray bytes;
    for (const QByteArray& line : lines)
        bytes += line + '\n';
    bytes += R"({"type":"train","step":8,"loss")";  // 14: still being written: waits, no warning
    QFile out(run + QStringLiteral("/metrics.jsonl"));
    QVERIFY(out.open(QIODevice::WriteOnly) && out.write(bytes) == bytes.size());
    out.close();

    MainWindow window(m_dir.filePath(QStringLiteral("runs-damaged")));
    window.show();
    QVERIFY(window.openRun(run));
    QVERIFY(window.findChildren<QMessageBox*>().isEmpty());  // no dialog per line, nor for the file
    const RunRecord* record = window.runs().record(QDir(run).absolutePath());
    QVERIFY(record != nullptr);

    // The good lines, all of them.
    QVector<double> steps;
    for (const CurvePoint& point : record->curves.value(QStringLiteral("loss")))
        steps.append(point.step);
    QCOMPARE(steps, (QVector<double>{2, 4, 6}));
    QCOMPARE(record->curves.value(QStringLiteral("validation_loss")).size(), qsizetype{1});
    // The fixed charts' numbers are not charted twice under their tags; the line's others are.
    for (const char* fixed : {"train/loss", "validation/loss", "validation/accuracy"})
        QVERIFY2(!record->curves.contains(QLatin1String(fixed)), fixed);
    QCOMPARE(record->curves.value(QStringLiteral("validation/examples")).size(), qsizetype{1});
    QCOMPARE(record->lastStep(), 6.0);
    QCOMPARE(record->insights->states().size(), qsizetype{3});
    QCOMPARE(record->insights->probeTexts(), QStringList{QStringLiteral("a b")});  // not the one without tokens

    // One warning per bad line, naming the file, the line and the reason; none for the others.
    const QString file = QDir::toNativeSeparators(QDir(run).absoluteFilePath(QStringLiteral("metrics.jsonl")));
    const QList<QPair<int, QString>> expected{{2, QStringLiteral("not JSON")},
                                              {3, QStringLiteral("2^53")},
                                              {4, QStringLiteral("no tokens")},
                                              {5, QStringLiteral("not JSON")},
                                              {6, QStringLiteral("UTF-8")},
                                              {9, QStringLiteral("before step 4")},
                                              {12, QStringLiteral("not JSON")}};
    for (const auto& [line, why] : expected) {
        const QStringList found = warningsFor(window.log(), line);
        QVERIFY2(found.size() == 1, qPrintable(QStringLiteral("line %1: %2").arg(line).arg(found.join(QLatin1Char('\n')))));
        QVERIFY2(found.front().contains(file) && found.front().contains(why), qPrintable(found.front()));
    }
    for (const int good : {1, 7, 8, 10, 11, 13, 14})
        QVERIFY2(warningsFor(window.log(), good).isEmpty(), qPrintable(warningsFor(window.log(), good).join(QLatin1Char('\n'))));
    QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("7 damaged lines")),
             qPrintable(window.statusBar()->currentMessage()));

    // Chart ranges from the good lines only: steps 2 to 6 (with a little room
    // so that the markers at the ends are whole), losses 1.5 to 2.5.
    CurvePlot* loss = window.curves()->chart(window.curves()->chartKeyForMetric(QStringLiteral("loss")));
    QVERIFY(loss != nullptr);
    loss->refreshNow();
    const QCPRange shown = loss->xAxis->range();
    QVERIFY2(shown.lower <= 2.0 && shown.lower > 1.8 && shown.upper >= 6.0 && shown.upper < 6.2,
             qPrintable(QStringLiteral("%1 .. %2").arg(shown.lower).arg(shown.upper)));
    QVERIFY2(loss->yAxis->range().lower > 1.0 && loss->yAxis->range().upper < 3.0,
             qPrintable(QStringLiteral("%1 .. %2").arg(loss->yAxis->range().lower).arg(loss->yAxis->range().upper)));

    // The interpretability pages draw what is left, without a crash; the scrubber stops at the good steps.
    window.centralTabs()->setCurrentWidget(window.insights());
    window.insights()->refreshNow();
    QCOMPARE(window.insights()->scrubberSteps(), (QVector<qint64>{2, 4, 6}));
    for (const InsightsView::Page page :
         {InsightsView::Page::Attention, InsightsView::Page::Experts, InsightsView::Page::LayerNorm, InsightsView::Page::Paths}) {
        window.insights()->setPage(page);
        window.insights()->refreshNow();
        QVERIFY(!window.grab().isNull());
    }
}

// config.json, tokenizer.json and labels.json that cannot be used are messages
// naming the file; nothing is thrown through the event loop, and the window goes on.
void TestDesktopRunFiles::damagedRunFilesAreMessagesNamingTheFile()
{
    const QString run = m_dir.filePath(QStringLiteral("damaged-files"));
    QVERIFY(QDir().mkpath(run));
    QVERIFY(writeJson(run + QStringLiteral("/config.json"), tinyDocument(10)));
    auto write = [&](const QString& name, const QByteArray& bytes) {
        QFile out(run + QLatin1Char('/') + name);
        return out.open(QIODevice::WriteOnly) && out.write(bytes) == bytes.size();
    };

    QString error;
    QVERIFY(!probeSavedRun(run, QStringLiteral("a"), false, &error).has_value());  // no tokenizer.json
    QVERIFY2(error.contains(QStringLiteral("tokenizer.json")), qPrintable(error));
    QVERIFY(write(QStringLiteral("tokenizer.json"), "{\"kind\": \"word\", \"tok"));
    QVERIFY(!probeSavedRun(run, QStringLiteral("a"), false, &error).has_value());
    QVERIFY2(error.contains(QStringLiteral("tokenizer.json")), qPrintable(error));
    QVERIFY(write(QStringLiteral("tokenizer.json"), R"({"kind": "word", "tokens": ["a", "b"]})"));
    QVERIFY(write(QStringLiteral("labels.json"), R"({"not": "a list"})"));
    QVERIFY(!probeSavedRun(run, QStringLiteral("a"), false, &error).has_value());
    QVERIFY2(error.contains(QStringLiteral("labels.json")), qPrintable(error));
    QVERIFY(write(QStringLiteral("labels.json"), R"(["zero", "one"])"));
    QVERIFY(!probeSavedRun(run, QStringLiteral("a"), false, &error).has_value());  // no checkpoint: said, not thrown
    QVERIFY2(error.contains(QStringLiteral("checkpoint")), qPrintable(error));

    // A config.json that is not JSON: opening says so, naming it; comparing warns and goes on.
    MainWindow window(m_dir.filePath(QStringLiteral("runs-damaged-files")));
    window.show();
    QVERIFY(write(QStringLiteral("config.json"), QByteArray("{\"model\": \xff\xfe", 12)));
    QVERIFY(!window.openRun(run));
    auto* problem = window.findChild<QMessageBox*>(QStringLiteral("problem"));
    QVERIFY(problem != nullptr);
    QVERIFY2(problem->text().contains(QStringLiteral("config.json")), qPrintable(problem->text()));
    problem->close();
    QVERIFY(window.compared().add(run));
    const QString log = window.log()->visibleLines().join(QLatin1Char('\n'));
    QVERIFY2(log.contains(QStringLiteral("config.json")) && log.contains(QStringLiteral("size is unknown")), qPrintable(log));
    QCOMPARE(window.runsList()->count(), 1);
}

void TestDesktopRunFiles::probeLinesCarryTheTrueClassWhenKnown()
{
    // The core writes "label" only when it knows it.
    ProbeResult probe;
    probe.step = 3;
    probe.text = "[MAX 1 2 ]";
    probe.tokens = {"[MAX", "1", "2", "]"};
    probe.prediction = {0.25f, 0.5f, 0.25f};
    QVERIFY(!toJson(probe).contains("label"));
    probe.label = 2;
    QCOMPARE(toJson(probe).value("label", -1), 2);

    // The app reads it back, and refuses one that names no class of the prediction.
    const QJsonObject line = QJsonDocument::fromJson(QByteArray::fromStdString(toJson(probe).dump())).object();
    QString reason;
    const std::optional<ProbeResult> capture = probeFromJson(line, &reason);
    QVERIFY2(capture, qPrintable(reason));
    QCOMPARE(capture->label, std::int64_t{2});
    QJsonObject outside = line;
    outside.insert(QStringLiteral("label"), 3);
    QVERIFY(!probeFromJson(outside, &reason));
    QVERIFY2(reason.contains(QStringLiteral("label")), qPrintable(reason));
    QJsonObject unlabelled = line;
    unlabelled.remove(QStringLiteral("label"));
    const std::optional<ProbeResult> plain = probeFromJson(unlabelled, &reason);
    QVERIFY(plain);
    QCOMPARE(plain->label, std::int64_t{-1});

    // A ListOps run's default probe is a validation example: its label is the
    // expression's value, in the live capture and in metrics.jsonl alike.
    MainWindow window(m_dir.filePath(QStringLiteral("runs-label")));
    const QString file = m_dir.filePath(QStringLiteral("label.json"));
    QVERIFY(writeJson(file, tinyDocument(2)));
    QVERIFY(window.openConfiguration(file));
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QVERIFY(window.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    const RunRecord* record = window.runs().record(window.runs().current());
    QVERIFY(record);
    const QStringList texts = record->insights->probeTexts();
    QCOMPARE(texts.size(), 1);
    const ProbeResult* live = record->insights->captureAt(texts.first(), -1);
    QVERIFY(live);
    const int expected = listOpsValue(texts.first());
    QVERIFY2(expected >= 0, qPrintable(texts.first()));
    QCOMPARE(live->label, std::int64_t{expected});
    RunRecord reread;
    QVERIFY(loadRunRecord(window.runs().current(), reread, &reason));
    const ProbeResult* saved = reread.insights->captureAt(texts.first(), -1);
    QVERIFY(saved);
    QCOMPARE(saved->label, std::int64_t{expected});
}

// The attention view's captions and the probe picker's kind come from the
// configuration, through the core's registry of mechanisms.
void TestDesktopRunFiles::theConfigurationSaysWhatEachHeadsMapIsAndWhetherProbesAreImages()
{
    const ConfigAssessment assessment = assessDocument(tinyDocument(2));
    QVERIFY(assessment.valid);
    InsightHistory history;
    describeInsights(history, assessment.complete);
    QCOMPARE(history.headCaptions().size(), qsizetype{4});  // model.heads: one per head of a path
    for (const HeadMapCaption& caption : history.headCaptions()) {
        QCOMPARE(caption.mechanism, QStringLiteral("full"));
        QCOMPARE(caption.kind, QStringLiteral("exact"));
    }
    QCOMPARE(headCaptionText(history.headCaptions(), 2, 4, 1), QStringLiteral("full (exact)"));
    QVERIFY(!history.imageInput());

    // A document the core cannot read says nothing about the heads.
    QJsonObject broken = assessment.complete;
    QJsonObject model = broken.value(QStringLiteral("model")).toObject();
    model.insert(QStringLiteral("heads"), -3);
    model.insert(QStringLiteral("input"), QStringLiteral("image"));
    broken.insert(QStringLiteral("model"), model);
    describeInsights(history, broken);
    QVERIFY(history.headCaptions().isEmpty());
    QVERIFY(history.imageInput());  // model.input is read as written
}

// The probe image reaches the views the same way from a live probe and from
// its metrics.jsonl line: the picture as the model saw it, its patch grid, and
// the patch weights and experts the image views draw.
void TestDesktopRunFiles::anImageProbeGivesTheSamePictureLiveAndReadBack()
{
    const ProbeResult probe = test::imageProbe(40);
    const QJsonObject line = QJsonDocument::fromJson(QByteArray::fromStdString(toJson(probe).dump())).object();
    QString reason;
    const std::optional<ProbeResult> read = probeFromJson(line, &reason);
    QVERIFY2(read.has_value(), qPrintable(reason));
    for (const ProbeResult& c : {probe, *read}) {
        QCOMPARE(probeTextOf(c), QStringLiteral("validation:3"));
        QVERIFY(probeHasImage(c));
        const QImage picture = probeQImage(c.image);
        QCOMPARE(picture.size(), QSize(4, 4));
        QCOMPARE(c.image.gridRows, std::int64_t{2});
        QCOMPARE(c.image.gridCols, std::int64_t{2});
        QCOMPARE(picture.pixelColor(0, 0), QColor(0, 0, 200));
        QCOMPARE(picture.pixelColor(3, 1), QColor(120, 40, 200));
        QCOMPARE(picture.pixelColor(2, 3), QColor(80, 120, 200));
        QCOMPARE(patchSource(c), PatchSource::FromCls);
        QCOMPARE(patchAttention(c, 0, 0), (QVector<float>{0.1f, 0.2f, 0.3f, 0.4f}));
        QCOMPARE(patchExperts(c, 0), (QVector<int>{1, 0, -1, 2}));
    }
    // A text probe has no picture.
    ProbeResult text = probe;
    text.image = ProbeImage();
    QVERIFY(!probeHasImage(text));
    QVERIFY(probeQImage(text.image).isNull());
}

QTEST_MAIN(TestDesktopRunFiles)
#include "tst_desktop_runfiles.moc"
