// Tests of model/WideTransformer: sharing, masking, causality, the inspection
// path, path weights, input errors; the numbers themselves are checked against
// the Python reference in tst_reference.
#include "TestSupport.h"
#include "benchmark/Benchmark.h"
#include "model/Attention.h"
#include "model/BlockStack.h"
#include "model/ParameterCount.h"
#include "model/WideTransformer.h"
#include "runtime/Autocast.h"
#include "runtime/Runtime.h"

#include <ATen/autocast_mode.h>

#include <QtTest>

#include <cmath>
#include <set>
#include <thread>

using namespace widelab;

namespace {

ModelConfig parse(const std::string& overrides)
{
    return test::modelConfig(R"({"vocab_size": 17, "max_len": 10, "d_model": 16, "heads": 2, "ffn_dim": 24,
                                 "layers": 2, "dropout": 0.0, "num_classes": 3})",
                             overrides);
}

}  // namespace

class TestWideTransformer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void outputShapes_data();
    void outputShapes();
    void sharedModulesExistOnce();
    void paddingDoesNotChangeRealTokens_data();
    void paddingDoesNotChangeRealTokens();
    void languageModelIsCausal();
    void languageModelWithExpertsIsCausal();
    void mixedPrecisionKeepsTheRouterInFp32();
    void batchWithNoRealTokenStaysFinite();
    void languageModelLossIgnoresPadding();
    void trainingLossAddsTheWeightedAuxiliaryLosses();
    void inspectionMatchesForward();
    void aClassifiersLastBlockComputesItsClsRowAlone_data();
    void aClassifiersLastBlockComputesItsClsRowAlone();
    void onlyAModelReadAtItsClsTokenSkipsRows();
    void aBenchmarkCountsTheRowsItComputes();
    void dropoutOnlyWhileTraining();
    void pathWeightsStartAsInThePaper_data();
    void pathWeightsStartAsInThePaper();
    void fusedPathsEqualSeparateAttentions();
    void headBlocksEqualAllHeadsAtOnce();
    void everyParameterGetsAGradient_data();
    void everyParameterGetsAGradient();
    void individualLayerNormsDiffer();
    void badInputIsAnErrorNotACrash();
    void imageInputContract();
    void threadCountIsExplicit();
};

void TestWideTransformer::outputShapes_data()
{
    QTest::addColumn<QString>("config");
    QTest::addColumn<QVector<qint64>>("shape");
    QTest::newRow("classification, cls") << R"({})" << QVector<qint64>{4, 3};
    QTest::newRow("classification, mean, MoE") << R"({"pooling": "mean", "experts": 4})" << QVector<qint64>{4, 3};
    QTest::newRow("language model") << R"({"head": "language_model"})" << QVector<qint64>{4, 7, 17};
    QTest::newRow("language model, 3 paths")
        << R"({"head": "language_model", "paths": 3, "path_norm": true, "path_extra_features": true})"
        << QVector<qint64>{4, 7, 17};
}

void TestWideTransformer::outputShapes()
{
    QFETCH(QString, config);
    QFETCH(QVector<qint64>, shape);
    WideTransformer model(parse(config.toStdString()));
    const ModelOutput out = model->forward(torch::randint(17, {4, 7}, torch::kLong));
    QCOMPARE(out.logits.sizes().vec(), std::vector<std::int64_t>(shape.begin(), shape.end()));
    QCOMPARE(out.balanceLoss.dim(), 0);
    QVERIFY(torch::isfinite(out.logits).all().item<bool>());
}

void TestWideTransformer::sharedModulesExistOnce()
{
    const WideTransformer widenet(parse(R"({"layers": 4, "experts": 4, "share_attention": true, "share_ffn": true})"));
    const WideTransformer vitMoe(parse(R"({"layers": 4, "experts": 4, "share_router": false})"));
    auto names = [](const WideTransformer& m, const std::string& prefix) {
        std::set<std::string> modules;
        for (const auto& item : m->named_parameters())
            if (item.key().rfind(prefix, 0) == 0)
                modules.insert(item.key().substr(0, item.key().find('.', prefix.size())));
        return modules.size();
    };
    QCOMPARE(names(widenet, "attention."), std::size_t{1});
    QCOMPARE(names(widenet, "ffn."), std::size_t{1});
    QCOMPARE(names(widenet, "router."), std::size_t{1});
    QCOMPARE(names(widenet, "ln_att."), std::size_t{4});
    QCOMPARE(names(vitMoe, "attention."), std::size_t{4});
    QCOMPARE(names(vitMoe, "ffn."), std::size_t{4});
    QCOMPARE(names(vitMoe, "router."), std::size_t{4});
}

void TestWideTransformer::paddingDoesNotChangeRealTokens_data()
{
    QTest::addColumn<QString>("config");
    QTest::newRow("cls pooling") << R"({})";
    QTest::newRow("mean pooling") << R"({"pooling": "mean"})";
    // No drops in evaluation, so the padded batch routes its real tokens alike.
    QTest::newRow("mean pooling, shared MoE")
        << R"({"pooling": "mean", "experts": 4, "eval_capacity_factor": 0, "share_ffn": true})";
    QTest::newRow("multi-path") << R"({"paths": 2, "path_norm": true, "learnable_path_weights": true})";
}

void TestWideTransformer::paddingDoesNotChangeRealTokens()
{
    QFETCH(QString, config);
    torch::manual_seed(1);
    WideTransformer model(parse(config.toStdString()));
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor real = torch::randint(17, {1, 4}, torch::kLong);
    const torch::Tensor padded = torch::cat({real, torch::randint(17, {1, 5}, torch::kLong)}, 1);
    const torch::Tensor mask = torch::arange(9).unsqueeze(0) < 4;
    const torch::Tensor alone = model->forward(real).logits;
    const torch::Tensor withPadding = model->forward(padded, mask).logits;
    QVERIFY2(torch::allclose(alone, withPadding, 1e-5, 1e-6),
             qPrintable(QString("max difference %1").arg((alone - withPadding).abs().max().item<double>())));
}

void TestWideTransformer::languageModelIsCausal()
{
    torch::manual_seed(2);
    WideTransformer model(parse(R"({"head": "language_model"})"));
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = torch::randint(17, {1, 8}, torch::kLong);
    torch::Tensor changed = ids.clone();
    changed[0][5] = (ids[0][5].item<std::int64_t>() + 1) % 17;
    const torch::Tensor a = model->forward(ids).logits, b = model->forward(changed).logits;
    QVERIFY(torch::allclose(a.narrow(1, 0, 5), b.narrow(1, 0, 5), 1e-6, 1e-7));  // positions before 5: unchanged
    QVERIFY(!torch::allclose(a.narrow(1, 5, 3), b.narrow(1, 5, 3), 1e-4, 1e-4));  // from 5 on: changed
}

void TestWideTransformer::languageModelWithExpertsIsCausal()
{
    // Tight capacity, so that slots are contested: changing the last token of the
    // second sequence must leave every earlier logit alone. Alone up to the
    // products' rounding: an expert multiplies as many rows as it was sent, the
    // last token can change that count, and a BLAS may sum in another order for
    // another count (OpenBLAS's SSE3 kernels did: 3e-7 with logits up to 2.7). An
    // earlier token that lost or won a slot moves its logits by far more.
    torch::manual_seed(12);
    WideTransformer model(parse(R"({"head": "language_model", "layers": 1, "experts": 4, "top_k": 2,
                                    "capacity_factor": 0.5, "router_noise_std": 0})"));
    model->train();  // training capacity
    torch::NoGradGuard noGrad;
    for (int trial = 0; trial < 10; ++trial) {
        const torch::Tensor ids = torch::randint(17, {2, 8}, torch::kLong);
        torch::Tensor changed = ids.clone();
        changed[1][7] = (ids[1][7].item<std::int64_t>() + 1 + trial) % 17;
        const torch::Tensor a = model->forward(ids).logits.reshape({16, 17});
        const torch::Tensor b = model->forward(changed).logits.reshape({16, 17});
        const double moved = (a.narrow(0, 0, 15) - b.narrow(0, 0, 15)).abs().max().item<double>();
        QVERIFY2(torch::allclose(a.narrow(0, 0, 15), b.narrow(0, 0, 15), 1e-5, 1e-5),
                 qPrintable(QString("trial %1: an earlier logit moved by %2, logits up to %3")
                                .arg(trial)
                                .arg(moved)
                                .arg(a.abs().max().item<double>())));
    }
}

void TestWideTransformer::mixedPrecisionKeepsTheRouterInFp32()
{
    torch::manual_seed(13);
    WideTransformer model(parse(R"({"experts": 4, "pooling": "mean", "share_ffn": true})"));
    model->eval();
    const torch::Tensor ids = torch::randint(17, {2, 6}, torch::kLong);
    const torch::Tensor mask = torch::arange(6).unsqueeze(0) < torch::tensor({6, 4}).unsqueeze(1);
    ForwardTrace trace;
    ModelOutput out;
    try {
        const AutocastScope bf16(torch::kCPU, torch::kBFloat16);
        out = model->inspect(ids, mask, trace);
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }
    QVERIFY(torch::isfinite(out.logits).all().item<bool>());
    QCOMPARE(trace.blocks[0].probs.scalar_type(), torch::kFloat32);
    QCOMPARE(trace.blocks[0].gates.scalar_type(), torch::kFloat32);
}

void TestWideTransformer::batchWithNoRealTokenStaysFinite()
{
    WideTransformer model(parse(R"({"experts": 4, "pooling": "mean"})"));
    const ModelOutput out = model->forward(torch::randint(17, {2, 5}, torch::kLong), torch::zeros({2, 5}, torch::kBool));
    QVERIFY(torch::isfinite(out.logits).all().item<bool>());
    QCOMPARE(out.balanceLoss.item<double>(), 0.0);
}

void TestWideTransformer::languageModelLossIgnoresPadding()
{
    const ModelConfig c = parse(R"({"head": "language_model"})");
    torch::manual_seed(3);
    const torch::Tensor logits = torch::randn({2, 5, 17});
    const torch::Tensor mask = torch::tensor({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}).view({2, 5}).to(torch::kBool);
    torch::Tensor targets = torch::randint(17, {2, 5}, torch::kLong);
    const double before = taskLoss(c, logits, targets, mask).item<double>();
    targets[0][4] = (targets[0][4].item<std::int64_t>() + 3) % 17;
    QCOMPARE(taskLoss(c, logits, targets, mask).item<double>(), before);
    // The mean over the 8 real positions, computed directly.
    const torch::Tensor logProbs = torch::log_softmax(logits, -1);
    double sum = 0.0;
    for (int b = 0; b < 2; ++b)
        for (int t = 0; t < 5; ++t)
            if (mask[b][t].item<bool>())
                sum -= logProbs[b][t][targets[b][t].item<std::int64_t>()].item<double>();
    QVERIFY(std::abs(before - sum / 8.0) < 1e-5);
}

void TestWideTransformer::trainingLossAddsTheWeightedAuxiliaryLosses()
{
    // task 1, balance 2, z-loss 3: 1 + 0.5 * 2 + 0.25 * 3; without a z-loss weight, 1 + 0.5 * 2
    // (the z-loss is then left out, whatever the output holds).
    ModelOutput output;
    output.balanceLoss = torch::tensor(2.0);
    output.routerZLoss = torch::tensor(3.0);
    const torch::Tensor task = torch::tensor(1.0);
    const ModelConfig both = test::modelConfig(
        R"({"experts": 4, "balance_loss_weight": 0.5, "router_z_loss_weight": 0.25})");
    QCOMPARE(trainingLoss(both, task, output).item<double>(), 2.75);
    const ModelConfig balanceOnly = test::modelConfig(R"({"experts": 4, "balance_loss_weight": 0.5})");
    QCOMPARE(trainingLoss(balanceOnly, task, output).item<double>(), 2.0);
}

void TestWideTransformer::inspectionMatchesForward()
{
    torch::manual_seed(4);
    WideTransformer model(parse(R"({"layers": 3, "heads": 2, "paths": 2, "path_norm": true})"));
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = torch::randint(17, {2, 6}, torch::kLong);
    const torch::Tensor mask = torch::arange(6).unsqueeze(0) < torch::tensor({6, 3}).unsqueeze(1);
    ForwardTrace trace;
    const ModelOutput inspected = model->inspect(ids, mask, trace);
    // LibTorch 2.x computes forward() with its fused kernel: equal up to rounding.
    QVERIFY(torch::allclose(inspected.logits, model->forward(ids, mask).logits, 1e-4, 1e-5));
    QCOMPARE(trace.blocks.size(), std::size_t{3});
    for (const auto& block : trace.blocks) {
        // [B, paths * heads, T + CLS, T + CLS]; rows are distributions; padded keys get nothing.
        QCOMPARE(block.attention.sizes().vec(), (std::vector<std::int64_t>{2, 4, 7, 7}));
        QVERIFY(torch::allclose(block.attention.sum(-1), torch::ones({2, 4, 7}), 1e-5, 1e-6));
        QCOMPARE(block.attention[1].narrow(-1, 4, 3).abs().max().item<float>(), 0.0f);
    }
}

void TestWideTransformer::aClassifiersLastBlockComputesItsClsRowAlone_data()
{
    QTest::addColumn<QString>("config");
    QTest::newRow("one block") << R"({"layers": 1})";
    QTest::newRow("three blocks, two paths, a pooler")
        << R"({"layers": 3, "paths": 2, "path_norm": true, "learnable_path_weights": true, "pooler": true})";
    QTest::newRow("shared attention and FFN") << R"({"layers": 3, "share_attention": true, "share_ffn": true})";
}

void TestWideTransformer::aClassifiersLastBlockComputesItsClsRowAlone()
{
    // In inference a stack whose reader takes the first row only returns that
    // row alone, [B, 1, D], equal to the first row of every row's pass, with
    // padding; in training it computes every row. The model's logits then equal
    // the inspected pass's, which computes every row for its views.
    QFETCH(QString, config);
    const ModelConfig c = parse(config.toStdString());
    QVERIFY(lastBlockReadsClsRowOnly(c));
    torch::manual_seed(12);
    torch::nn::Module owner;
    BlockStack stack(c, false, owner);
    owner.eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor h = torch::randn({2, 7, 16});
    StackPass every;
    every.valid = torch::arange(7).unsqueeze(0) < torch::tensor({7, 4}).unsqueeze(1);
    every.bias = torch::zeros({2, 1, 1, 7}).masked_fill(every.valid.logical_not().view({2, 1, 1, 7}), -1e9);
    StackPass first = every;
    first.readsFirstRowOnly = true;
    const torch::Tensor all = stack.forward(h, every), one = stack.forward(h, first);
    QCOMPARE(one.sizes().vec(), (std::vector<std::int64_t>{2, 1, 16}));
    const double error = test::relativeError(one, all.narrow(1, 0, 1));
    QVERIFY2(error < 1e-5, qPrintable(QString("the first row differs by %1").arg(error)));
    first.training = true;
    QCOMPARE(stack.forward(h, first).sizes().vec(), (std::vector<std::int64_t>{2, 7, 16}));

    WideTransformer model(c);
    model->eval();
    const torch::Tensor ids = torch::randint(17, {2, 6}, torch::kLong);
    const torch::Tensor mask = torch::arange(6).unsqueeze(0) < torch::tensor({6, 3}).unsqueeze(1);
    ForwardTrace trace;
    const torch::Tensor inspected = model->inspect(ids, mask, trace).logits;
    QVERIFY(torch::allclose(inspected, model->forward(ids, mask).logits, 1e-4, 1e-5));
}

void TestWideTransformer::onlyAModelReadAtItsClsTokenSkipsRows()
{
    // Mean pooling and a language model read every row; experts route a token
    // by the others (capacity); a mechanism whose queries are not apart, alone or
    // beside another, needs them all.
    QVERIFY(lastBlockReadsClsRowOnly(parse("{}")));
    for (const char* reads : {R"({"pooling": "mean"})", R"({"head": "language_model", "vocab_size": 17})",
                              R"({"experts": 4, "eval_capacity_factor": 0})", R"({"attention": "linformer"})",
                              R"({"heads": 4, "attention": "mixed", "attention_mix": ["full", "linformer"]})"})
        QVERIFY2(!lastBlockReadsClsRowOnly(parse(reads)), reads);
}

void TestWideTransformer::aBenchmarkCountsTheRowsItComputes()
{
    // Inference's FLOPs are those of the rows computed: the CLS row alone in the
    // last block by default, every row where asked (a study's latency, as the
    // papers timed), and every row in training.
    const ModelConfig c = parse("{}");
    BenchmarkOptions options;
    options.train = false;
    options.batch = 2;
    options.sequence = 8;
    options.steps = 1;
    options.warmup = 0;
    options.peakSize = 64;
    ModelConfig atLength = c;
    atLength.maxLen = 8;
    const ModelCost cost = modelCost(atLength);
    QVERIFY(cost.inferenceFlopsPerToken < cost.flopsPerToken);
    const BenchmarkResult clsRow = runBenchmark(c, options);
    QVERIFY(clsRow.clsRowOnly);
    QCOMPARE(clsRow.flopsPerStep, cost.inferenceFlopsPerToken * 9 * 2);  // 8 tokens and the CLS token, twice
    options.everyRow = true;
    const BenchmarkResult everyRow = runBenchmark(c, options);
    QVERIFY(!everyRow.clsRowOnly);
    QCOMPARE(everyRow.flopsPerStep, cost.flopsPerToken * 9 * 2);
    options.everyRow = false;
    options.train = true;
    QCOMPARE(runBenchmark(c, options).flopsPerStep, 3 * cost.flopsPerToken * 9 * 2);
}

void TestWideTransformer::dropoutOnlyWhileTraining()
{
    torch::manual_seed(5);
    WideTransformer model(parse(R"({"dropout": 0.3})"));
    const torch::Tensor ids = torch::randint(17, {2, 6}, torch::kLong);
    model->eval();
    QVERIFY(torch::equal(model->forward(ids).logits, model->forward(ids).logits));
    model->train();
    QVERIFY(!torch::allclose(model->forward(ids).logits, model->forward(ids).logits));
}

void TestWideTransformer::pathWeightsStartAsInThePaper_data()
{
    QTest::addColumn<int>("paths");
    QTest::addColumn<bool>("extra");
    QTest::addColumn<bool>("learnable");
    QTest::addColumn<QString>("weight");  // model.path_weight
    QTest::addColumn<float>("alpha");     // worked by hand
    // Section 3.3: alpha = 1/sqrt(2n), n the raw features' count (the extra ones share it).
    QTest::newRow("2 paths, learnable: 1/sqrt(4)") << 2 << false << true << "inverse_sqrt_2n" << 0.5f;
    QTest::newRow("4 paths, extra features, learnable: 1/sqrt(8)")
        << 4 << true << true << "inverse_sqrt_2n" << 0.35355339f;
    // Table 4's fixed weights for its 6-path model: 1/6 ("+ Multi-Path"), 1/sqrt(6) ("+ PathNorm").
    QTest::newRow("6 paths, fixed 1/n") << 6 << false << false << "inverse_n" << 0.16666667f;
    QTest::newRow("6 paths, fixed 1/sqrt(n)") << 6 << false << false << "inverse_sqrt_n" << 0.40824829f;
    QTest::newRow("3 paths, learnable from 1/n") << 3 << false << true << "inverse_n" << 0.33333333f;
}

void TestWideTransformer::pathWeightsStartAsInThePaper()
{
    QFETCH(int, paths);
    QFETCH(bool, extra);
    QFETCH(bool, learnable);
    QFETCH(QString, weight);
    QFETCH(float, alpha);
    const WideTransformer model(parse(nlohmann::json{{"paths", paths}, {"path_norm", true},
                                                     {"path_extra_features", extra},
                                                     {"learnable_path_weights", learnable},
                                                     {"path_weight", weight.toStdString()}}
                                          .dump()));
    // alpha for every feature (n raw, n more with extra features), beta = 1.
    const int features = extra ? 2 * paths : paths;
    const torch::Tensor weights = model->ffnPathWeights(1);
    QCOMPARE(weights.size(0), features + 1);
    QVERIFY(torch::allclose(weights.narrow(0, 0, features), torch::full({features}, alpha)));
    QVERIFY(torch::allclose(model->attentionPathWeights(0).narrow(0, 0, features), torch::full({features}, alpha)));
    QCOMPARE(weights[features].item<float>(), 1.0f);
    bool trained = false;
    for (const auto& item : model->named_parameters())
        trained = trained || item.key().find(".alpha") != std::string::npos;
    QCOMPARE(trained, learnable);
}

void TestWideTransformer::fusedPathsEqualSeparateAttentions()
{
    // Two fused paths must compute exactly what two separate attentions with
    // the corresponding slices of the weights compute.
    torch::manual_seed(6);
    const std::int64_t D = 12, H = 3, A = 4, W = H * A;
    Attention fused(AttentionOptions{D, H, A, 2, 0.0}, ModelConfig{});
    const torch::Tensor x = torch::randn({2, 5, D});
    const torch::Tensor out = fused->forward(x, {});
    for (std::int64_t p = 0; p < 2; ++p) {
        Attention single(AttentionOptions{D, H, A, 1, 0.0}, ModelConfig{});
        torch::NoGradGuard noGrad;
        for (std::int64_t s = 0; s < 3; ++s) {  // q, k, v rows of path p
            single->qkv->weight.narrow(0, s * W, W).copy_(fused->qkv->weight.narrow(0, (s * 2 + p) * W, W));
            single->qkv->bias.narrow(0, s * W, W).copy_(fused->qkv->bias.narrow(0, (s * 2 + p) * W, W));
        }
        single->outWeight[0].copy_(fused->outWeight[p]);
        single->outBias[0].copy_(fused->outBias[p]);
        QVERIFY(torch::allclose(out[p], single->forward(x, {})[0], 1e-5, 1e-6));
    }
}

void TestWideTransformer::headBlocksEqualAllHeadsAtOnce()
{
    // Inference whose scores would pass 2^18 elements takes the heads a block at
    // a time: 7 heads of 1100 x 1100 scores one at a time, and 48 heads of 128 x 128
    // (the wide 1x48 shape) in 3 blocks of 16. The result must equal the same heads
    // at once, as computed with autograd on.
    struct Case {
        std::int64_t T, heads;
    };
    for (const Case c : {Case{1100, 7}, Case{128, 48}}) {
        torch::manual_seed(7);
        const std::int64_t D = 8;
        Attention attention(AttentionOptions{D, c.heads, 4, 1, 0.0}, ModelConfig{});
        const torch::Tensor x = torch::randn({1, c.T, D});
        const torch::Tensor future = torch::ones({c.T, c.T}, torch::kBool).triu(1);
        const torch::Tensor causal = torch::zeros({1, 1, c.T, c.T}).masked_fill(future, -1e9);
        for (const torch::Tensor& bias : {torch::Tensor(), causal}) {
            const torch::Tensor all = attention->forward(x, bias).detach();
            torch::NoGradGuard noGrad;
            QVERIFY(torch::allclose(attention->forward(x, bias), all, 1e-5, 1e-6));
        }
    }
}

void TestWideTransformer::everyParameterGetsAGradient_data()
{
    QTest::addColumn<QString>("config");
    QTest::newRow("WideNet") << R"({"layers": 3, "experts": 4, "capacity_factor": 0, "share_attention": true,
                                   "share_ffn": true, "pooling": "mean"})";
    QTest::newRow("multi-path with features") << R"({"paths": 3, "path_norm": true, "learnable_path_weights": true,
                                                    "path_extra_features": true, "embedding_dim": 8, "pooler": true})";
}

void TestWideTransformer::everyParameterGetsAGradient()
{
    QFETCH(QString, config);
    const ModelConfig c = parse(config.toStdString());
    torch::manual_seed(7);
    WideTransformer model(c);
    model->train();
    const ModelOutput out = model->forward(torch::randint(17, {4, 8}, torch::kLong));
    (taskLoss(c, out.logits, torch::randint(3, {4}, torch::kLong)) + c.balanceLossWeight * out.balanceLoss).backward();
    for (const auto& item : model->named_parameters()) {
        QVERIFY2(item.value().grad().defined(), item.key().c_str());
        QVERIFY2(item.value().grad().abs().sum().item<double>() > 0.0, item.key().c_str());
    }
}

void TestWideTransformer::individualLayerNormsDiffer()
{
    const WideTransformer own(parse(R"({"layers": 3})"));
    const WideTransformer shared(parse(R"({"layers": 3, "share_layernorm": true})"));
    const auto ownNorms = own->blockNorms(), sharedNorms = shared->blockNorms();
    QCOMPARE(ownNorms.size(), std::size_t{3});
    QVERIFY(ownNorms[0].ffnGamma.data_ptr() != ownNorms[2].ffnGamma.data_ptr());
    QVERIFY(sharedNorms[0].ffnGamma.data_ptr() == sharedNorms[2].ffnGamma.data_ptr());
}

void TestWideTransformer::badInputIsAnErrorNotACrash()
{
    WideTransformer model(parse(R"({})"));
    auto message = [&](const torch::Tensor& ids, const torch::Tensor& mask) -> std::string {
        try {
            model->forward(ids, mask);
        } catch (const std::invalid_argument& error) {
            return error.what();
        }
        return "";
    };
    QVERIFY(message(torch::randint(17, {1, 11}, torch::kLong), {}).find("max_len") != std::string::npos);
    QVERIFY(message(torch::randint(17, {11}, torch::kLong), {}).find("[batch, length]") != std::string::npos);
    QVERIFY(message(torch::randint(17, {2, 4}, torch::kLong), torch::ones({2, 5}, torch::kBool)).find("mask")
            != std::string::npos);
    QVERIFY(message(torch::randint(17, {0, 4}, torch::kLong), {}).find("empty batch") != std::string::npos);
    QCOMPARE(message(torch::full({1, 3}, 17, torch::kLong), {}),
             std::string("model input: token id 17 is outside the vocabulary 0..16 (model.vocab_size)"));
    QVERIFY(message(torch::full({1, 3}, -2, torch::kLong), {}).find("token id -2") != std::string::npos);
}

void TestWideTransformer::threadCountIsExplicit()
{
    const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    QCOMPARE(setComputeThreads(0), all);
    QCOMPARE(setComputeThreads(1), 1);
    QCOMPARE(computeThreads(), 1);
    QVERIFY(runtimeSummary().find("1 thread ") != std::string::npos);
}

void TestWideTransformer::imageInputContract()
{
    // 8x8 RGB in 4x4 patches: 4 patches (+ CLS); the parameters are the patch
    // convolution, with no token embedding.
    const ModelConfig c = parse(R"({"input": "image", "image_size": 8, "patch_size": 4, "channels": 3})");
    WideTransformer model(c);
    model->eval();
    const auto parameters = model->named_parameters();
    QVERIFY(parameters.contains("embed.patch.weight"));
    QCOMPARE(parameters["embed.patch.weight"].sizes(), (std::vector<std::int64_t>{16, 3, 4, 4}));
    QCOMPARE(parameters["embed.patch.bias"].sizes(), (std::vector<std::int64_t>{16}));
    QVERIFY(!parameters.contains("embed.token.weight"));
    QCOMPARE(parameters["embed.position.weight"].size(0), std::int64_t{5});
    QCOMPARE(model->forward(torch::randn({2, 3, 8, 8})).logits.sizes(), (std::vector<std::int64_t>{2, 3}));

    auto message = [&](const torch::Tensor& input, const torch::Tensor& mask = {}) -> QString {
        try {
            model->forward(input, mask);
        } catch (const std::invalid_argument& error) {
            return QString::fromStdString(error.what());
        }
        return {};
    };
    QVERIFY(message(torch::randn({2, 3, 8})).contains("[batch, 3, 8, 8]"));
    QVERIFY(message(torch::randint(0, 255, {2, 3, 8, 8}, torch::kLong)).contains("floating-point"));
    QVERIFY(message(torch::randn({2, 1, 8, 8})).contains("model.channels"));
    QVERIFY(message(torch::randn({2, 3, 16, 16})).contains("model.image_size"));
    QVERIFY(message(torch::randn({0, 3, 8, 8})).contains("empty batch"));
    QVERIFY(message(torch::randn({2, 3, 8, 8}), torch::ones({2, 4}, torch::kBool)).contains("no mask"));
    // A token model refuses pixels.
    WideTransformer tokens(parse("{}"));
    try {
        tokens->forward(torch::randn({2, 3, 8, 8}));
        QFAIL("a token model took pixels");
    } catch (const std::invalid_argument& error) {
        QVERIFY2(QString(error.what()).contains("[batch, length]"), error.what());
    }
}

QTEST_GUILESS_MAIN(TestWideTransformer)
#include "tst_widetransformer.moc"
