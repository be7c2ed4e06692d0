// What is particular to the windowed mechanisms (local, longformer, bigbird,
// sparse): each query reaches exactly the keys its paper's pattern names, the
// random blocks of BigBird are drawn as the paper says and kept as state, and
// a query that sees no real key takes position 0's value. The patterns
// expected here are written from the papers, position by position.
#include "TestSupport.h"
#include "model/attention/AttentionMechanism.h"

#include <QtTest>

#include <functional>

using namespace widelab;

namespace {

constexpr std::int64_t kG = 2, kA = 4;

struct Built {
    ModelConfig config;
    std::shared_ptr<MechanismImpl> mechanism;
};

Built build(const std::string& model, std::int64_t positions, bool causal = false)
{
    Built b;
    b.config = test::modelConfig(model);
    MechanismShape shape;
    shape.heads = kG;
    shape.headDim = kA;
    shape.positions = positions;
    shape.causal = causal;
    b.mechanism = findMechanism(b.config.attention)->make(shape, b.config);
    b.mechanism->eval();
    return b;
}

// The map of one random input of T positions, every key real unless `keyValid`.
torch::Tensor mapOf(MechanismImpl& mechanism, std::int64_t T, bool causal = false, torch::Tensor keyValid = {})
{
    torch::NoGradGuard noGrad;
    MixInput in;
    in.q = torch::randn({1, kG, T, kA});
    in.k = torch::randn({1, kG, T, kA});
    in.v = torch::randn({1, kG, T, kA});
    in.keyValid = keyValid;
    in.causal = causal;
    torch::Tensor map;
    const torch::Tensor context = mechanism.mix(in, &map);
    if (!torch::allclose(context, torch::matmul(map, in.v), 1e-4, 1e-5))
        throw std::runtime_error("context differs from map x v");
    return map;
}

// Compares where a head's map is non-zero with `sees(i, j)`; "" when equal.
std::string comparePattern(const torch::Tensor& headMap, const std::function<bool(std::int64_t, std::int64_t)>& sees)
{
    const std::int64_t T = headMap.size(0);
    for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < T; ++j)
            if ((headMap[i][j].item<float>() > 0.0f) != sees(i, j))
                return "query " + std::to_string(i) + ", key " + std::to_string(j) + ": " +
                       (sees(i, j) ? "expected weight, got none" : "unexpected weight");
    return {};
}

}  // namespace

class TestAttentionWindowed : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::manual_seed(11); }
    void localSeesItsBlockOnly();
    void longformerWindowAndGlobals();
    void bigbirdWindowGlobalAndRandomBlocks();
    void bigbirdRandomBlocksAreState();
    void sparsePatterns_data();
    void sparsePatterns();
    void queryWithoutRealKeyTakesTheFirst();
    void sparseSummaryLongerThanBlockIsAnError();
    void clsTokenThatSeesPartOfTheSequenceWarns_data();
    void clsTokenThatSeesPartOfTheSequenceWarns();
};

void TestAttentionWindowed::localSeesItsBlockOnly()
{
    // Blocks of 4 over 10 positions: {0..3}, {4..7}, {8, 9}.
    Built b = build(R"({"attention": "local", "local_block_size": 4})", 10);
    const torch::Tensor map = mapOf(*b.mechanism, 10);
    for (std::int64_t h = 0; h < kG; ++h) {
        const std::string diff = comparePattern(map[0][h], [](std::int64_t i, std::int64_t j) { return i / 4 == j / 4; });
        QVERIFY2(diff.empty(), diff.c_str());
    }
    const torch::Tensor causalMap = mapOf(*b.mechanism, 10, true);
    const std::string diff =
        comparePattern(causalMap[0][1], [](std::int64_t i, std::int64_t j) { return i / 4 == j / 4 && j <= i; });
    QVERIFY2(diff.empty(), diff.c_str());
}

void TestAttentionWindowed::longformerWindowAndGlobals()
{
    // Window 5: two keys before the query, itself, two after; window 4: one
    // before, itself, two after (w - w/2 on the left, the query included). Position 0 global: sees and is seen by all.
    Built five = build(R"({"attention": "longformer", "longformer_window": 5, "longformer_global_tokens": 1})", 16);
    std::string diff = comparePattern(mapOf(*five.mechanism, 16)[0][0], [](std::int64_t i, std::int64_t j) {
        return (j >= i - 2 && j <= i + 2) || i == 0 || j == 0;
    });
    QVERIFY2(diff.empty(), diff.c_str());
    Built four = build(R"({"attention": "longformer", "longformer_window": 4})", 16);
    diff = comparePattern(mapOf(*four.mechanism, 16)[0][1],
                          [](std::int64_t i, std::int64_t j) { return j >= i - 1 && j <= i + 2; });
    QVERIFY2(diff.empty(), diff.c_str());
    // Causal with two global tokens: the window's past half and the globals seen so far.
    Built lm = build(R"({"attention": "longformer", "longformer_window": 4, "longformer_global_tokens": 2,
                         "head": "language_model"})", 16, true);
    diff = comparePattern(mapOf(*lm.mechanism, 16, true)[0][0], [](std::int64_t i, std::int64_t j) {
        return j <= i && (j >= i - 1 || j < 2 || i < 2);
    });
    QVERIFY2(diff.empty(), diff.c_str());
}

void TestAttentionWindowed::bigbirdWindowGlobalAndRandomBlocks()
{
    // Blocks of 2 over 16 positions: 8 blocks; 2 random blocks per middle block.
    Built b = build(R"({"attention": "bigbird", "bigbird_block_size": 2, "bigbird_random_blocks": 2})", 16);
    torch::Tensor random;
    for (const auto& item : b.mechanism->named_buffers())
        if (item.key() == "random_blocks")
            random = item.value();
    QVERIFY2(random.defined(), "the random blocks are not a buffer");
    QCOMPARE(random.sizes().vec(), (std::vector<std::int64_t>{kG, 8, 2}));
    const torch::Tensor map = mapOf(*b.mechanism, 16);
    for (std::int64_t h = 0; h < kG; ++h) {
        for (std::int64_t n = 0; n < 8; ++n) {
            const std::int64_t r0 = random[h][n][0].item<std::int64_t>(), r1 = random[h][n][1].item<std::int64_t>();
            if (n == 0 || n == 7) {  // global blocks draw nothing
                QCOMPARE(r0, std::int64_t{-1});
                continue;
            }
            // Two distinct blocks, neither global nor in the window.
            QVERIFY(r0 != r1);
            for (std::int64_t r : {r0, r1})
                QVERIFY2(r >= 1 && r <= 6 && std::abs(r - n) > 1, ("block " + std::to_string(r)).c_str());
        }
        const std::string diff = comparePattern(map[0][h], [&](std::int64_t i, std::int64_t j) {
            const std::int64_t qb = i / 2, kb = j / 2;
            if (qb == 0 || qb == 7 || kb == 0 || kb == 7 || std::abs(qb - kb) <= 1)
                return true;
            return kb == random[h][qb][0].item<std::int64_t>() || kb == random[h][qb][1].item<std::int64_t>();
        });
        QVERIFY2(diff.empty(), diff.c_str());
    }
    // The heads draw their own blocks.
    QVERIFY(!torch::equal(random[0], random[1]));
}

void TestAttentionWindowed::bigbirdRandomBlocksAreState()
{
    // The same seed draws the same blocks (a run is reproducible); a loaded
    // state restores them exactly (a resumed run continues with them).
    const char* model = R"({"attention": "bigbird", "bigbird_block_size": 2, "bigbird_random_blocks": 3})";
    torch::manual_seed(4);
    Built a = build(model, 40);
    torch::manual_seed(4);
    Built same = build(model, 40);
    torch::manual_seed(5);
    Built other = build(model, 40);
    const auto blocks = [](const Built& b) { return b.mechanism->named_buffers()["random_blocks"]; };
    QVERIFY(torch::equal(blocks(a), blocks(same)));
    QVERIFY(!torch::equal(blocks(a), blocks(other)));
    torch::NoGradGuard noGrad;
    blocks(other).copy_(blocks(a));
    torch::manual_seed(9);
    const torch::Tensor mapA = mapOf(*a.mechanism, 40);
    torch::manual_seed(9);
    const torch::Tensor mapOther = mapOf(*other.mechanism, 40);
    QVERIFY(torch::equal(mapA, mapOther));
}

void TestAttentionWindowed::sparsePatterns_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("causal");
    QTest::addColumn<QString>("pattern");
    QTest::newRow("strided 3") << R"({"attention": "sparse", "sparse_pattern": "strided", "sparse_block_size": 3})"
                               << false << "strided";
    QTest::newRow("strided 4, causal")
        << R"({"attention": "sparse", "sparse_pattern": "strided", "sparse_block_size": 4, "head": "language_model"})"
        << true << "strided";
    QTest::newRow("fixed 4/1") << R"({"attention": "sparse", "sparse_block_size": 4, "sparse_summary": 1})" << false
                               << "fixed";
    QTest::newRow("fixed 5/2, causal")
        << R"({"attention": "sparse", "sparse_block_size": 5, "sparse_summary": 2, "head": "language_model"})" << true
        << "fixed";
}

void TestAttentionWindowed::sparsePatterns()
{
    QFETCH(QString, model);
    QFETCH(bool, causal);
    QFETCH(QString, pattern);
    const std::int64_t T = 17;
    Built b = build(model.toStdString(), T, causal);
    const std::int64_t l = b.config.attentionInteger("sparse_block_size");
    const std::int64_t c = b.config.attentionInteger("sparse_summary");
    const bool strided = pattern == "strided";
    // Child et al.: strided, the previous l positions and every l-th; fixed, the
    // own block and the last c positions of every block.
    const std::string diff = comparePattern(mapOf(*b.mechanism, T, causal)[0][0], [&](std::int64_t i, std::int64_t j) {
        if (causal && j > i)
            return false;
        const std::int64_t d = i - j;
        return strided ? (std::abs(d) < l || d % l == 0) : (i / l == j / l || j % l >= l - c);
    });
    QVERIFY2(diff.empty(), diff.c_str());
}

void TestAttentionWindowed::queryWithoutRealKeyTakesTheFirst()
{
    // Local blocks of 3 over 9 positions, 4 real: queries 6..8 see only padding.
    Built b = build(R"({"attention": "local", "local_block_size": 3})", 9);
    const torch::Tensor keyValid = torch::arange(9).unsqueeze(0) < 4;
    const torch::Tensor map = mapOf(*b.mechanism, 9, false, keyValid);
    for (std::int64_t i = 6; i < 9; ++i) {
        QCOMPARE(map[0][0][i][0].item<float>(), 1.0f);
        QCOMPARE(map[0][0][i].sum().item<float>(), 1.0f);
    }
    // Query 4 (padded) sees the real key 3 in its block only.
    QCOMPARE(map[0][1][4][3].item<float>(), 1.0f);
}

void TestAttentionWindowed::sparseSummaryLongerThanBlockIsAnError()
{
    std::vector<ConfigIssue> issues;
    ModelConfig::fromJson(
        nlohmann::json::parse(R"({"attention": "sparse", "sparse_pattern": "fixed", "sparse_block_size": 4, "sparse_summary": 5})"), issues);
    QVERIFY(!issues.empty());
    QCOMPARE(issues.front().key, std::string("model.sparse_summary"));
}

void TestAttentionWindowed::clsTokenThatSeesPartOfTheSequenceWarns_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("warning");  // a part of the warning at model.pooling; empty: none

    // 32 x 32 pictures in 4 x 4 patches: 64 patches and CLS, 65 positions.
    const QString image = QStringLiteral(R"("input": "image", "image_size": 32, "patch_size": 4, "layers": 6, )");
    QTest::newRow("local, blocks of 16") << image + R"("attention": "local", "local_block_size": 16})"
                                         << "sees only 16 of the 65 positions";
    QTest::newRow("local, one block of 65") << image + R"("attention": "local", "local_block_size": 65})" << "";
    QTest::newRow("local, mean pooling") << image + R"("attention": "local", "local_block_size": 16, "pooling": "mean"})"
                                         << "";
    // Window 16: 8 positions further per layer; 6 layers: 1 + 48 = 49; 8 layers: 65.
    QTest::newRow("longformer, 6 layers") << image + R"("attention": "longformer", "longformer_window": 16})"
                                          << "sees only 49 of the 65 positions";
    QTest::newRow("longformer, 8 layers")
        << QString(image).replace(QStringLiteral("\"layers\": 6"), QStringLiteral("\"layers\": 8"))
               + R"("attention": "longformer", "longformer_window": 16})"
        << "";
    QTest::newRow("longformer, CLS global")
        << image + R"("attention": "longformer", "longformer_window": 16, "longformer_global_tokens": 1})" << "";
    QTest::newRow("mixed with full heads")
        << image + R"("heads": 2, "attention": "mixed", "attention_mix": ["local", "full"], "local_block_size": 16})"
        << "";
    QTest::newRow("full") << image + R"("attention": "full"})" << "";
}

void TestAttentionWindowed::clsTokenThatSeesPartOfTheSequenceWarns()
{
    QFETCH(QString, model);
    QFETCH(QString, warning);
    std::vector<ConfigIssue> issues, warnings;
    ModelConfig::fromJson(nlohmann::json::parse((QStringLiteral("{") + model).toStdString()), issues, "model", &warnings);
    QVERIFY(issues.empty());
    QString said;
    for (const ConfigIssue& w : warnings)
        if (w.key == "model.pooling")
            said += QString::fromStdString(w.reason);
    if (warning.isEmpty())
        QVERIFY2(said.isEmpty(), qPrintable(said));
    else
        QVERIFY2(said.contains(warning) && said.contains(QStringLiteral("\"mean\" pools every position")),
                 qPrintable(said));
}

QTEST_GUILESS_MAIN(TestAttentionWindowed)
#include "tst_attention_windowed.moc"
