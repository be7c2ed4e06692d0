// What is particular to the kernel mechanisms (linear, performer) beyond the
// invariants tst_attention checks for every mechanism: the causal form by blocks
// over sequences longer than a block, the Performer's orthogonal random
// features, that they estimate softmax attention, and their redraw schedule.
#include "TestSupport.h"
#include "model/WideTransformer.h"
#include "model/attention/AttentionMechanism.h"

#include <ATen/CPUGeneratorImpl.h>

#include <QtTest>

using namespace widelab;

namespace {

constexpr std::int64_t kB = 2, kG = 2, kA = 4;

ModelConfig kernelConfig(const std::string& attention, const std::string& overrides = "{}")
{
    nlohmann::json model = {{"vocab_size", 11}, {"max_len", 200}, {"d_model", 8}, {"heads", kG},
                            {"head_dim", kA}, {"dropout", 0.0}, {"layers", 2}, {"attention", attention}};
    return test::modelConfig(model.dump(), overrides);
}

MechanismShape shapeOf(const ModelConfig& config, bool causal)
{
    MechanismShape shape;
    shape.heads = kG;
    shape.headDim = kA;
    shape.positions = config.positions();
    shape.causal = causal;
    return shape;
}

// q, k, v: [B, G, T, A]; sequence 1 is real up to `real`.
MixInput inputs(std::int64_t T, std::int64_t real, bool causal, double scale = 1.0)
{
    MixInput in;
    in.q = torch::randn({kB, kG, T, kA}) * scale;
    in.k = torch::randn({kB, kG, T, kA}) * scale;
    in.v = torch::randn({kB, kG, T, kA});
    in.keyValid = torch::arange(T).unsqueeze(0) < torch::tensor({T, real}).unsqueeze(1);
    in.causal = causal;
    return in;
}

// Which keys each query may see: [B, 1, T, T] as 0/1.
torch::Tensor allowedKeys(const MixInput& in)
{
    const std::int64_t B = in.q.size(0), T = in.q.size(2);
    torch::Tensor allowed = in.keyValid.view({B, 1, 1, T}).to(torch::kFloat).expand({B, 1, T, T});
    if (in.causal)
        allowed = allowed * torch::ones({T, T}).tril();
    return allowed;
}

// The row of named buffers called `suffix` in the model (the first one).
torch::Tensor bufferOf(const torch::nn::Module& module, const std::string& suffix)
{
    for (const auto& item : module.named_buffers())
        if (item.key().size() >= suffix.size() && item.key().compare(item.key().size() - suffix.size(), suffix.size(), suffix) == 0)
            return item.value();
    return {};
}

}  // namespace

class TestAttentionKernel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(2); }
    void linearMatchesItsDefinitionOverManyBlocks_data();
    void linearMatchesItsDefinitionOverManyBlocks();
    void performerCausalByBlocksMatchesItsMap();
    void performerFeaturesAreOrthogonalBlocks();
    void performerEstimatesSoftmaxAttention();
    void performerRedrawsOnItsScheduleOnly();
    void performerRedrawResumesExactly();
    void keysAreCheckedWithTheirName();
};

void TestAttentionKernel::linearMatchesItsDefinitionOverManyBlocks_data()
{
    QTest::addColumn<bool>("causal");
    QTest::newRow("bidirectional") << false;
    QTest::newRow("causal") << true;
}

void TestAttentionKernel::linearMatchesItsDefinitionOverManyBlocks()
{
    // T = 150 spans three blocks of the causal form (64 keys each), the last one partial,
    // with padding from 131 on in sequence 1.
    QFETCH(bool, causal);
    const ModelConfig config = kernelConfig("linear");
    torch::manual_seed(11);
    const auto mechanism = findMechanism("linear")->make(shapeOf(config, causal), config);
    torch::NoGradGuard noGrad;
    const MixInput in = inputs(150, 131, causal);
    torch::Tensor map;
    const torch::Tensor context = mechanism->mix(in, &map);

    // Katharopoulos et al., eq. 6 with phi(x) = elu(x) + 1 and the paper's eps = 1e-6, written out.
    const torch::Tensor phiQ = torch::where(in.q > 0, in.q + 1, torch::exp(in.q));
    const torch::Tensor phiK = torch::where(in.k > 0, in.k + 1, torch::exp(in.k));
    const torch::Tensor weights = torch::matmul(phiQ, phiK.transpose(-2, -1)) * allowedKeys(in);
    const torch::Tensor expected = torch::matmul(weights, in.v) / (weights.sum(-1, true) + 1e-6);
    QVERIFY2(test::relativeError(context, expected) < 1e-5,
             ("relative error " + std::to_string(test::relativeError(context, expected))).c_str());
    QVERIFY(test::relativeError(map, weights / (weights.sum(-1, true) + 1e-6)) < 1e-5);
}

void TestAttentionKernel::performerCausalByBlocksMatchesItsMap()
{
    // Over several blocks the prefix sums give what the implied map applies, and no
    // query weighs a later key or a padded one.
    const ModelConfig config = kernelConfig("performer", R"({"performer_features": 6})");
    torch::manual_seed(12);
    const auto mechanism = findMechanism("performer")->make(shapeOf(config, true), config);
    torch::NoGradGuard noGrad;
    const MixInput in = inputs(150, 131, true);
    torch::Tensor map;
    const torch::Tensor context = mechanism->mix(in, &map);
    QVERIFY(test::relativeError(context, torch::matmul(map, in.v)) < 1e-5);
    QCOMPARE((map * (1 - allowedKeys(in))).abs().max().item<float>(), 0.0f);
    QVERIFY((map.sum(-1) - 1).abs().max().item<float>() < 1e-4);  // rows of an estimate normalised by its own sum
}

void TestAttentionKernel::performerFeaturesAreOrthogonalBlocks()
{
    // m = 10 features in A = 4 dimensions: blocks of rows 0-3, 4-7 and 8-9, orthogonal
    // within a block, with Gaussian lengths (not all equal).
    const ModelConfig config = kernelConfig("performer", R"({"performer_features": 10})");
    torch::manual_seed(13);
    const auto mechanism = findMechanism("performer")->make(shapeOf(config, false), config);
    const torch::Tensor w = bufferOf(*mechanism, "features");
    QVERIFY(w.defined());
    QCOMPARE(w.sizes().vec(), (std::vector<std::int64_t>{10, kA}));
    QCOMPARE(qint64(mechanism->parameters().size()), qint64(0));  // a buffer, never trained
    const torch::Tensor lengths = w.norm(2, 1);
    for (const auto& [first, count] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 4}, {4, 4}, {8, 2}}) {
        const torch::Tensor unit = w.narrow(0, first, count) / lengths.narrow(0, first, count).unsqueeze(1);
        const torch::Tensor gram = torch::matmul(unit, unit.transpose(0, 1));
        QVERIFY2(torch::allclose(gram, torch::eye(count), 1e-5, 1e-5), ("block at row " + std::to_string(first)).c_str());
    }
    // Rows of different blocks are independent: not orthogonal in general.
    QVERIFY(torch::matmul(w.narrow(0, 0, 4), w.narrow(0, 4, 4).transpose(0, 1)).abs().max().item<float>() > 1e-3);
    QVERIFY(lengths.max().item<float>() - lengths.min().item<float>() > 1e-3);

    // Averaged over many draws, a row's squared length is A, as for a Gaussian vector.
    const ModelConfig many = kernelConfig("performer", R"({"performer_features": 4000})");
    const auto wide = findMechanism("performer")->make(shapeOf(many, false), many);
    const double meanSquare = bufferOf(*wide, "features").pow(2).sum(1).mean().item<double>();
    QVERIFY2(std::abs(meanSquare - kA) < 0.3, std::to_string(meanSquare).c_str());
}

void TestAttentionKernel::performerEstimatesSoftmaxAttention()
{
    // With many features FAVOR+ is close to softmax(q k^T / sqrt(A)) v over the allowed keys;
    // with few it is not (the estimate is random, the test is not vacuous).
    for (const bool causal : {false, true}) {
        torch::manual_seed(14);
        const MixInput in = inputs(12, 8, causal, 0.7);
        torch::Tensor scores = torch::matmul(in.q, in.k.transpose(-2, -1)) / std::sqrt(double(kA));
        scores = scores.masked_fill(allowedKeys(in) == 0, -1e9);
        const torch::Tensor exact = torch::matmul(torch::softmax(scores, -1), in.v);
        auto errorWith = [&](std::int64_t m) {
            const ModelConfig config = kernelConfig("performer", R"({"performer_features": )" + std::to_string(m) + "}");
            const auto mechanism = findMechanism("performer")->make(shapeOf(config, causal), config);
            torch::NoGradGuard noGrad;
            return test::relativeError(mechanism->mix(in, nullptr), exact);
        };
        const double many = errorWith(16384), few = errorWith(2);
        QVERIFY2(many < 0.1, ("16384 features: relative error " + std::to_string(many)).c_str());
        QVERIFY2(few > 2 * many, ("2 features: relative error " + std::to_string(few)).c_str());
    }
}

void TestAttentionKernel::performerRedrawsOnItsScheduleOnly()
{
    // Every 3 steps: new features at steps 3 and 6, the same in between; forwards in
    // training or evaluation never draw; with 0 the features never change.
    torch::manual_seed(15);
    WideTransformer model(kernelConfig("performer", R"({"performer_features": 6, "performer_redraw_every": 3})"));
    const torch::Tensor features = bufferOf(*model, "features");
    QVERIFY(features.defined());
    const torch::Tensor ids = torch::randint(11, {kB, 9}, torch::kLong);
    torch::Tensor previous = features.clone();
    for (std::int64_t step = 0; step <= 7; ++step) {
        model->train();
        model->beginStep(step);
        const bool redrawn = !torch::equal(features, previous);
        QCOMPARE(redrawn, step == 3 || step == 6);
        previous = features.clone();
        model->forward(ids, {});
        model->eval();
        {
            torch::NoGradGuard noGrad;
            model->forward(ids, {});
        }
        QVERIFY2(torch::equal(features, previous), "a forward changed the features");
    }

    WideTransformer fixed(kernelConfig("performer", R"({"performer_features": 6, "performer_redraw_every": 0})"));
    const torch::Tensor initial = bufferOf(*fixed, "features").clone();
    for (std::int64_t step = 0; step <= 5; ++step)
        fixed->beginStep(step);
    QVERIFY(torch::equal(bufferOf(*fixed, "features"), initial));
}

void TestAttentionKernel::performerRedrawResumesExactly()
{
    // A run resumed at step 4 from the features and the generator's state it had then draws
    // at step 6 the same features as the run that went on.
    const ModelConfig config = kernelConfig("performer", R"({"performer_features": 6, "performer_redraw_every": 3})");
    torch::manual_seed(16);
    WideTransformer first(config);
    for (std::int64_t step = 0; step <= 4; ++step)
        first->beginStep(step);
    const torch::Tensor savedFeatures = bufferOf(*first, "features").clone();
    std::map<std::string, torch::Tensor> saved;
    for (const auto& item : first->named_buffers())
        saved[item.key()] = item.value().clone();
    const torch::Tensor savedGenerator = at::detail::getDefaultCPUGenerator().get_state();
    first->beginStep(5);
    first->beginStep(6);
    const torch::Tensor continued = bufferOf(*first, "features").clone();
    QVERIFY(!torch::equal(continued, savedFeatures));

    torch::manual_seed(99);  // another model, another generator state
    WideTransformer resumed(config);
    {
        // What a checkpoint restores: every buffer (both layers' features).
        torch::NoGradGuard noGrad;
        for (const auto& item : resumed->named_buffers())
            item.value().copy_(saved.at(item.key()));
    }
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to the default one
    generator.set_state(savedGenerator);
    resumed->beginStep(5);
    resumed->beginStep(6);
    QVERIFY(torch::equal(bufferOf(*resumed, "features"), continued));
}

void TestAttentionKernel::keysAreCheckedWithTheirName()
{
    for (const char* bad : {R"({"attention": "performer", "performer_features": 0})",
                            R"({"attention": "performer", "performer_redraw_every": -1})"}) {
        std::vector<ConfigIssue> issues;
        ModelConfig::fromJson(nlohmann::json::parse(bad), issues);
        QVERIFY2(!issues.empty(), bad);
        QVERIFY2(issues.front().key.rfind("model.performer_", 0) == 0, issues.front().key.c_str());
    }
}

QTEST_GUILESS_MAIN(TestAttentionKernel)
#include "tst_attention_kernel.moc"
