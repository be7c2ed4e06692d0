// Head roles, ablations, router health and the logit lens (issue 19), each on
// attention maps or models constructed so that the expected value is known by
// hand: a head built to attend to the previous token scores 1 on that role, a
// head whose output projection is zero changes nothing when ablated, a router
// with equal logits is balanced.

#include "TestSupport.h"
#include "model/WideTransformer.h"
#include "measure/AblationScan.h"
#include "measure/HeadRoles.h"
#include "measure/Measurements.h"
#include "measure/ValidationInsight.h"

#include <QtTest>

#include <cmath>

using namespace widelab;

namespace {

ModelConfig tiny(const std::string& overrides = "{}")
{
    return test::modelConfig(R"({"vocab_size": 17, "max_len": 10, "d_model": 16, "heads": 2, "ffn_dim": 24,
                                 "layers": 2, "dropout": 0.0, "num_classes": 3, "pooling": "mean"})",
                             overrides);
}

torch::Tensor parameter(WideTransformerImpl& model, const std::string& name)
{
    for (const auto& item : model.named_parameters())
        if (item.key() == name)
            return item.value();
    throw std::runtime_error("no parameter " + name);
}

// Every sublayer writes zero (the output projections of attention and of the
// FFN, weights and biases): the residual stream is the embedding all the way up.
void silenceSublayers(WideTransformerImpl& model)
{
    torch::NoGradGuard noGrad;
    for (const auto& item : model.named_parameters()) {
        const std::string& name = item.key();
        if (name.find("out_weight") != std::string::npos || name.find("out_bias") != std::string::npos
            || name.find("w_out") != std::string::npos || name.find("b_out") != std::string::npos)
            item.value().zero_();
    }
}

// q = k = 0 in both layers of tiny(): every query weighs its visible keys equally.
void zeroQueriesAndKeys(WideTransformerImpl& model)
{
    torch::NoGradGuard noGrad;
    for (const char* name : {"attention.0.qkv.weight", "attention.1.qkv.weight"})
        parameter(model, name).zero_();
}

// [1, H, T, T] maps from rows given per head.
torch::Tensor maps(const std::vector<std::vector<std::vector<double>>>& heads)
{
    std::vector<torch::Tensor> stacked;
    for (const auto& rows : heads) {
        std::vector<torch::Tensor> r;
        for (const auto& row : rows)
            r.push_back(torch::tensor(row, torch::kFloat64));
        stacked.push_back(torch::stack(r));
    }
    return torch::stack(stacked).unsqueeze(0);
}

std::vector<std::vector<double>> rows(std::int64_t T, const std::function<double(std::int64_t, std::int64_t)>& at)
{
    std::vector<std::vector<double>> out(static_cast<std::size_t>(T), std::vector<double>(static_cast<std::size_t>(T)));
    for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < T; ++j)
            out[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = at(i, j);
    return out;
}

double score(const HeadRoleScores& s, std::size_t layer, std::size_t head, HeadRole role)
{
    return s.scores[layer][head][static_cast<std::size_t>(role)];
}

std::string dominant(const HeadRoleScores& s, std::size_t layer, std::size_t head)
{
    return s.roles[static_cast<std::size_t>(s.dominant[layer][head])];
}

torch::Tensor ids(std::initializer_list<std::int64_t> values)
{
    return torch::tensor(std::vector<std::int64_t>(values), torch::kLong).unsqueeze(0);
}

}  // namespace

class TestInterpretability : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void constructedHeadsScoreTheirRole();
    void paddingIsNotScored();
    void repeatedSequencesFindInductionAndDuplicateHeads();
    void uniformAttentionModelScoresByHand();
    void causalUniformAttentionScoresByHand();
    void ablatingAHeadWithZeroOutputChangesNothing();
    void meanAblationOfAConstantHeadChangesNothing();
    void ablatingASilentExpertPathOrSublayerChangesNothing();
    void ablationPartsFollowTheModel();
    void routerHealthByHand();
    void equalLogitsAreBalanced();
    void logitLensEndsAtThePrediction();
    void logitLensOfSilentSublayersIsConstant();
    void residualNormIsTheMeanTokenNormOverRealTokens();
};

void TestInterpretability::constructedHeadsScoreTheirRole()
{
    // Five real tokens, bidirectional; four heads, each a pattern by construction.
    const std::int64_t T = 5;
    const torch::Tensor a = maps({
        rows(T, [](auto i, auto j) { return i == 0 ? (j == 0 ? 1.0 : 0.0) : (j == i - 1 ? 1.0 : 0.0); }),  // previous
        rows(T, [](auto, auto) { return 0.2; }),                                                        // uniform
        rows(T, [](auto, auto j) { return j == 0 ? 1.0 : 0.0; }),                                       // first
        rows(T, [](auto i, auto j) { return i == j ? 1.0 : 0.0; }),                                     // self
    });
    HeadRoleAccumulator roles(1, 4, /*languageModel=*/false);
    roles.addMaps(0, a, {});
    const HeadRoleScores s = roles.scores();
    QCOMPARE(s.roles, (std::vector<std::string>{"previous token", "next token", "first token", "self", "local", "broad"}));

    // Previous: every query 1..4 puts all on i-1; query 0 on itself (1 of 5 self);
    // position 0 gets query 1 only (1 of 4 queries).
    QCOMPARE(score(s, 0, 0, HeadRole::PreviousToken), 1.0);
    QCOMPARE(score(s, 0, 0, HeadRole::NextToken), 0.0);
    QCOMPARE(score(s, 0, 0, HeadRole::FirstToken), 0.25);
    QCOMPARE(score(s, 0, 0, HeadRole::Self), 0.2);
    QCOMPARE(score(s, 0, 0, HeadRole::Local), 1.0);
    QCOMPARE(score(s, 0, 0, HeadRole::Broad), 0.0);
    QCOMPARE(dominant(s, 0, 0), std::string("previous token"));

    // Uniform over 5: 0.2 on every single position; within 3 of i: 4, 5, 5, 5, 4
    // keys of 5; entropy log 5 over log 5.
    for (const HeadRole role : {HeadRole::PreviousToken, HeadRole::NextToken, HeadRole::FirstToken, HeadRole::Self})
        QVERIFY(std::abs(score(s, 0, 1, role) - 0.2) < 1e-12);
    QVERIFY(std::abs(score(s, 0, 1, HeadRole::Local) - 0.92) < 1e-12);
    QVERIFY(std::abs(score(s, 0, 1, HeadRole::Broad) - 1.0) < 1e-12);
    QCOMPARE(dominant(s, 0, 1), std::string("local"));

    QCOMPARE(score(s, 0, 2, HeadRole::FirstToken), 1.0);
    QCOMPARE(score(s, 0, 2, HeadRole::PreviousToken), 0.25);  // only query 1's previous token is the first
    QCOMPARE(dominant(s, 0, 2), std::string("first token"));

    QCOMPARE(score(s, 0, 3, HeadRole::Self), 1.0);
    QCOMPARE(score(s, 0, 3, HeadRole::FirstToken), 0.0);
    QCOMPARE(dominant(s, 0, 3), std::string("self"));

    // A head spread evenly over 20 keys is neither local nor a pointer: broad.
    HeadRoleAccumulator wide(1, 1, false);
    wide.addMaps(0, maps({rows(20, [](auto, auto) { return 0.05; })}), {});
    QCOMPARE(dominant(wide.scores(), 0, 0), std::string("broad"));
}

void TestInterpretability::paddingIsNotScored()
{
    // The previous-token head of five real tokens, padded to seven: the padded
    // rows (uniform, as a masked row is) and keys change nothing.
    const std::int64_t T = 7;
    const torch::Tensor a = maps({rows(T, [](auto i, auto j) {
        if (i >= 5)
            return 1.0 / 7.0;
        return i == 0 ? (j == 0 ? 1.0 : 0.0) : (j == i - 1 ? 1.0 : 0.0);
    })});
    const torch::Tensor valid = torch::tensor(std::vector<std::int64_t>{1, 1, 1, 1, 1, 0, 0}).to(torch::kBool).unsqueeze(0);
    HeadRoleAccumulator roles(1, 1, false);
    roles.addMaps(0, a, valid);
    const HeadRoleScores s = roles.scores();
    QCOMPARE(score(s, 0, 0, HeadRole::PreviousToken), 1.0);
    QCOMPARE(score(s, 0, 0, HeadRole::FirstToken), 0.25);
    QCOMPARE(score(s, 0, 0, HeadRole::Self), 0.2);
}

void TestInterpretability::repeatedSequencesFindInductionAndDuplicateHeads()
{
    // [r r] with period 3: an induction head looks at i-2 (the token after the
    // earlier copy), a duplicate-token head at i-3, on the second half; the first
    // half attends to itself.
    const std::int64_t L = 3, T = 2 * L;
    const torch::Tensor a = maps({
        rows(T, [&](auto i, auto j) { return i < L ? (i == j ? 1.0 : 0.0) : (j == i - L + 1 ? 1.0 : 0.0); }),
        rows(T, [&](auto i, auto j) { return i < L ? (i == j ? 1.0 : 0.0) : (j == i - L ? 1.0 : 0.0); }),
    });
    HeadRoleAccumulator roles(1, 2, /*languageModel=*/true);
    roles.addRepeated(0, a, L);
    const HeadRoleScores s = roles.scores();
    QCOMPARE(s.roles.size(), std::size_t{8});
    QCOMPARE(score(s, 0, 0, HeadRole::Induction), 1.0);
    QCOMPARE(score(s, 0, 0, HeadRole::DuplicateToken), 0.0);
    QCOMPARE(dominant(s, 0, 0), std::string("induction"));
    QCOMPARE(score(s, 0, 1, HeadRole::DuplicateToken), 1.0);
    QCOMPARE(score(s, 0, 1, HeadRole::Induction), 0.0);
    QCOMPARE(dominant(s, 0, 1), std::string("duplicate token"));
}

void TestInterpretability::uniformAttentionModelScoresByHand()
{
    // q = k = 0: every query weighs its 6 keys equally, in every head of every layer.
    WideTransformer model(tiny());
    zeroQueriesAndKeys(*model);
    InsightInputs inputs;
    inputs.probes.push_back(ids({2, 3, 4, 5, 6, 7}));
    const HeadRoleScores s = measureValidationInsights(*model, inputs, 0, 0).heads;
    QCOMPARE(s.scores.size(), std::size_t{2});
    QCOMPARE(s.scores[0].size(), std::size_t{2});
    for (std::size_t layer = 0; layer < 2; ++layer) {
        for (std::size_t head = 0; head < 2; ++head) {
            for (const HeadRole role : {HeadRole::PreviousToken, HeadRole::NextToken, HeadRole::FirstToken, HeadRole::Self})
                QVERIFY2(std::abs(score(s, layer, head, role) - 1.0 / 6.0) < 1e-6, qPrintable(QString::number(score(s, layer, head, role))));
            // Keys within 3 of i: 4, 5, 6, 6, 5, 4 of 6.
            QVERIFY(std::abs(score(s, layer, head, HeadRole::Local) - 30.0 / 36.0) < 1e-6);
            QVERIFY(std::abs(score(s, layer, head, HeadRole::Broad) - 1.0) < 1e-6);
        }
    }
}

void TestInterpretability::causalUniformAttentionScoresByHand()
{
    // A language model with q = k = 0: query i weighs its i + 1 visible keys equally.
    WideTransformer model(tiny(R"({"head": "language_model"})"));
    zeroQueriesAndKeys(*model);
    InsightInputs inputs;
    inputs.probes.push_back(ids({2, 3, 4, 5, 6, 7}));
    const HeadRoleScores s = measureValidationInsights(*model, inputs, 0, 7).heads;
    // previous and first: queries 1..5 give 1/2 .. 1/6; self: queries 0..5 give 1 .. 1/6.
    const double pointer = (1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6) / 5.0;
    const double self = (1.0 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6) / 6.0;
    // Repeated sequences of period min(16, max_len / 2) = 5: queries 5..9 of [r r],
    // each 1 / (i + 1) on the earlier copy and on the token after it.
    const double repeated = (1.0 / 6 + 1.0 / 7 + 1.0 / 8 + 1.0 / 9 + 1.0 / 10) / 5.0;
    QCOMPARE(s.roles.size(), std::size_t{8});
    QVERIFY(std::abs(score(s, 1, 0, HeadRole::PreviousToken) - pointer) < 1e-6);
    QVERIFY(std::abs(score(s, 1, 0, HeadRole::FirstToken) - pointer) < 1e-6);
    QVERIFY(std::abs(score(s, 1, 0, HeadRole::Self) - self) < 1e-6);
    QCOMPARE(score(s, 1, 0, HeadRole::NextToken), 0.0);  // it cannot look ahead
    QVERIFY(std::abs(score(s, 1, 0, HeadRole::Broad) - 1.0) < 1e-6);
    QVERIFY(std::abs(score(s, 1, 1, HeadRole::DuplicateToken) - repeated) < 1e-6);
    QVERIFY(std::abs(score(s, 1, 1, HeadRole::Induction) - repeated) < 1e-6);
}

void TestInterpretability::ablatingAHeadWithZeroOutputChangesNothing()
{
    WideTransformer model(tiny());
    model->eval();
    torch::NoGradGuard noGrad;
    // Head 0 of layer 1 writes nothing: its columns of the output projection are zero.
    const std::int64_t A = model->config().headDim;
    parameter(*model, "attention.0.out_weight").narrow(2, 0, A).zero_();
    const torch::Tensor input = ids({2, 3, 4, 5, 6, 7});
    const torch::Tensor whole = model->forward(input).logits;
    auto ablated = [&](std::int64_t block, std::int64_t head, AblationMode mode) {
        ForwardTrace trace;
        trace.ablations = {{AblationPart::Head, mode, block, head}};
        return model->inspect(input, {}, trace).logits;
    };
    QVERIFY(torch::allclose(ablated(0, 0, AblationMode::Zero), whole, 0.0, 1e-6));
    QVERIFY(torch::allclose(ablated(0, 0, AblationMode::Mean), whole, 0.0, 1e-6));
    // Its neighbour, and the same head in layer 2, do write something.
    QVERIFY((ablated(0, 1, AblationMode::Zero) - whole).abs().max().item<double>() > 1e-4);
    QVERIFY((ablated(1, 0, AblationMode::Zero) - whole).abs().max().item<double>() > 1e-4);
}

void TestInterpretability::meanAblationOfAConstantHeadChangesNothing()
{
    // v of head 1 in layer 1 is its bias alone, the same for every token, so the
    // head's context is that constant whatever it attends to: its mean is itself.
    WideTransformer model(tiny());
    model->eval();
    torch::NoGradGuard noGrad;
    const std::int64_t A = model->config().headDim, H = model->config().heads;
    torch::Tensor weight = parameter(*model, "attention.0.qkv.weight");
    torch::Tensor bias = parameter(*model, "attention.0.qkv.bias");
    weight.narrow(0, 2 * H * A + A, A).zero_();  // rows (v, head 1)
    bias.narrow(0, 2 * H * A + A, A).fill_(0.5);
    const torch::Tensor input = torch::tensor(std::vector<std::int64_t>{2, 3, 4, 5, 6, 7, 8, 9}, torch::kLong).view({2, 4});
    const torch::Tensor mask = torch::tensor(std::vector<std::int64_t>{1, 1, 1, 1, 1, 1, 0, 0}).to(torch::kBool).view({2, 4});
    const torch::Tensor whole = model->forward(input, mask).logits;
    ForwardTrace trace;
    trace.ablations = {{AblationPart::Head, AblationMode::Mean, 0, 1}};
    QVERIFY(torch::allclose(model->inspect(input, mask, trace).logits, whole, 0.0, 1e-5));
    trace.ablations = {{AblationPart::Head, AblationMode::Zero, 0, 1}};
    QVERIFY((model->inspect(input, mask, trace).logits - whole).abs().max().item<double>() > 1e-4);
}

void TestInterpretability::ablatingASilentExpertPathOrSublayerChangesNothing()
{
    torch::NoGradGuard noGrad;
    const torch::Tensor input = ids({2, 3, 4, 5, 6, 7, 8, 9});
    auto changes = [&](WideTransformer& model, const Ablation& a) {
        ForwardTrace trace;
        trace.ablations = {a};
        return (model->inspect(input, {}, trace).logits - model->forward(input).logits).abs().max().item<double>();
    };
    {
        // Expert 3 of block 1 answers zero for every token; expert 2 does not.
        WideTransformer model(tiny(R"({"experts": 4, "top_k": 2, "capacity_factor": 0, "eval_capacity_factor": 0})"));
        model->eval();
        parameter(*model, "ffn.0.w_out")[2].zero_();
        parameter(*model, "ffn.0.b_out")[2].zero_();
        QVERIFY(changes(model, {AblationPart::Expert, AblationMode::Zero, 0, 2}) < 1e-6);
        // An expert of block 1 that does receive a token (the first token's first other choice).
        ForwardTrace routing;
        model->inspect(input, {}, routing);
        const std::int64_t busiest = routing.blocks[0].expert.masked_select(routing.blocks[0].expert.ne(2))[0].item<std::int64_t>();
        QVERIFY(changes(model, {AblationPart::Expert, AblationMode::Zero, 0, busiest}) > 1e-4);
        // The FFN sublayer of block 2 writes nothing when every expert there is silent.
        parameter(*model, "ffn.1.w_out").zero_();
        parameter(*model, "ffn.1.b_out").zero_();
        QVERIFY(changes(model, {AblationPart::Sublayer, AblationMode::Zero, 1, 1}) < 1e-6);
        QVERIFY(changes(model, {AblationPart::Sublayer, AblationMode::Mean, 1, 1}) < 1e-6);
        QVERIFY(changes(model, {AblationPart::Sublayer, AblationMode::Zero, 1, 0}) > 1e-4);
    }
    {
        // Two paths with learnable weights: path 2 of block 1's FFN has weight 0.
        WideTransformer model(tiny(R"({"paths": 2, "path_norm": true, "learnable_path_weights": true})"));
        model->eval();
        parameter(*model, "path_ffn.0.alpha")[1].zero_();
        QVERIFY(changes(model, {AblationPart::Path, AblationMode::Zero, 0, 2 + 1}) < 1e-6);  // the FFN's path 2
        QVERIFY(changes(model, {AblationPart::Path, AblationMode::Zero, 0, 1}) > 1e-4);      // the attention's path 2
        QVERIFY(changes(model, {AblationPart::Path, AblationMode::Zero, 0, 2}) > 1e-4);      // the FFN's path 1
    }
}

void TestInterpretability::ablationPartsFollowTheModel()
{
    std::int64_t columns = 0;
    const ModelConfig wide = tiny(R"({"layers": 1, "heads": 6, "head_dim": 4})");
    const auto heads = ablationParts(wide, AblationPart::Head, AblationMode::Zero, &columns);
    QCOMPARE(heads.size(), std::size_t{6});
    QCOMPARE(columns, std::int64_t{6});
    QCOMPARE(ablationLabel(wide, heads[4].front()), std::string("layer 1 head 5"));

    // WideNet: one set of experts for every block, switched off everywhere at once.
    const ModelConfig shared = tiny(R"({"layers": 3, "experts": 4, "share_ffn": true, "share_attention": true})");
    const auto experts = ablationParts(shared, AblationPart::Expert, AblationMode::Mean, &columns);
    QCOMPARE(experts.size(), std::size_t{4});
    QCOMPARE(experts[1].size(), std::size_t{3});
    QCOMPARE(experts[1][2].block, std::int64_t{2});
    QCOMPARE(experts[1][2].index, std::int64_t{1});
    QCOMPARE(ablationLabel(shared, experts[1].front()), std::string("every block expert 2"));

    const ModelConfig paths = tiny(R"({"paths": 3})");
    const auto pathParts = ablationParts(paths, AblationPart::Path, AblationMode::Zero, &columns);
    QCOMPARE(columns, std::int64_t{6});
    QCOMPARE(pathParts.size(), std::size_t{12});
    QCOMPARE(ablationLabel(paths, pathParts[4].front()), std::string("block 1 path 2 (ffn)"));
    QCOMPARE(ablationParts(paths, AblationPart::Sublayer, AblationMode::Zero, &columns).size(), std::size_t{4});

    QVERIFY_THROWS_EXCEPTION(AblationUnavailable, ablationParts(tiny(), AblationPart::Expert, AblationMode::Zero));
    QVERIFY_THROWS_EXCEPTION(AblationUnavailable, ablationParts(tiny(), AblationPart::Path, AblationMode::Zero));
}

void TestInterpretability::routerHealthByHand()
{
    // Three tokens, four experts, top-1; two routing blocks.
    const torch::Tensor probs = torch::tensor(std::vector<float>{0.7f, 0.1f, 0.1f, 0.1f,  //
                                                                 0.1f, 0.7f, 0.1f, 0.1f,  //
                                                                 0.25f, 0.25f, 0.25f, 0.25f})
                                    .view({3, 4});
    ForwardTrace trace;
    for (const std::vector<std::int64_t>& top : {std::vector<std::int64_t>{0, 1, 0}, std::vector<std::int64_t>{0, 1, 3}}) {
        BlockTrace b;
        b.routed = true;
        b.expert = torch::tensor(top, torch::kLong).view({3, 1});
        b.kept = torch::ones({3, 1}, torch::kBool);
        b.probs = probs;
        b.logits = torch::log(probs) + 2.0f;  // log-sum-exp 2 for every token
        trace.blocks.push_back(b);
    }
    const std::vector<RoutingStats> stats = routingStats(trace, 4);
    QCOMPARE(stats.size(), std::size_t{2});
    // Mean router probabilities (0.7 + 0.1 + 0.25) / 3 = 0.35, 0.35, then 0.15, 0.15.
    QVERIFY(std::abs(stats[0].maxViolation - 0.4) < 1e-6);
    const double entropy = -(2 * 0.35 * std::log(0.35) + 2 * 0.15 * std::log(0.15));
    QVERIFY(std::abs(stats[0].effectiveExperts - std::exp(entropy) / 4.0) < 1e-6);
    QVERIFY(std::abs(stats[0].zLoss - 4.0) < 1e-5);
    QCOMPARE(stats[0].deadFraction, 0.5);  // experts 3 and 4 get nothing
    QCOMPARE(stats[0].consistency, -1.0);   // the first routing block
    QCOMPARE(stats[1].deadFraction, 0.25);
    QVERIFY(std::abs(stats[1].consistency - 2.0 / 3.0) < 1e-12);  // the third token moved
}

void TestInterpretability::equalLogitsAreBalanced()
{
    // A router of zeros: every token's logits are equal.
    WideTransformer model(tiny(R"({"experts": 4, "top_k": 2})"));
    model->eval();
    torch::NoGradGuard noGrad;
    parameter(*model, "router.0.weight").zero_();
    ForwardTrace trace;
    trace.captureAttention = false;
    model->inspect(ids({2, 3, 4, 5, 6, 7}), {}, trace);
    const std::vector<RoutingStats> stats = routingStats(trace, 4);
    QVERIFY(!stats.empty());
    for (const RoutingStats& s : stats) {
        QVERIFY(std::abs(s.effectiveExperts - 1.0) < 1e-9);
        QVERIFY(std::abs(s.maxViolation) < 1e-9);
        QVERIFY(std::abs(s.zLoss - std::pow(std::log(4.0), 2)) < 1e-5);
        QCOMPARE(s.deadFraction, static_cast<double>(s.unusedExperts) / 4.0);
    }
}

void TestInterpretability::logitLensEndsAtThePrediction()
{
    for (const char* head : {R"({"head": "classification"})", R"({"head": "language_model"})"}) {
        WideTransformer model(tiny(head));
        model->eval();
        torch::NoGradGuard noGrad;
        ForwardTrace trace;
        trace.captureLens = true;
        const ModelOutput output = model->inspect(ids({2, 3, 4, 5}), {}, trace);
        QCOMPARE(trace.lens.size(), std::size_t{4});  // two sublayers of two blocks
        QVERIFY(torch::allclose(trace.lens.back(), output.logits, 0.0, 1e-6));
        QVERIFY((trace.lens.front() - output.logits).abs().max().item<double>() > 1e-4);
    }
}

void TestInterpretability::logitLensOfSilentSublayersIsConstant()
{
    // Every sublayer writes zero: the residual stream is the embedding all the
    // way up, so every stage reads the same prediction.
    WideTransformer model(tiny());
    model->eval();
    torch::NoGradGuard noGrad;
    silenceSublayers(*model);
    ForwardTrace trace;
    trace.captureLens = true;
    const ModelOutput output = model->inspect(ids({2, 3, 4, 5}), {}, trace);
    for (const torch::Tensor& stage : trace.lens)
        QVERIFY(torch::allclose(stage, output.logits, 0.0, 1e-6));
}

void TestInterpretability::residualNormIsTheMeanTokenNormOverRealTokens()
{
    // Every sublayer writes zero and positions add nothing: after block 1 the
    // stream is each token's embedding. Token 2 is (3, 4, 0, ...), norm 5; token 3
    // is 9 in channel 10, norm 9; token 4 (padding here) is 100 in channel 12.
    WideTransformer model(tiny());
    model->eval();
    torch::NoGradGuard noGrad;
    silenceSublayers(*model);
    parameter(*model, "embed.position.weight").zero_();
    torch::Tensor token = parameter(*model, "embed.token.weight");
    token.zero_();
    token[2][0] = 3.0;
    token[2][1] = 4.0;
    token[3][10] = 9.0;
    token[4][12] = 100.0;
    // Block 2's FFN adds 12 in channel 15 to every token: norms 13 and 15.
    parameter(*model, "ffn.1.b_out").view(-1)[15] = 12.0;
    const torch::Tensor input = ids({2, 3, 4});
    const torch::Tensor mask = torch::tensor(std::vector<std::int64_t>{1, 1, 0}).to(torch::kBool).view({1, 3});

    ForwardTrace off;  // not asked for: nothing measured
    model->inspect(input, mask, off);
    QVERIFY(!off.blocks[0].residualNorm.defined());

    ForwardTrace trace;
    trace.captureResidual = true;
    model->inspect(input, mask, trace);
    QCOMPARE(trace.blocks.size(), std::size_t{2});
    QCOMPARE(trace.blocks[0].residualNorm.item<double>(), 7.0);   // (5 + 9) / 2, the padding left out
    QCOMPARE(trace.blocks[1].residualNorm.item<double>(), 14.0);  // (13 + 15) / 2
    ForwardTrace unmasked;
    unmasked.captureResidual = true;
    model->inspect(input, {}, unmasked);
    QVERIFY(std::abs(unmasked.blocks[0].residualNorm.item<double>() - 38.0) < 1e-4);  // (5 + 9 + 100) / 3
}

QTEST_GUILESS_MAIN(TestInterpretability)
#include "tst_interpretability.moc"
