// Tests of model/Router: capacity, drop order, gates and the balance loss on
// constructed inputs whose right answers are worked out by hand in the comments.
#include "TestSupport.h"
#include "model/FeedForward.h"
#include "model/Router.h"
#include "model/WideTransformer.h"
#include "runtime/OperatorCount.h"

#include <QtTest>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

using namespace widelab;

namespace {

// With an identity router weight the logits are the token vectors themselves.
Routing routeLogits(const std::vector<std::vector<float>>& logits, std::int64_t topK, double capacityFactor,
                    RoutingPriority priority = RoutingPriority::Position, bool balanceEveryChoice = false)
{
    const auto S = static_cast<std::int64_t>(logits.size());
    const auto E = static_cast<std::int64_t>(logits.front().size());
    torch::Tensor x = torch::empty({S, E});
    for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t e = 0; e < E; ++e)
            x[s][e] = logits[static_cast<std::size_t>(s)][static_cast<std::size_t>(e)];
    RoutingOptions options;
    options.topK = topK;
    options.capacityFactor = capacityFactor;
    options.priority = priority;
    options.balanceEveryChoice = balanceEveryChoice;
    return route(x, torch::eye(E), options);
}

torch::Tensor longs(std::vector<std::int64_t> values) { return torch::tensor(values, torch::kLong); }
torch::Tensor bools(std::vector<int> values) { return torch::tensor(std::vector<std::int64_t>(values.begin(), values.end())).to(torch::kBool); }

}  // namespace

class TestRouting : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void capacity_data();
    void capacity();
    void overflowDropsTheLatestTokens();
    void firstChoicesAreServedBeforeSecondChoices();
    void batchPriorityServesConfidentTokensFirst();
    void causalRoutingServesTokenByToken();
    void noTokensGiveZeroBalanceLoss();
    void noCapacityFactorNeverDrops();
    void combineWeightsAreRouterProbabilities();
    void droppedTokenGetsZeroAndKeptTokensTheirExperts();
    void balanceLoss_data();
    void balanceLoss();
    void balanceLossGradientReachesTheRouter();
    void balanceLossCanCountEveryChoice();
    void noiseOnlyWhileTraining();
    void routingGroupsReuseTheFirstBlocksRouting();
    void languageModelsAreCausalSafeInEvaluation();
    void zLossOnlyWhenTrainingAsksForIt();
    void ranksLossesAddUpToTheWholeBatch();
};

void TestRouting::capacity_data()
{
    QTest::addColumn<qint64>("tokens");
    QTest::addColumn<qint64>("experts");
    QTest::addColumn<qint64>("topK");
    QTest::addColumn<double>("factor");
    QTest::addColumn<qint64>("expected");
    // ceil(K * C * S / E)
    QTest::newRow("exact: 2*1.2*10/4 = 6") << 10LL << 4LL << 2LL << 1.2 << 6LL;
    QTest::newRow("2*1.25*100/8 = 31.25 -> 32") << 100LL << 8LL << 2LL << 1.25 << 32LL;
    QTest::newRow("1*1.1*5/2 = 2.75 -> 3") << 5LL << 2LL << 1LL << 1.1 << 3LL;
    // 7 exactly, though 2 * 0.56 * 25 / 4 is 7.000000000000001 in doubles
    QTest::newRow("2*0.56*25/4 = 7") << 25LL << 4LL << 2LL << 0.56 << 7LL;
    QTest::newRow("C = 0: never drop, S slots") << 7LL << 2LL << 1LL << 0.0 << 7LL;
    QTest::newRow("C < 0: never drop") << 7LL << 2LL << 1LL << -1.0 << 7LL;
    QTest::newRow("at most S: 2*2*4/2 = 8 -> 4") << 4LL << 2LL << 2LL << 2.0 << 4LL;
    QTest::newRow("at least 1: 1*0.1*3/8 -> 1") << 3LL << 8LL << 1LL << 0.1 << 1LL;
}

void TestRouting::capacity()
{
    QFETCH(qint64, tokens);
    QFETCH(qint64, experts);
    QFETCH(qint64, topK);
    QFETCH(double, factor);
    QFETCH(qint64, expected);
    QCOMPARE(expertCapacity(tokens, experts, topK, factor), expected);
}

void TestRouting::overflowDropsTheLatestTokens()
{
    // Five tokens all prefer expert 1; capacity ceil(1 * 1.1 * 5 / 2) = 3, so
    // tokens 0, 1, 2 take its slots 0, 1, 2 and tokens 3 and 4 are dropped.
    const Routing r = routeLogits({{0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 2}}, 1, 1.1);
    QCOMPARE(r.capacity, 3);
    QVERIFY(torch::equal(r.expert.squeeze(1), longs({1, 1, 1, 1, 1})));
    QVERIFY(torch::equal(r.slot.squeeze(1), longs({0, 1, 2, 3, 4})));
    QVERIFY(torch::equal(r.kept.squeeze(1), bools({1, 1, 1, 0, 0})));
}

void TestRouting::firstChoicesAreServedBeforeSecondChoices()
{
    // Tokens 0 and 1 prefer expert 0 then 1; token 2 prefers expert 1 then 0.
    // Capacity ceil(2 * 0.6 * 3 / 2) = ceil(1.8) = 2. First choices are placed
    // first: expert 0 gets t0, t1; expert 1 gets t2. Then second choices in
    // token order: t0 -> expert 1 slot 1 (kept), t1 -> expert 1 slot 2 (dropped),
    // t2 -> expert 0 slot 2 (dropped). Token 1's second choice loses to token
    // 2's first choice although token 1 comes earlier.
    const Routing r = routeLogits({{2, 0}, {2, 0}, {0, 2}}, 2, 0.6);
    QCOMPARE(r.capacity, 2);
    QVERIFY(torch::equal(r.expert, longs({0, 1, 0, 1, 1, 0}).view({3, 2})));
    QVERIFY(torch::equal(r.slot, longs({0, 1, 1, 2, 0, 2}).view({3, 2})));
    QVERIFY(torch::equal(r.kept, bools({1, 1, 1, 0, 1, 0}).view({3, 2})));
}

void TestRouting::batchPriorityServesConfidentTokensFirst()
{
    // All four prefer expert 0, with top-1 probabilities sigmoid(1), sigmoid(3),
    // sigmoid(2), sigmoid(0.5): confidence order t1, t2, t0, t3. Capacity
    // ceil(1 * 0.9 * 4 / 2) = 2.
    const std::vector<std::vector<float>> logits = {{1, 0}, {3, 0}, {2, 0}, {0.5f, 0}};
    const Routing byPosition = routeLogits(logits, 1, 0.9, RoutingPriority::Position);
    QVERIFY(torch::equal(byPosition.kept.squeeze(1), bools({1, 1, 0, 0})));
    const Routing byConfidence = routeLogits(logits, 1, 0.9, RoutingPriority::Batch);
    QVERIFY(torch::equal(byConfidence.slot.squeeze(1), longs({2, 0, 1, 3})));
    QVERIFY(torch::equal(byConfidence.kept.squeeze(1), bools({0, 1, 1, 0})));
}

void TestRouting::causalRoutingServesTokenByToken()
{
    // The tokens of firstChoicesAreServedBeforeSecondChoices, capacity 2, served
    // token by token: t0 takes e0 slot 0 and e1 slot 0; t1 takes e0 slot 1 and
    // e1 slot 1; t2 finds both experts full. No later token displaces t1.
    RoutingOptions options;
    options.topK = 2;
    options.capacityFactor = 0.6;
    options.causal = true;
    const Routing r = route(torch::tensor({{2.0f, 0.0f}, {2.0f, 0.0f}, {0.0f, 2.0f}}), torch::eye(2), options);
    QVERIFY(torch::equal(r.slot, longs({0, 0, 1, 1, 2, 2}).view({3, 2})));
    QVERIFY(torch::equal(r.kept, bools({1, 1, 1, 1, 0, 0}).view({3, 2})));
}

void TestRouting::noTokensGiveZeroBalanceLoss()
{
    const torch::Tensor weight = torch::randn({4, 8}).requires_grad_(true);
    const Routing r = route(torch::zeros({0, 8}), weight, RoutingOptions{});
    QCOMPARE(r.balanceLoss.item<double>(), 0.0);
    QCOMPARE(r.capacity, 1);
    r.balanceLoss.backward();  // still part of the graph
    QCOMPARE(weight.grad().abs().sum().item<double>(), 0.0);
}

void TestRouting::noCapacityFactorNeverDrops()
{
    const Routing r = routeLogits({{0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 2}}, 2, 0.0);
    QCOMPARE(r.capacity, 5);
    QVERIFY(r.kept.all().item<bool>());
}

void TestRouting::combineWeightsAreRouterProbabilities()
{
    // logits (ln 6, ln 3, 0): probabilities 6/10, 3/10, 1/10. Top-2 gates are
    // 0.6 and 0.3, not renormalised; renormalised they are 2/3 and 1/3.
    const std::vector<std::vector<float>> logits = {{std::log(6.0f), std::log(3.0f), 0.0f}};
    const Routing plain = routeLogits(logits, 2, 0.0);
    QVERIFY(torch::allclose(plain.gates, torch::tensor({{0.6f, 0.3f}}), 1e-6, 1e-6));
    RoutingOptions options;
    options.topK = 2;
    options.capacityFactor = 0.0;
    options.renormalize = true;
    const Routing renormalised = route(torch::tensor({{std::log(6.0f), std::log(3.0f), 0.0f}}), torch::eye(3), options);
    QVERIFY(torch::allclose(renormalised.gates, torch::tensor({{2.0f / 3.0f, 1.0f / 3.0f}}), 1e-6, 1e-6));
}

void TestRouting::droppedTokenGetsZeroAndKeptTokensTheirExperts()
{
    // Tokens prefer (expert 0, then 1), except t2 (1, then 0). Identity router.
    torch::manual_seed(3);
    const std::int64_t D = 2;
    FeedForward experts(2, D, 5, Activation::Relu);
    const torch::Tensor x = torch::tensor({{2.0f, 0.0f}, {2.0f, 0.0f}, {0.0f, 2.0f}, {2.0f, 0.1f}});
    RoutingOptions options;
    options.topK = 2;
    options.capacityFactor = 0.6;  // ceil(2 * 0.6 * 4 / 2) = ceil(2.4) = 3 slots per expert
    const Routing r = route(x, torch::eye(2), options);
    // First choices: expert 0 gets t0, t1, t3 (slots 0-2), expert 1 gets t2 (0).
    // Second choices: t0, t1 -> expert 1 slots 1, 2 (kept); t2 -> expert 0 slot 3
    // and t3 -> expert 1 slot 3 (dropped).
    QCOMPARE(r.capacity, 3);
    QVERIFY(torch::equal(r.kept, bools({1, 1, 1, 1, 1, 0, 1, 0}).view({4, 2})));

    // Capacity 2 instead: t3's first choice (expert 0, slot 2) and second choice
    // (expert 1, slot 3) are both dropped, so its MoE output must be exactly zero
    // and the residual carries it. t1 keeps only expert 0, t2 only expert 1.
    options.capacityFactor = 0.5;  // ceil(2 * 0.5 * 4 / 2) = 2
    const Routing tight = route(x, torch::eye(2), options);
    QCOMPARE(tight.capacity, 2);
    QVERIFY(!tight.kept[3].any().item<bool>());
    const torch::Tensor y = dispatchCombine(x, tight, *experts);
    QVERIFY(torch::equal(y[3], torch::zeros({D})));

    // Kept tokens get sum over kept choices of gate * expert(x), computed here by hand.
    auto expert = [&](std::int64_t e, const torch::Tensor& v) {
        const torch::Tensor hidden = torch::relu(torch::mv(experts->wIn[e], v) + experts->bIn[e]);
        return torch::mv(experts->wOut[e], hidden) + experts->bOut[e];
    };
    for (std::int64_t s = 0; s < 3; ++s) {
        torch::Tensor expected = torch::zeros({D});
        for (std::int64_t c = 0; c < 2; ++c)
            if (tight.kept[s][c].item<bool>())
                expected += tight.gates[s][c] * expert(tight.expert[s][c].item<std::int64_t>(), x[s]);
        QVERIFY2(torch::allclose(y[s], expected, 1e-5, 1e-6), qPrintable(QString("token %1").arg(s)));
    }
}

void TestRouting::balanceLoss_data()
{
    QTest::addColumn<QVector<QVector<float>>>("logits");
    QTest::addColumn<double>("expected");
    // E * sum_e m_e * P_e
    const float ln3 = std::log(3.0f), ln7 = std::log(7.0f);
    // Every token: probabilities (3/4, 1/4), top-1 expert 0. m = (1, 0), P = (3/4, 1/4): 2 * 3/4.
    QTest::newRow("skewed, E=2") << QVector<QVector<float>>{{ln3, 0}, {ln3, 0}, {ln3, 0}} << 1.5;
    // Half the tokens (7,1,1,1)/10, half (1,7,1,1)/10. m = (1/2, 1/2, 0, 0),
    // P = (0.4, 0.4, 0.1, 0.1): 4 * (0.2 + 0.2) = 1.6.
    QTest::newRow("two busy experts of four")
        << QVector<QVector<float>>{{ln7, 0, 0, 0}, {0, ln7, 0, 0}, {ln7, 0, 0, 0}, {0, ln7, 0, 0}} << 1.6;
    // Balanced: m = (1/2, 1/2), P = (1/2, 1/2): exactly 1, the minimum.
    QTest::newRow("balanced") << QVector<QVector<float>>{{ln3, 0}, {0, ln3}} << 1.0;
}

void TestRouting::balanceLoss()
{
    QFETCH(QVector<QVector<float>>, logits);
    QFETCH(double, expected);
    std::vector<std::vector<float>> rows;
    for (const auto& row : logits)
        rows.emplace_back(row.begin(), row.end());
    const Routing r = routeLogits(rows, 1, 0.0);
    QVERIFY2(std::abs(r.balanceLoss.item<double>() - expected) < 1e-6,
             qPrintable(QString("got %1, expected %2").arg(r.balanceLoss.item<double>()).arg(expected)));
}

void TestRouting::balanceLossCanCountEveryChoice()
{
    // WideNet Eq. 4 as printed: h is the K-hot choice vector, so m counts every choice and sums to K.
    // E = 3, K = 2: token 0 has probabilities (4, 2, 1) / 7 and chooses experts 0, 1; token 1 has
    // (1, 2, 4) / 7 and chooses 2, 1. P = (5, 4, 5) / 14.
    const float ln2 = std::log(2.0f), ln4 = std::log(4.0f), ln3 = std::log(3.0f);
    const std::vector<std::vector<float>> two = {{ln4, ln2, 0}, {0, ln2, ln4}};
    // Every choice: m = (1/2, 1, 1/2), balance = 3 * (5/28 + 4/14 + 5/28) = 27/14.
    const Routing every = routeLogits(two, 2, 0.0, RoutingPriority::Position, true);
    QVERIFY2(std::abs(every.balanceLoss.item<double>() - 27.0 / 14.0) < 1e-6,
             qPrintable(QString::number(every.balanceLoss.item<double>())));
    // Top-1 only: m = (1/2, 0, 1/2), balance = 3 * (5/28 + 5/28) = 15/14.
    const Routing top1 = routeLogits(two, 2, 0.0);
    QVERIFY2(std::abs(top1.balanceLoss.item<double>() - 15.0 / 14.0) < 1e-6,
             qPrintable(QString::number(top1.balanceLoss.item<double>())));
    // With K = E every token reaches every expert: m = (1, 1) and the loss is E * sum P = 2 whatever the
    // probabilities (top-1 counting gives 2 * 3/4 = 1.5 for these).
    const std::vector<std::vector<float>> skewed = {{ln3, 0}, {ln3, 0}, {ln3, 0}};
    QVERIFY(std::abs(routeLogits(skewed, 2, 0.0, RoutingPriority::Position, true).balanceLoss.item<double>() - 2.0)
            < 1e-6);
    QVERIFY(std::abs(routeLogits(skewed, 2, 0.0).balanceLoss.item<double>() - 1.5) < 1e-6);
    // The configuration key reaches the routing options.
    ModelConfig config;
    config.experts = 3;
    config.balanceCount = BalanceCount::TopK;
    QVERIFY(RoutingOptions::fromConfig(config, true).balanceEveryChoice);
    config.balanceCount = BalanceCount::Top1;
    QVERIFY(!RoutingOptions::fromConfig(config, true).balanceEveryChoice);
}

void TestRouting::balanceLossGradientReachesTheRouter()
{
    torch::manual_seed(5);
    const torch::Tensor x = torch::randn({16, 8});
    const torch::Tensor weight = torch::randn({4, 8}).requires_grad_(true);
    RoutingOptions options;
    options.topK = 2;
    const Routing r = route(x, weight, options);
    QVERIFY(r.balanceLoss.requires_grad());
    r.balanceLoss.backward();
    QVERIFY(weight.grad().defined());
    QVERIFY(weight.grad().norm().item<double>() > 1e-6);

    // The gradient is that of E * sum_e m_e * mean_s softmax(x W^T)_{s,e} with m fixed.
    const torch::Tensor w2 = weight.detach().clone().requires_grad_(true);
    const torch::Tensor m = torch::bincount(r.expert.select(1, 0), {}, 4).to(torch::kFloat32) / 16.0;
    (4.0 * (m * torch::softmax(torch::matmul(x, w2.t()), -1).mean(0)).sum()).backward();
    QVERIFY(torch::allclose(weight.grad(), w2.grad(), 1e-5, 1e-7));
}

void TestRouting::noiseOnlyWhileTraining()
{
    torch::manual_seed(11);
    const torch::Tensor x = torch::randn({32, 8});
    const torch::Tensor weight = torch::randn({4, 8});
    RoutingOptions options;
    options.noiseStd = 0.5;
    options.training = false;
    const torch::Tensor clean = torch::softmax(torch::matmul(x, weight.t()), -1);
    QVERIFY(torch::allclose(route(x, weight, options).probs, clean, 1e-6, 1e-7));
    options.training = true;
    QVERIFY(!torch::allclose(route(x, weight, options).probs, clean, 1e-3, 1e-3));
}

void TestRouting::routingGroupsReuseTheFirstBlocksRouting()
{
    // Four blocks in two groups: blocks 0 and 2 route, 1 and 3 reuse.
    std::vector<ConfigIssue> issues;
    const ModelConfig c = ModelConfig::fromJson(
        nlohmann::json::parse(R"({"vocab_size": 20, "max_len": 8, "d_model": 16, "heads": 2, "layers": 4,
            "experts": 4, "top_k": 2, "routing_groups": 2, "dropout": 0.0, "share_attention": true,
            "share_ffn": true, "pooling": "mean"})"),
        issues);
    QVERIFY(issues.empty());
    torch::manual_seed(2);
    WideTransformer model(c);
    model->eval();
    ForwardTrace trace;
    const torch::Tensor ids = torch::randint(20, {2, 8}, torch::kLong);
    const ModelOutput out = model->inspect(ids, {}, trace);
    QCOMPARE(trace.blocks.size(), std::size_t{4});
    QCOMPARE(trace.blocks[0].routed, true);
    QCOMPARE(trace.blocks[1].routed, false);
    QCOMPARE(trace.blocks[2].routed, true);
    QCOMPARE(trace.blocks[3].routed, false);
    QVERIFY(torch::equal(trace.blocks[1].expert, trace.blocks[0].expert));
    QVERIFY(torch::equal(trace.blocks[3].expert, trace.blocks[2].expert));

    // The model's balance loss is the sum over its two routing calls, each
    // E * sum_e m_e * P_e from the recorded probabilities and top-1 choices.
    double expected = 0.0;
    for (const int block : {0, 2}) {
        const auto& b = trace.blocks[static_cast<std::size_t>(block)];
        const torch::Tensor m = torch::bincount(b.expert.select(1, 0), {}, 4).to(torch::kFloat32) / b.expert.size(0);
        expected += 4.0 * (m * b.probs.mean(0)).sum().item<double>();
    }
    QVERIFY(std::abs(out.balanceLoss.item<double>() - expected) < 1e-5);
}

void TestRouting::languageModelsAreCausalSafeInEvaluation()
{
    // A language model's evaluation drops nothing by default, so the logits of
    // the first 6 tokens are the same alone and followed by 10 more. With a
    // small capacity asked for explicitly, the 10 later tokens raise the
    // capacity and change what the first 6 get.
    const auto lm = [](const char* extra) {
        std::vector<ConfigIssue> issues;
        const ModelConfig c = ModelConfig::fromJson(
            nlohmann::json::parse(std::string(R"({"vocab_size": 20, "max_len": 16, "d_model": 16, "heads": 2,
                "layers": 2, "experts": 4, "top_k": 2, "dropout": 0.0, "head": "language_model")") + extra + "}"),
            issues);
        return c;
    };
    const ModelConfig safe = lm("");
    QCOMPARE(safe.evalCapacityFactor, 0.0);
    QCOMPARE(lm(R"(, "head": "classification")").evalCapacityFactor, 2.0);
    const ModelConfig dropping = lm(R"(, "eval_capacity_factor": 0.5)");
    QCOMPARE(dropping.evalCapacityFactor, 0.5);

    torch::manual_seed(4);
    const torch::Tensor ids = torch::randint(20, {1, 16}, torch::kLong);
    const auto prefixChange = [&](const ModelConfig& c) {
        torch::manual_seed(5);
        WideTransformer model(c);
        model->eval();
        torch::NoGradGuard noGrad;
        const torch::Tensor whole = model->forward(ids).logits.slice(1, 0, 6);
        const torch::Tensor prefix = model->forward(ids.slice(1, 0, 6)).logits;
        return (whole - prefix).abs().max().item<double>();
    };
    QVERIFY2(prefixChange(safe) < 1e-5, std::to_string(prefixChange(safe)).c_str());
    QVERIFY2(prefixChange(dropping) > 1e-4, std::to_string(prefixChange(dropping)).c_str());
}

void TestRouting::zLossOnlyWhenTrainingAsksForIt()
{
    // The z-loss is computed only where the training loss takes it: in training,
    // with router_z_loss_weight > 0. Then the model's is the sum over its two
    // routing calls (blocks 0 and 2) of the mean over tokens of
    // (log sum_e exp(logit_e))^2, worked out here from the recorded logits.
    const auto model = [](double weight) {
        std::vector<ConfigIssue> issues;
        const ModelConfig c = ModelConfig::fromJson(
            nlohmann::json::parse(R"({"vocab_size": 20, "max_len": 8, "d_model": 16, "heads": 2, "layers": 4,
                "experts": 4, "top_k": 2, "routing_groups": 2, "dropout": 0.0, "pooling": "mean",
                "router_z_loss_weight": )" + std::to_string(weight) + "}"),
            issues);
        return c;
    };
    QCOMPARE(RoutingOptions::fromConfig(model(0.0), true).zLoss, false);
    QCOMPARE(RoutingOptions::fromConfig(model(0.01), false).zLoss, false);
    QCOMPARE(RoutingOptions::fromConfig(model(0.01), true).zLoss, true);

    const torch::Tensor ids = torch::randint(20, {2, 8}, torch::kLong);
    for (const double weight : {0.0, 0.01}) {
        torch::manual_seed(3);
        WideTransformer m(model(weight));
        m->train();
        ForwardTrace trace;
        const ModelOutput out = m->inspect(ids, {}, trace);
        if (weight == 0.0) {
            QCOMPARE(out.routerZLoss.item<double>(), 0.0);
            continue;
        }
        double expected = 0.0;
        for (const int block : {0, 2}) {
            const torch::Tensor logits = trace.blocks[static_cast<std::size_t>(block)].logits.to(torch::kFloat64);
            const torch::Tensor top = std::get<0>(logits.max(-1, true));
            const torch::Tensor lse = (logits - top).exp().sum(-1).log() + top.squeeze(-1);
            expected += lse.square().mean().item<double>();
        }
        QVERIFY(expected > 0.1);
        QVERIFY2(std::abs(out.routerZLoss.item<double>() - expected) < 1e-5,
                 qPrintable(QString("%1 against %2").arg(out.routerZLoss.item<double>()).arg(expected)));
    }
}

void TestRouting::ranksLossesAddUpToTheWholeBatch()
{
    // Two experts, top-1. Rank A routes tokens with logits (2, 0) and (0, 1), rank
    // B one token (1, 0). Over the whole batch, 2 tokens choose expert 0 and 1
    // expert 1, of S = 3: balance = E / S^2 * (2 * sum_s p_s0 + 1 * sum_s p_s1),
    // and the z-loss the mean of logsumexp^2 over the 3 tokens. Each rank's part
    // takes the global counts (its "other rank" adds them here) and its own
    // probabilities; the parts and their gradients add up to the whole.
    const torch::Tensor logitsA = torch::tensor({{2.0f, 0.0f}, {0.0f, 1.0f}});
    const torch::Tensor logitsB = torch::tensor({{1.0f, 0.0f}});
    const torch::Tensor countsA = torch::tensor({1.0, 1.0, 2.0}, torch::kFloat64);  // per expert, then tokens
    const torch::Tensor countsB = torch::tensor({1.0, 0.0, 1.0}, torch::kFloat64);
    auto part = [](const torch::Tensor& logits, const torch::Tensor& others, torch::Tensor& weight) {
        RoutingOptions options;
        options.topK = 1;
        options.capacityFactor = 0.0;
        options.training = true;
        options.zLoss = true;
        options.sumOverRanks = [others](torch::Tensor& counts) { counts += others; };
        weight = torch::eye(2).requires_grad_(true);
        std::map<std::string, std::int64_t> waits;
        Routing r;
        {
            // The global count divides on the device: nothing is read back to branch on.
            const OperatorCounter counter;
            r = route(logits, weight, options);
            waits = counter.tally().synchronisingInStep();
        }
        if (!waits.empty())
            throw std::logic_error("routing read a value back: " + waits.begin()->first);
        (r.balanceLoss + r.zLoss).backward();
        return std::pair{r.balanceLoss.item<double>(), r.zLoss.item<double>()};
    };
    torch::Tensor weightA, weightB;
    const auto [balanceA, zA] = part(logitsA, countsB, weightA);
    const auto [balanceB, zB] = part(logitsB, countsA, weightB);

    const torch::Tensor all = torch::cat({logitsA, logitsB});
    const torch::Tensor p = torch::softmax(all, -1);
    const double balance = 2.0 / 9.0 * (2.0 * p.select(1, 0).sum().item<double>() + p.select(1, 1).sum().item<double>());
    const double z = torch::logsumexp(all, -1).square().mean().item<double>();
    QVERIFY(std::abs(balanceA + balanceB - balance) < 1e-6);
    QVERIFY(std::abs(zA + zB - z) < 1e-6);
    // The whole batch's gradient, from one process's routing of all three tokens.
    RoutingOptions whole;
    whole.topK = 1;
    whole.capacityFactor = 0.0;
    whole.training = true;
    whole.zLoss = true;
    const torch::Tensor weight = torch::eye(2).requires_grad_(true);
    const Routing r = route(all, weight, whole);
    QVERIFY(std::abs(r.balanceLoss.item<double>() - balance) < 1e-6);
    (r.balanceLoss + r.zLoss).backward();
    QVERIFY(torch::allclose(weightA.grad() + weightB.grad(), weight.grad(), 1e-5, 1e-6));
    // No token on any rank: both losses are 0, and backward still runs through them.
    torch::Tensor weightNone;
    const auto [balanceNone, zNone] = part(torch::zeros({0, 2}), torch::zeros({3}, torch::kFloat64), weightNone);
    QCOMPARE(balanceNone, 0.0);
    QCOMPARE(zNone, 0.0);
    QVERIFY(weightNone.grad().defined() && weightNone.grad().abs().sum().item<double>() == 0.0);
}

QTEST_GUILESS_MAIN(TestRouting)
#include "tst_routing.moc"
