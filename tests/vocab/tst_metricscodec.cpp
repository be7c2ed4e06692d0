// Tests of vocab/MetricsCodec: metrics.jsonl's writer and reader. Every field a
// trainer writes comes back (round trip, non-finite values as NaN); lines written
// by hand as docs/run-directory.md describes them are read; and a line that is
// damaged is refused with the reason in words, naming where: not UTF-8, not JSON,
// a step outside 0..2^53, a wrong type, shapes that do not agree.
#include "SampleSnapshot.h"
#include "vocab/ByteText.h"
#include "vocab/MetricsCodec.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace widelab;

namespace {

TrainingSnapshot sampleSnapshot()
{
    TrainingSnapshot s = test::snapshotWithInsights(30);
    s.wallSeconds = 12.5;
    s.loss = 2.25;
    s.taskLoss = 2.0;
    s.balanceLoss = 0.25;
    s.accuracy = 0.375;
    s.learningRate = 0.001;
    s.gradientNorm = 1.5;
    s.tokensPerSecond = 4096;
    s.stepSeconds = 0.125;
    s.dataSeconds = 0.03125;
    s.measurementSeconds = 0.0625;
    s.memoryKind = "cuda";
    s.memoryBytes = 1 << 20;
    s.residualNorms = {1.5, 3.25};
    s.weightHistograms = {{"attention.0", -0.5, 0.25, {3, 0, 1}}, {"cls", 0.0, 0.0, {8, 0, 0}}};
    s.gradientHistograms = {{"attention.0", -0.125, 0.125, {1, 2, 1}}};
    return s;
}

// Hand-written, as docs/run-directory.md describes each type.
const std::string kGoodTrain =
    R"({"type":"train","step":2,"wall_seconds":1.5,"loss":2.5,"task_loss":2.4,"balance_loss":0.1,"accuracy":0.25,)"
    R"("learning_rate":0.0005,"tokens_per_second":1000,"step_seconds":0.5,"memory_kind":"rss","memory_bytes":1000,)"
    R"("routing":[{"block":1,"tokens_per_expert":[5,0,7],"dropped_percent_per_choice":[12.5,40],"unused_experts":1,)"
    R"("router_entropy":0.75,"load_vs_fair":[1.25,0,1.75]}],)"
    R"("layernorm":{"attention_gamma":[[1,0.5],[2,1.5]],"attention_beta":[[0,-0.25],[0.25,0.5]],)"
    R"("ffn_gamma":[[1,1],[0.75,1.25]],"ffn_beta":[[0.125,0],[0,-0.125]]},)"
    R"("divergence":{"gamma_all_pairs":0.5,"beta_all_pairs":0.25,"gamma_elementwise":0.125,"beta_elementwise":0},)"
    R"("paths":[{"block":0,"sublayer":"ffn","paths":2,"alpha":[0.5,0.25,0.125,0.0625],"beta":0.75,"diversity":0.375}]})";
const std::string kGoodEval =
    R"({"type":"eval","step":10,"split":"validation","loss":1.75,"accuracy":0.5,"perplexity":5.75,"examples":64})";
const std::string kGoodProbe =
    R"({"type":"probe","step":4,"text":"caf\\xc3","tokens":["a","b"],"attention":[[[[0.25,0.75],[1,0]]]],)"
    R"("experts":[[[2,-1],[0,1]]],"prediction":[0.125,0.875],"prediction_labels":["0","1"]})";

// An image probe: 2x1 RGB pixels (0, 1, 2), (253, 254, 255), one row of two patches, no CLS.
const std::string kGoodImageProbe =
    R"({"type":"probe","step":4,"text":"validation:0","tokens":["r0c0","r0c1"],"attention":[[[[0.25,0.75],[1,0]]]],)"
    R"("prediction":[0.125,0.875],"prediction_labels":["circle","square"],"label":1,)"
    R"("image":{"width":2,"height":1,"channels":3,"grid_rows":1,"grid_cols":2,"pixels":"AAEC/f7/"}})";

std::string replaced(std::string line, const std::string& from, const std::string& to)
{
    const std::size_t at = line.find(from);
    if (at == std::string::npos)
        throw std::logic_error("the test's line has no " + from);
    return line.replace(at, from.size(), to);
}

}  // namespace

class TestMetricsCodec : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aTrainLineComesBackWhole();
    void evalAndProbeLinesComeBackWhole();
    void handWrittenLinesAreRead();
    void badLinesAreRefusedNamingWhatAndWhere();
    void imageProbesComeBackWhole();
    void badImageProbesAreRefused();
    void aDistributedRunsPaceComesBack();
};

void TestMetricsCodec::aTrainLineComesBackWhole()
{
    const TrainingSnapshot s = sampleSnapshot();
    const std::string line = encodeMetricsLine(s);
    QVERIFY(line.find('\n') == std::string::npos);
    std::string reason;
    const auto read = decodeMetricsLine(line, &reason);
    QVERIFY2(read, reason.c_str());
    QCOMPARE(read->type, MetricsRecord::Type::Train);
    QCOMPARE(read->typeName, std::string("train"));
    QCOMPARE(read->step, std::int64_t{30});
    const TrainingSnapshot& t = read->train;
    QCOMPARE(t.wallSeconds, 12.5);
    QCOMPARE(t.loss, 2.25);
    QCOMPARE(t.taskLoss, 2.0);
    QCOMPARE(t.balanceLoss, 0.25);
    QCOMPARE(t.accuracy, 0.375);
    QCOMPARE(t.learningRate, 0.001);
    QCOMPARE(t.gradientNorm, 1.5);
    QCOMPARE(t.tokensPerSecond, 4096.0);
    QCOMPARE(t.stepSeconds, 0.125);
    QCOMPARE(t.dataSeconds, 0.03125);
    QCOMPARE(t.measurementSeconds, 0.0625);  // export-tb's time/measurement_seconds
    QCOMPARE(t.memoryKind, std::string("cuda"));
    QCOMPARE(t.memoryBytes, std::int64_t{1} << 20);
    QCOMPARE(read->values.at("loss"), 2.25);
    QCOMPARE(read->values.at("gradient_norm"), 1.5);
    QCOMPARE(t.routing.size(), std::size_t{1});
    QCOMPARE(t.routing[0].block, std::int64_t{1});
    QCOMPARE(t.routing[0].tokensPerExpert, (std::vector<std::int64_t>{5, 0, 7}));
    QCOMPARE(t.routing[0].droppedPercentPerChoice, (std::vector<double>{12.5, 40.0}));
    QCOMPARE(t.routing[0].unusedExperts, std::int64_t{1});
    QCOMPARE(t.routing[0].routerEntropy, 0.75);
    QCOMPARE(t.routing[0].loadVsFair, (std::vector<double>{1.25, 0.0, 1.75}));
    QCOMPARE(t.attentionGamma, (std::vector<std::vector<float>>{{1.0f, 0.5f}, {2.0f, 1.5f}}));
    QCOMPARE(t.attentionBeta, (std::vector<std::vector<float>>{{0.0f, -0.25f}, {0.25f, 0.5f}}));
    QCOMPARE(t.ffnGamma, (std::vector<std::vector<float>>{{1.0f, 1.0f}, {0.75f, 1.25f}}));
    QCOMPARE(t.ffnBeta, (std::vector<std::vector<float>>{{0.125f, 0.0f}, {0.0f, -0.125f}}));
    QCOMPARE(t.divergence.gammaAllPairs, 0.25);
    QCOMPARE(t.divergence.betaElementwise, 0.0625);
    QCOMPARE(t.attentionDivergence.gammaElementwise, 3.5);
    QCOMPARE(t.attentionDivergence.betaElementwise, 4.5);
    QCOMPARE(t.paths.size(), std::size_t{1});
    QCOMPARE(t.paths[0].sublayer, std::string("ffn"));
    QCOMPARE(t.paths[0].paths, std::int64_t{2});
    QCOMPARE(t.paths[0].alpha, (std::vector<float>{0.5f, 0.25f, 0.125f, 0.0625f}));
    QCOMPARE(t.paths[0].beta, 0.75f);
    QCOMPARE(t.paths[0].diversity, 0.375);
    QCOMPARE(t.residualNorms, (std::vector<double>{1.5, 3.25}));
    QCOMPARE(t.weightHistograms.size(), std::size_t{2});
    QCOMPARE(t.weightHistograms[0].group, std::string("attention.0"));
    QCOMPARE(t.weightHistograms[0].low, -0.5);
    QCOMPARE(t.weightHistograms[0].high, 0.25);
    QCOMPARE(t.weightHistograms[0].counts, (std::vector<std::int64_t>{3, 0, 1}));
    QCOMPARE(t.weightHistograms[1].group, std::string("cls"));
    QCOMPARE(t.weightHistograms[1].counts, (std::vector<std::int64_t>{8, 0, 0}));
    QCOMPARE(t.gradientHistograms.size(), std::size_t{1});
    QCOMPARE(t.gradientHistograms[0].counts, (std::vector<std::int64_t>{1, 2, 1}));
    // A line without them (most lines, and runs from before) has none.
    TrainingSnapshot plain = sampleSnapshot();
    plain.weightHistograms.clear();
    plain.gradientHistograms.clear();
    const std::string plainLine = encodeMetricsLine(plain);
    QVERIFY(plainLine.find("\"weights\"") == std::string::npos);
    QVERIFY(decodeMetricsLine(plainLine, &reason)->train.gradientHistograms.empty());

    // A diverged step: NaN and infinities are written null and read as NaN, a gap.
    TrainingSnapshot diverged = sampleSnapshot();
    diverged.loss = std::numeric_limits<double>::quiet_NaN();
    diverged.gradientNorm = std::numeric_limits<double>::infinity();
    diverged.residualNorms[1] = std::numeric_limits<double>::infinity();
    const auto gap = decodeMetricsLine(encodeMetricsLine(diverged), &reason);
    QVERIFY2(gap, reason.c_str());
    QVERIFY(std::isnan(gap->values.at("loss")));
    QVERIFY(std::isnan(gap->values.at("gradient_norm")));
    QCOMPARE(gap->values.at("accuracy"), 0.375);
    QCOMPARE(gap->train.residualNorms.size(), std::size_t{2});
    QCOMPARE(gap->train.residualNorms[0], 1.5);
    QVERIFY(std::isnan(gap->train.residualNorms[1]));
}

void TestMetricsCodec::evalAndProbeLinesComeBackWhole()
{
    EvaluationResult e;
    e.step = 40;
    e.split = "test";
    e.loss = 1.25;
    e.accuracy = 0.625;
    e.perplexity = 3.5;
    e.examples = 128;
    std::string reason;
    const auto eval = decodeMetricsLine(encodeMetricsLine(e), &reason);
    QVERIFY2(eval, reason.c_str());
    QCOMPARE(eval->type, MetricsRecord::Type::Eval);
    QCOMPARE(eval->step, std::int64_t{40});
    QCOMPARE(eval->eval.split, std::string("test"));
    QCOMPARE(eval->eval.loss, 1.25);
    QCOMPARE(eval->eval.accuracy, 0.625);
    QCOMPARE(eval->eval.perplexity, 3.5);
    QCOMPARE(eval->eval.examples, std::int64_t{128});

    ProbeResult p;
    p.step = 7;
    p.text = std::string("caf\xc3", 4);  // a UTF-8 text cut inside its last character
    p.tokens = {"<cls>", "c", "a"};
    p.attention = {{{{0.5f, 0.25f, 0.25f}, {1.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 1.0f}}}};
    p.experts = {{{1, -1}, {0, 2}, {3, 1}}};
    p.prediction = {0.25f, 0.75f};
    p.predictionLabels = {"no", "yes"};
    const auto probe = decodeMetricsLine(encodeMetricsLine(p), &reason);
    QVERIFY2(probe, reason.c_str());
    QCOMPARE(probe->type, MetricsRecord::Type::Probe);
    QCOMPARE(probe->step, std::int64_t{7});
    QCOMPARE(probe->probe.text, std::string("caf\\xc3"));  // written legibly: the bad byte as \xc3
    QCOMPARE(probe->probe.tokens, p.tokens);
    QCOMPARE(probe->probe.attention, p.attention);
    QCOMPARE(probe->probe.experts, p.experts);
    QCOMPARE(probe->probe.prediction, p.prediction);
    QCOMPARE(probe->probe.predictionLabels, p.predictionLabels);
    QCOMPARE(probe->probe.label, std::int64_t{-1});  // unknown: not written, read back as unknown
    QVERIFY(encodeMetricsLine(p).find("\"label\"") == std::string::npos);

    p.label = 1;  // a validation example's true class
    const auto known = decodeMetricsLine(encodeMetricsLine(p), &reason);
    QVERIFY2(known, reason.c_str());
    QCOMPARE(known->probe.label, std::int64_t{1});
    QCOMPARE(known->probe.cutTokens, std::int64_t{0});  // not written when nothing was cut
    QVERIFY(encodeMetricsLine(p).find("cut_tokens") == std::string::npos);
    p.cutTokens = 5;  // a text 5 tokens longer than the sequence
    const auto cut = decodeMetricsLine(encodeMetricsLine(p), &reason);
    QVERIFY2(cut, reason.c_str());
    QCOMPARE(cut->probe.cutTokens, std::int64_t{5});
    p.cutTokens = 0;

    // The logit lens, over the entries the columns name.
    p.logitLens = {{0, "attention", {0.5f, 0.5f}}, {0, "ffn", {0.25f, 0.75f}}};
    const auto lens = decodeMetricsLine(encodeMetricsLine(p), &reason);
    QVERIFY2(lens, reason.c_str());
    QCOMPARE(lens->probe.logitLens.size(), std::size_t{2});
    QCOMPARE(lens->probe.logitLens[1].sublayer, std::string("ffn"));
    QCOMPARE(lens->probe.logitLens[1].distribution, (std::vector<float>{0.25f, 0.75f}));
    p.lensColumns = {1};  // one column for two values
    QVERIFY(!decodeMetricsLine(encodeMetricsLine(p), &reason));
    QVERIFY2(reason.find("\"logit_lens[0].distribution\" has 2 values for 1 columns") != std::string::npos, reason.c_str());

    // A translation model's probe: its decoder's tokens, each attending over the source's.
    p.logitLens.clear();
    p.lensColumns.clear();
    p.translation = "ca";
    p.targetTokens = {"<s>", "c", "a"};
    p.crossAttention = {{{{0.0f, 0.5f, 0.5f}, {0.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 1.0f}},
                         {{1.0f, 0.0f, 0.0f}, {0.25f, 0.25f, 0.5f}, {0.0f, 0.75f, 0.25f}}}};
    const auto translated = decodeMetricsLine(encodeMetricsLine(p), &reason);
    QVERIFY2(translated, reason.c_str());
    QCOMPARE(translated->probe.translation, std::string("ca"));
    QCOMPARE(translated->probe.targetTokens, p.targetTokens);
    QCOMPARE(translated->probe.crossAttention, p.crossAttention);
    p.targetTokens = {"<s>", "c"};  // three rows for two target tokens
    QVERIFY(!decodeMetricsLine(encodeMetricsLine(p), &reason));
    QVERIFY2(reason.find("\"cross_attention[0][0]\" has 3 rows for 2 tokens") != std::string::npos, reason.c_str());
    p.translation.clear();
    p.targetTokens.clear();
    p.crossAttention.clear();

    // Head roles and what experts received, at a validation.
    ValidationInsights v;
    v.step = 30;
    v.examples = 16;
    v.heads.roles = {"previous token", "self"};
    v.heads.scores = {{{1.0, 0.2}, {0.0, 0.9}}};
    v.heads.dominant = {{0, 1}};
    v.experts = {{1, {{{"a", 3}, {"b", 1}}, {}}, {{4, 0}, {0, 0}}}};
    v.classNames = {"no", "yes"};
    const auto insights = decodeMetricsLine(encodeMetricsLine(v), &reason);
    QVERIFY2(insights, reason.c_str());
    QCOMPARE(insights->type, MetricsRecord::Type::Insights);
    QCOMPARE(insights->insights.heads.scores, v.heads.scores);
    QCOMPARE(insights->insights.heads.dominant, v.heads.dominant);
    QCOMPARE(insights->insights.experts[0].topTokens, v.experts[0].topTokens);
    QCOMPARE(insights->insights.experts[0].classCounts, v.experts[0].classCounts);
    v.heads.dominant = {{0, 2}};  // no third role
    QVERIFY(!decodeMetricsLine(encodeMetricsLine(v), &reason));
    QVERIFY2(reason.find("head_roles.dominant[0][1]") != std::string::npos, reason.c_str());

    // Router health and alarms in a train line.
    TrainingSnapshot s;
    s.step = 5;
    RoutingStats r;
    r.tokensPerExpert = {3, 1};
    r.loadVsFair = {1.5, 0.5};
    r.maxViolation = 0.4;
    r.effectiveExperts = 0.9;
    r.zLoss = 2.5;
    r.deadFraction = 0.0;
    r.consistency = 0.75;
    s.routing = {r};
    s.alarms = {{"collapse", "warning", 0, 0, "", "expert 1 of block 1 takes 75%"}};
    const auto train = decodeMetricsLine(encodeMetricsLine(s), &reason);
    QVERIFY2(train, reason.c_str());
    QCOMPARE(train->train.routing[0].zLoss, 2.5);
    QCOMPARE(train->train.routing[0].consistency, 0.75);
    QCOMPARE(train->train.alarms.size(), std::size_t{1});
    QCOMPARE(train->train.alarms[0].text, std::string("expert 1 of block 1 takes 75%"));
}

void TestMetricsCodec::handWrittenLinesAreRead()
{
    std::string reason;
    const auto train = decodeMetricsLine(kGoodTrain, &reason);
    QVERIFY2(train, reason.c_str());
    QCOMPARE(train->step, std::int64_t{2});
    QCOMPARE(train->train.wallSeconds, 1.5);
    QCOMPARE(train->train.taskLoss, 2.4);
    QCOMPARE(train->train.stepSeconds, 0.5);
    QCOMPARE(train->train.memoryKind, std::string("rss"));
    QCOMPARE(train->train.memoryBytes, std::int64_t{1000});
    QCOMPARE(train->train.memoryPeakBytes, std::int64_t{0});  // left out
    QCOMPARE(train->values.at("learning_rate"), 0.0005);
    QVERIFY(!train->values.contains("gradient_norm"));  // not written: no point, not a 0
    QCOMPARE(train->train.routing.size(), std::size_t{1});
    QCOMPARE(train->train.divergence.gammaAllPairs, 0.5);
    QCOMPARE(train->train.attentionDivergence.gammaAllPairs, 0.0);  // left out
    QCOMPARE(train->train.paths.size(), std::size_t{1});
    QVERIFY(train->train.residualNorms.empty());  // a line from before the measurement

    const auto eval = decodeMetricsLine(kGoodEval, &reason);
    QVERIFY2(eval, reason.c_str());
    QCOMPARE(eval->eval.split, std::string("validation"));
    QCOMPARE(eval->eval.perplexity, 5.75);
    QCOMPARE(eval->eval.examples, std::int64_t{64});

    const auto probe = decodeMetricsLine(kGoodProbe, &reason);
    QVERIFY2(probe, reason.c_str());
    QCOMPARE(probe->probe.text, std::string("caf\\xc3"));
    QCOMPARE(probe->probe.attention[0][0][0][1], 0.75f);  // [layer][head][query][key]
    QCOMPARE(probe->probe.experts[0][0], (std::vector<std::int64_t>{2, -1}));
    // An implied map (a Linformer head's: probabilities times a projection along
    // the sequence) may leave [0, 1]; it is read, not refused as damaged.
    const auto implied = decodeMetricsLine(replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[-0.25,1.25],[1,0]]]]"),
                                           &reason);
    QVERIFY2(implied, reason.c_str());
    QCOMPARE(implied->probe.attention[0][0][0][0], -0.25f);

    // An older trainer's line: only what it wrote. A dense model: no routing.
    const auto old = decodeMetricsLine(R"({"type":"train","step":3,"loss":null})", &reason);
    QVERIFY2(old, reason.c_str());
    QVERIFY(std::isnan(old->values.at("loss")));
    QVERIFY(old->train.routing.empty());
    // A type this version does not know passes untouched.
    const auto other = decodeMetricsLine(R"({"type":"note","text":1})", &reason);
    QVERIFY2(other, reason.c_str());
    QCOMPARE(other->type, MetricsRecord::Type::Other);
    QCOMPARE(other->typeName, std::string("note"));
}

void TestMetricsCodec::badLinesAreRefusedNamingWhatAndWhere()
{
    const std::vector<std::pair<std::string, std::string>> bad{
        {"not JSON at all", "not JSON"},
        {std::string("\x00\x01\x02\x03 blob", 9), "not JSON"},
        {std::string("PK\x03\x04\xde\xad\xbe\xef", 8), "not valid UTF-8 (byte 7 of the line is 0xbe)"},
        {R"({"type":"probe","step":1,"text":"caf)" + std::string("\xe9") + R"(","tokens":["a"]})", "not valid UTF-8"},
        {"[1, 2]", "not a JSON object"},
        {R"({"step":1})", "\"type\" is missing"},
        {R"({"type":7,"step":1})", "\"type\" is 7, not a text"},
        {R"({"type":"train","step":1e308,"loss":1})", "\"step\" is 1e+308, not a whole number from 0 to 2^53"},
        {R"({"type":"train","step":9007199254740994})", "\"step\" is 9007199254740994, not a whole number"},
        {R"({"type":"train","step":18446744073709551615})", "not a whole number from 0 to 2^53"},
        {R"({"type":"eval","step":-2,"split":"validation","loss":1,"accuracy":0})", "\"step\" is -2"},
        {R"({"type":"train","step":2.5})", "not a whole number"},
        {R"({"type":"train","step":"7"})", "\"step\" is \"7\""},
        {R"({"type":"train","loss":1})", "no \"step\""},
        {R"({"type":"train","step":1,"loss":"low"})", "\"loss\" is \"low\", not a number"},
        {R"({"type":"train","step":1,"step_seconds":[1]})", "\"step_seconds\" is an array, not a number"},
        {R"({"type":"train","step":1,"wall_seconds":-5})", "below 0"},
        {R"({"type":"train","step":1,"wall_seconds":null})", "\"wall_seconds\" is null, not a number"},
        {R"({"type":"train","step":1,"residual_norm":[1.5,"x"]})", "\"residual_norm[1]\" is \"x\", not a number"},
        {R"({"type":"train","step":1,"residual_norm":2})", "\"residual_norm\" is 2, not an array"},
        {R"({"type":"train","step":1,"weights":[{"group":"ffn.0","low":1,"high":0.5,"counts":[1]}]})",
         "\"weights[0].high\" is 0.5, below its \"low\" (1)"},
        {R"({"type":"train","step":1,"gradients":[{"group":"ffn.0","low":0,"high":1,"counts":[2,-1]}]})",
         "\"gradients[0].counts[1]\" is -1, not a whole number from 0 to 2^53"},
        {R"({"type":"train","step":1,"gradients":[{"group":"ffn.0","low":0,"high":1,"counts":[]}]})",
         "\"gradients[0].counts\" has 0 buckets, not from 1 to 1024"},
        {R"({"type":"train","step":1,"weights":[{"group":3,"low":0,"high":1,"counts":[1]}]})",
         "\"weights[0].group\" is 3, not a text"},
        {R"({"type":"train","step":1,"weights":[{"group":"embed","low":null,"high":1,"counts":[1]}]})",
         "\"weights[0].low\" is null, not a number"},
        {R"({"type":"train","step":1,"loss":1,"loss":2})", "repeated key"},
        {std::string(100, '[') + std::string(100, ']'), "not JSON"},
        {replaced(kGoodTrain, "\"load_vs_fair\":[1.25,0,1.75]", "\"load_vs_fair\":[1.25]"),
         "\"routing[0].load_vs_fair\" has 1 values for 3 experts"},
        {replaced(kGoodTrain, "\"tokens_per_expert\":[5,0,7]", "\"tokens_per_expert\":[]"), "0 experts"},
        {replaced(kGoodTrain, "\"tokens_per_expert\":[5,0,7]", "\"tokens_per_expert\":[5,-1,7]"),
         "\"routing[0].tokens_per_expert[1]\" is -1"},
        {replaced(kGoodTrain, "\"unused_experts\":1", "\"unused_experts\":4"),
         "\"routing[0].unused_experts\" is 4, not a whole number from 0 to 3 (the experts)"},
        {replaced(kGoodTrain, "\"ffn_gamma\":[[1,1],[0.75,1.25]]", "\"ffn_gamma\":[[1,1],[0.75]]"),
         "\"layernorm.ffn_gamma[1]\" has 1 channels but"},
        {replaced(kGoodTrain, "\"ffn_beta\":[[0.125,0],[0,-0.125]]", "\"ffn_beta\":[[0.125,0]]"),
         "\"layernorm.ffn_gamma\" is 2 x 2 but \"layernorm.ffn_beta\" is 1 x 2"},
        {replaced(kGoodTrain, "\"gamma_all_pairs\":0.5", "\"gamma_all_pairs\":\"x\""),
         "\"divergence.gamma_all_pairs\" is \"x\", not a number"},
        {replaced(kGoodTrain, "\"alpha\":[0.5,0.25,0.125,0.0625]", "\"alpha\":[0.5,0.25,0.125]"),
         "has 3 weights for 2 paths"},
        {replaced(kGoodTrain, "\"sublayer\":\"ffn\"", "\"sublayer\":\"mlp\""), "not \"attention\", \"ffn\" or \"cross_attention\""},
        {replaced(kGoodTrain, "\"block\":0,", "\"block\":100000,"), "\"paths[0].block\" is 100000"},
        {R"({"type":"probe","step":1,"text":"","tokens":[],"attention":[[[]]]})", "the probe has no tokens"},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1,0],[0,1]]]]"),
         "\"attention[0][0]\" has 3 rows for 2 tokens"},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1]]]]"),
         "\"attention[0][0][1]\" has 1 weights for 2 tokens"},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1,0]]],[[[1,0],[0,1]],[[1,0],[0,1]]]]"),
         "\"attention[1]\" has 2 heads but \"attention[0]\" has 1"},
        {replaced(kGoodProbe, "[[[[0.25,0.75],[1,0]]]]", "[[[[0.25,0.75],[1500,0]]]]"),
         "\"attention[0][0][1][0]\" is 1500, not an attention weight (from -1000 to 1000)"},
        {replaced(kGoodProbe, "[[[2,-1],[0,1]]]", "[[[2,-1]]]"), "\"experts[0]\" has 1 entries for 2 tokens"},
        {replaced(kGoodProbe, "[[[2,-1],[0,1]]]", "[[[2,-1],[0]]]"), "has 1 choices but"},
        {replaced(kGoodProbe, "[[[2,-1],[0,1]]]", "[[[2,-7],[0,1]]]"), "\"experts[0][0][1]\" is -7"},
        {replaced(kGoodProbe, "\"prediction_labels\":[\"0\",\"1\"]", "\"prediction_labels\":[\"0\"]"),
         "has 1 labels for 2 predictions"},
        {replaced(kGoodProbe, "\"prediction_labels\":[\"0\",\"1\"]", "\"prediction_labels\":[\"0\",\"1\"],\"label\":2"),
         "\"label\" is 2, not a whole number from 0 to 1"},
        {replaced(kGoodProbe, "\"prediction_labels\":[\"0\",\"1\"]", "\"prediction_labels\":[\"0\",\"1\"],\"label\":\"1\""),
         "\"label\" is \"1\""},
        {replaced(kGoodProbe, "\"text\":\"caf\\\\xc3\"", "\"text\":7"), "\"text\" is 7, not a text"},
        {replaced(kGoodProbe, "\"tokens\":[\"a\",\"b\"]", "\"tokens\":[\"a\",2]"), "\"tokens[1]\" is 2, not a text"},
        {replaced(kGoodEval, "\"loss\":1.75", "\"loss\":\"x\""), "\"loss\" is \"x\""},
        {replaced(kGoodEval, "\"split\":\"validation\"", "\"split\":null"), "\"split\" is null, not a text"},
        {replaced(kGoodEval, "\"examples\":64", "\"examples\":0.5"), "\"examples\" is 0.5"},
    };
    for (const auto& [line, expected] : bad) {
        std::string reason;
        QVERIFY2(!decodeMetricsLine(line, &reason), line.c_str());
        QVERIFY2(reason.find(expected) != std::string::npos,
                 (legibleBytes(line) + "\n  reason: " + reason + "\n  expected: " + expected).c_str());
    }
    // A long text in a message is cut short, at a character.
    std::string reason;
    const std::string long_ = "ééééééééééééééééééééééééééééééééééééééééééééé";  // 45 characters, 90 bytes
    QVERIFY(!decodeMetricsLine(R"({"type":"train","step":")" + long_ + "\"}", &reason));
    QVERIFY2(reason.find("\"step\" is \"" + long_.substr(0, 80) + "…\"") != std::string::npos, reason.c_str());
}

void TestMetricsCodec::imageProbesComeBackWhole()
{
    std::string reason;
    // Written by hand: the bytes are base64 of 0, 1, 2, 253, 254, 255.
    const auto read = decodeMetricsLine(kGoodImageProbe, &reason);
    QVERIFY2(read, reason.c_str());
    const ProbeImage& image = read->probe.image;
    QCOMPARE(image.width, std::int64_t{2});
    QCOMPARE(image.height, std::int64_t{1});
    QCOMPARE(image.channels, std::int64_t{3});
    QCOMPARE(image.gridRows, std::int64_t{1});
    QCOMPARE(image.gridCols, std::int64_t{2});
    QVERIFY(image.pixels == (std::vector<std::uint8_t>{0, 1, 2, 253, 254, 255}));

    // Written and read back: a 3x3 grey image (9 bytes: no base64 padding), 7 bytes
    // and 8 bytes (both paddings), with CLS and a grid of 1 x 1.
    for (const std::size_t bytes : {std::size_t{9}, std::size_t{1}, std::size_t{2}}) {
        ProbeResult p;
        p.step = 3;
        p.text = "cat.png";
        p.tokens = {"CLS", "r0c0"};
        p.attention = {{{{0.5f, 0.5f}, {0.0f, 1.0f}}}};
        p.prediction = {1.0f};
        p.image.channels = 1;
        p.image.width = static_cast<std::int64_t>(bytes);
        p.image.height = 1;
        p.image.gridRows = p.image.gridCols = 1;
        for (std::size_t i = 0; i < bytes; ++i)
            p.image.pixels.push_back(static_cast<std::uint8_t>(250 - 37 * i));
        const auto back = decodeMetricsLine(encodeMetricsLine(p), &reason);
        QVERIFY2(back, reason.c_str());
        QVERIFY(back->probe.image.pixels == p.image.pixels);
        QCOMPARE(back->probe.image.width, p.image.width);
        QCOMPARE(back->probe.tokens, p.tokens);
    }
    // A text probe carries no image.
    ProbeResult text;
    text.tokens = {"a"};
    QVERIFY(encodeMetricsLine(text).find("\"image\"") == std::string::npos);
}

void TestMetricsCodec::badImageProbesAreRefused()
{
    const std::vector<std::pair<std::string, std::string>> bad{
        {replaced(kGoodImageProbe, "\"width\":2", "\"width\":2000"), "\"image.width\" is 2000, not a whole number from 1 to 1024"},
        {replaced(kGoodImageProbe, "\"height\":1", "\"height\":0"), "\"image.height\" is 0"},
        {replaced(kGoodImageProbe, "\"channels\":3", "\"channels\":2"), "\"image.channels\" is 2, not 1 (grey) or 3 (RGB)"},
        {replaced(kGoodImageProbe, "\"channels\":3", "\"channels\":4"), "\"image.channels\" is 4"},
        {replaced(kGoodImageProbe, "\"AAEC/f7/\"", "\"AAEC/f7\""), "\"image.pixels\" is not base64"},
        {replaced(kGoodImageProbe, "\"AAEC/f7/\"", "\"AA!C/f7/\""), "\"image.pixels\" is not base64"},
        {replaced(kGoodImageProbe, "\"AAEC/f7/\"", "\"AAEC\""), "\"image.pixels\" holds 3 bytes for 2x1x3 (6)"},
        {replaced(kGoodImageProbe, "\"AAEC/f7/\"", "7"), "\"image.pixels\" is 7, not a text"},
        {replaced(kGoodImageProbe, "\"grid_rows\":1", "\"grid_rows\":2"), "\"image.grid_rows\" is 2, not a whole number from 1 to the height"},
        {replaced(kGoodImageProbe, R"("width":2,"height":1,"channels":3,"grid_rows":1,"grid_cols":2,"pixels":"AAEC/f7/")",
                  R"("width":4,"height":4,"channels":3,"grid_rows":2,"grid_cols":2,)"
                  R"("pixels":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4v")"),
         "the probe has 2 tokens for a grid of 2x2 patches"},
        {replaced(replaced(kGoodImageProbe, "\"image\":{", "\"image\":[{"), "\"AAEC/f7/\"}}", "\"AAEC/f7/\"}]}"),
         "\"image\" is an array, not an object"},
    };
    for (const auto& [line, expected] : bad) {
        std::string reason;
        QVERIFY2(!decodeMetricsLine(line, &reason), line.c_str());
        QVERIFY2(reason.find(expected) != std::string::npos,
                 (line + "\n  reason: " + reason + "\n  expected: " + expected).c_str());
    }
}

void TestMetricsCodec::aDistributedRunsPaceComesBack()
{
    // A distributed line adds the world's pace; rank 1 computed longest.
    TrainingSnapshot s;
    s.step = 7;
    s.world.size = 3;
    s.world.computeSeconds = {0.25, 0.5, 0.125};
    s.world.peakBytes = {1000, 2000, 3000};
    s.world.allReduceWaitSeconds = 0.0625;
    const std::string line = toJson(s).dump();
    std::string reason;
    const auto back = decodeMetricsLine(line, &reason);
    QVERIFY2(back, reason.c_str());
    QCOMPARE(back->train.world.size, std::int64_t{3});
    QCOMPARE(back->train.world.computeSeconds, (std::vector<double>{0.25, 0.5, 0.125}));
    QCOMPARE(back->train.world.peakBytes, (std::vector<std::int64_t>{1000, 2000, 3000}));
    QCOMPARE(back->train.world.allReduceWaitSeconds, 0.0625);
    QCOMPARE(back->train.world.slowestRank(), 1);
    // One process writes none of it, and reads as a world of one.
    TrainingSnapshot alone;
    QVERIFY(toJson(alone).dump().find("world_size") == std::string::npos);
    const auto single = decodeMetricsLine(toJson(alone).dump(), &reason);
    QCOMPARE(single->train.world.size, std::int64_t{1});
    QCOMPARE(single->train.world.slowestRank(), -1);
    // More ranks than the world, or a world of none, is damage.
    for (const auto& [bad, expected] :
         std::vector<std::pair<std::string, std::string>>{
             {replaced(line, "\"world_size\":3", "\"world_size\":2"), "hold at most world_size (2) entries"},
             {replaced(line, "\"world_size\":3", "\"world_size\":0"), "\"world_size\" is 0"},
             {replaced(line, "[1000,2000,3000]", "[1000,-2,3000]"), "\"rank_memory_peak_bytes[1]\" is -2"}}) {
        QVERIFY2(!decodeMetricsLine(bad, &reason), bad.c_str());
        QVERIFY2(reason.find(expected) != std::string::npos, (reason + " / expected " + expected).c_str());
    }
}

QTEST_GUILESS_MAIN(TestMetricsCodec)
#include "tst_metricscodec.moc"
