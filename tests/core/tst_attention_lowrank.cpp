// What is specific to the low-rank and learned-pattern mechanisms: Linformer's
// implied map has rank k and ignores projection rows past the sequence; the
// Synthesizer's variants build what they say and ignore what they say; a
// Sinkhorn block reads only its own block and the blocks its sorting picks, and
// with one block it is full attention. Their invariants shared with every
// mechanism are in tst_attention, their numbers against tests/reference/ in
// tst_reference.
#include "TestSupport.h"
#include "model/attention/AttentionMechanism.h"

#include <QtTest>

#include <cmath>

using namespace widelab;

namespace {

constexpr std::int64_t kB = 2, kG = 3, kT = 12, kA = 4;

ModelConfig configWith(const std::string& attention, const nlohmann::json& keys)
{
    nlohmann::json model = {{"vocab_size", 17}, {"max_len", kT}, {"d_model", 12}, {"heads", kG}, {"head_dim", kA},
                            {"dropout", 0.0}, {"attention", attention}, {"pooling", "mean"}};
    model.update(keys);
    return test::modelConfig(model.dump());
}

std::shared_ptr<MechanismImpl> make(const ModelConfig& config, bool causal = false)
{
    MechanismShape shape;
    shape.heads = kG;
    shape.headDim = kA;
    shape.positions = config.positions();
    shape.causal = causal;
    const std::shared_ptr<MechanismImpl> mechanism = findMechanism(config.attention)->make(shape, config);
    mechanism->eval();
    return mechanism;
}

MixInput inputs(std::int64_t T = kT)
{
    MixInput in;
    in.q = torch::randn({kB, kG, T, kA});
    in.k = torch::randn({kB, kG, T, kA});
    in.v = torch::randn({kB, kG, T, kA});
    return in;
}

torch::Tensor parameter(MechanismImpl& mechanism, const std::string& name)
{
    for (const auto& item : mechanism.named_parameters())
        if (item.key() == name)
            return item.value();
    return {};
}

}  // namespace

class TestAttentionLowRank : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(2); }
    void linformerMapHasRankK();
    void linformerUsesTheFirstTRowsOnly();
    void synthesizerVariantsBuildTheirParameters();
    void synthesizerRandomIgnoresTheInput();
    void synthesizerDenseIgnoresKeys();
    void sinkhornWithOneBlockIsFullAttention();
    void sinkhornReadsItsBlockAndTheSortedOne();
    void languageModelsRejectNonCausalOnes();
};

void TestAttentionLowRank::linformerMapHasRankK()
{
    torch::manual_seed(1);
    const ModelConfig config = configWith("linformer", {{"linformer_k", 3}});
    const auto mechanism = make(config);
    torch::NoGradGuard noGrad;
    torch::Tensor map;
    mechanism->mix(inputs(), &map);
    // [T, T] weights that factor through 3 projected positions: singular values 4.. vanish.
    const torch::Tensor singular = torch::linalg_svdvals(map[0][1]);  // descending
    QVERIFY(singular[2].item<double>() > 1e-3);
    QVERIFY2(singular[3].item<double>() < 1e-5 * singular[0].item<double>(),
             ("rank above k: " + std::to_string(singular[3].item<double>())).c_str());
}

void TestAttentionLowRank::linformerUsesTheFirstTRowsOnly()
{
    torch::manual_seed(2);
    const ModelConfig config = configWith("linformer", {{"linformer_k", 3}});
    const auto mechanism = make(config);
    torch::NoGradGuard noGrad;
    const MixInput in = inputs(7);
    const torch::Tensor before = mechanism->mix(in, nullptr);
    parameter(*mechanism, "projection").narrow(0, 7, kT - 7).normal_();
    QVERIFY(torch::equal(mechanism->mix(in, nullptr), before));
    parameter(*mechanism, "projection").narrow(0, 6, 1).normal_();
    QVERIFY(!torch::allclose(mechanism->mix(in, nullptr), before));
}

void TestAttentionLowRank::synthesizerVariantsBuildTheirParameters()
{
    // positions P = 12 (mean pooling: no CLS), G = 3 heads, A = 4, rank 5.
    const std::vector<std::tuple<std::string, std::vector<std::string>, qint64>> variants = {
        {"dense", {"dense_weight", "dense_bias"}, 3 * 4 * 12 + 3 * 12},
        {"random", {"random"}, 3 * 12 * 12},
        {"factorized_random", {"random_left", "random_right"}, 3 * 12 * 5 + 3 * 5 * 12},
    };
    for (const auto& [variant, names, count] : variants) {
        const ModelConfig config = configWith("synthesizer", {{"synthesizer_variant", variant}, {"synthesizer_rank", 5}});
        const auto mechanism = make(config, true);
        std::vector<std::string> built;
        std::int64_t total = 0;
        for (const auto& item : mechanism->named_parameters()) {
            built.push_back(item.key());
            total += item.value().numel();
        }
        QCOMPARE(built, names);
        QCOMPARE(qint64(total), count);
        QCOMPARE(qint64(findMechanism("synthesizer")->parameters(MechanismShape{kG, kA, kT, true}, config)), count);

        // Causal: no weight on a later key; rows are probabilities.
        torch::NoGradGuard noGrad;
        MixInput in = inputs();
        in.causal = true;
        in.bias = torch::zeros({1, 1, kT, kT}).masked_fill(torch::ones({kT, kT}, torch::kBool).triu(1), -1e9);
        torch::Tensor map;
        const torch::Tensor context = mechanism->mix(in, &map);
        QCOMPARE((map * torch::ones({kT, kT}).triu(1)).abs().max().item<float>(), 0.0f);
        QVERIFY(torch::allclose(map.sum(-1), torch::ones({kB, kG, kT}), 1e-5, 1e-6));
        QVERIFY(torch::allclose(context, torch::matmul(map, in.v), 1e-5, 1e-6));
    }
}

void TestAttentionLowRank::synthesizerRandomIgnoresTheInput()
{
    torch::manual_seed(3);
    const ModelConfig config = configWith("synthesizer", {{"synthesizer_variant", "random"}});
    const auto mechanism = make(config);
    torch::NoGradGuard noGrad;
    torch::Tensor first, second;
    mechanism->mix(inputs(9), &first);
    mechanism->mix(inputs(9), &second);
    QVERIFY(torch::equal(first, second));
    // The map is the softmax of the learned scores' top-left 9 x 9, for every sequence.
    const torch::Tensor R = parameter(*mechanism, "random");
    const torch::Tensor expected = torch::softmax(R.narrow(1, 0, 9).narrow(2, 0, 9), -1);
    QVERIFY(torch::allclose(first[1], expected, 1e-5, 1e-6));
}

void TestAttentionLowRank::synthesizerDenseIgnoresKeys()
{
    torch::manual_seed(4);
    const ModelConfig config = configWith("synthesizer", {{"synthesizer_variant", "dense"}});
    const auto mechanism = make(config);
    torch::NoGradGuard noGrad;
    MixInput in = inputs();
    torch::Tensor before, other;
    mechanism->mix(in, &before);
    in.k = torch::randn_like(in.k);
    mechanism->mix(in, &other);
    QVERIFY(torch::equal(before, other));
    in.q = torch::randn_like(in.q);  // each query's own scores
    mechanism->mix(in, &other);
    QVERIFY(!torch::allclose(before, other));
}

void TestAttentionLowRank::sinkhornWithOneBlockIsFullAttention()
{
    // One block holds the whole sequence: the sorted block is the block itself,
    // and a softmax over each key twice is full softmax attention.
    torch::manual_seed(5);
    const ModelConfig config = configWith("sinkhorn", {{"sinkhorn_block_size", kT}, {"sinkhorn_iterations", 3}});
    const auto mechanism = make(config);
    torch::NoGradGuard noGrad;
    const MixInput in = inputs();
    const torch::Tensor full = torch::softmax(torch::matmul(in.q, in.k.transpose(-2, -1)) / std::sqrt(double(kA)), -1);
    torch::Tensor map;
    const torch::Tensor context = mechanism->mix(in, &map);
    QVERIFY(torch::allclose(map, full, 1e-5, 1e-6));
    QVERIFY(torch::allclose(context, torch::matmul(full, in.v), 1e-4, 1e-5));
}

void TestAttentionLowRank::sinkhornReadsItsBlockAndTheSortedOne()
{
    // Blocks of 3 over 12 positions; the sorting network made to send every
    // block to block 2 (its bias), whatever the keys.
    torch::manual_seed(6);
    const ModelConfig config = configWith("sinkhorn", {{"sinkhorn_block_size", 3}});
    const auto mechanism = make(config);
    torch::NoGradGuard noGrad;
    parameter(*mechanism, "sort_weight").zero_();
    parameter(*mechanism, "sort_bias").fill_(-40.0).narrow(1, 2, 1).fill_(40.0);
    torch::Tensor map;
    mechanism->mix(inputs(), &map);
    const torch::Tensor blockMass = map.view({kB, kG, kT, 4, 3}).sum(-1);  // [B, G, query, key block]
    for (std::int64_t t = 0; t < kT; ++t) {
        const std::int64_t own = t / 3;
        for (std::int64_t j = 0; j < 4; ++j) {
            const double mass = blockMass.select(2, t).select(2, j).max().item<double>();
            if (j == own || j == 2)
                QVERIFY(blockMass.select(2, t).select(2, j).min().item<double>() > 1e-6);
            else
                QVERIFY2(mass < 1e-12, ("query " + std::to_string(t) + " reads block " + std::to_string(j)).c_str());
        }
    }
    QVERIFY(torch::allclose(map.sum(-1), torch::ones({kB, kG, kT}), 1e-5, 1e-6));
}

void TestAttentionLowRank::languageModelsRejectNonCausalOnes()
{
    for (const char* name : {"linformer", "sinkhorn"}) {
        std::vector<ConfigIssue> issues;
        ModelConfig::fromJson(nlohmann::json{{"attention", name}, {"head", "language_model"}}, issues);
        QVERIFY2(!issues.empty() && issues.front().key == "model.attention", name);
        QVERIFY(QString::fromStdString(issues.front().reason).contains("language model"));
    }
    std::vector<ConfigIssue> issues;
    ModelConfig::fromJson(nlohmann::json{{"attention", "synthesizer"}, {"head", "language_model"}}, issues);
    QVERIFY(issues.empty());
}

QTEST_GUILESS_MAIN(TestAttentionLowRank)
#include "tst_attention_lowrank.moc"
