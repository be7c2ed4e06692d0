// bf16 attention on the CPU's AMX tiles (model/attention/AmxAttention):
// softmax(q k^T * scale + bias) v against the formula in double precision on
// the same bf16 inputs, for the shapes where the tiles' edges fall (16 keys a
// score tile, 32 a weight tile, 16 query rows a tile, head dimensions of one
// to several tiles), every bias the model makes, and the projections' layout;
// what it takes; and the full mechanism taking it under the CPU's autocast.
// On a CPU without AMX (or a kernel that withholds it) the cases skip, saying so.
#include "AttentionTesting.h"
#include "TestSupport.h"
#include "model/attention/AmxAttention.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace widelab;

namespace {

// Two roundings to bf16 (each at most 2^-9 of a value): the weights before
// their product with the values, and the output. Measured: 1.5e-3 to 2.3e-3.
constexpr double kTolerance = 4e-3;

torch::Tensor bf16Normal(std::vector<std::int64_t> sizes) { return torch::randn(sizes).to(torch::kBFloat16); }

}  // namespace

class TestAmxAttention : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init()
    {
        torch::set_num_threads(2);
        if (!amxRuns())
            QSKIP("this CPU has no AMX with bf16, or the kernel withholds it: the kernel is not used here");
    }
    void equalsTheFormula_data();
    void equalsTheFormula();
    void readsTheProjectionsLayout();
    void aRowWithEveryKeyMaskedAveragesTheValues();
    void keysWhoseBiasIsMinusInfinityAreLeftOut();
    void takesOnlyWhatItCanCompute();
    void fullAttentionTakesItUnderTheCpusAutocast();
};

void TestAmxAttention::equalsTheFormula_data()
{
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("queries");
    QTest::addColumn<int>("keys");
    QTest::addColumn<int>("headDim");
    QTest::addColumn<QString>("mask");  // none, padding, causal, both

    // A tile of rows and of keys exactly; one block of weights.
    QTest::newRow("32 tokens, A 32, no mask") << 1 << 2 << 32 << 32 << 32 << "none";
    // 257 = a classifier's 256 tokens and its CLS: 16 whole row tiles and a row, 17 score tiles, 9 weight tiles.
    QTest::newRow("257 tokens, A 32, padding") << 2 << 3 << 257 << 257 << 32 << "padding";
    QTest::newRow("130 tokens, A 64, causal") << 1 << 2 << 130 << 130 << 64 << "causal";
    // Six output tiles: a pass of four and one of two.
    QTest::newRow("77 tokens, A 96, padding and causal") << 2 << 1 << 77 << 77 << 96 << "both";
    // Cross-attention: queries and keys of different lengths.
    QTest::newRow("19 queries, 150 keys, A 32, padding") << 2 << 2 << 19 << 150 << 32 << "padding";
    QTest::newRow("16 queries, 16 keys, A 256") << 1 << 1 << 16 << 16 << 256 << "none";
    QTest::newRow("1000 tokens, A 32, padding") << 1 << 1 << 1000 << 1000 << 32 << "padding";
}

void TestAmxAttention::equalsTheFormula()
{
    QFETCH(int, batch);
    QFETCH(int, heads);
    QFETCH(int, queries);
    QFETCH(int, keys);
    QFETCH(int, headDim);
    QFETCH(QString, mask);
    torch::manual_seed(queries * 7 + keys + headDim);
    const torch::Tensor q = bf16Normal({batch, heads, queries, headDim});
    const torch::Tensor k = bf16Normal({batch, heads, keys, headDim});
    const torch::Tensor v = bf16Normal({batch, heads, keys, headDim});
    std::vector<std::int64_t> lengths;
    if (mask == "padding" || mask == "both")
        for (int b = 0; b < batch; ++b)
            lengths.push_back(keys - (b * 13) % keys);
    const torch::Tensor bias = test::additiveMask(queries, keys, lengths, mask == "causal" || mask == "both");
    const double scale = 1.0 / std::sqrt(static_cast<double>(headDim));

    QVERIFY(amxAttentionApplies(q, k, v, bias));
    const torch::Tensor got = amxAttention(q, k, v, bias, scale);
    QCOMPARE(got.scalar_type(), torch::kBFloat16);
    QCOMPARE(got.sizes().vec(), q.sizes().vec());
    QVERIFY(got.permute({0, 2, 1, 3}).is_contiguous());
    const double error = test::relativeError(got, test::attentionReference(q, k, v, bias, scale));
    QVERIFY2(error < kTolerance, qPrintable(QStringLiteral("relative error %1").arg(error)));
}

void TestAmxAttention::readsTheProjectionsLayout()
{
    // q, k and v as views of one [B, T, 3, G, A] product, permuted to [B, G, T, A].
    torch::manual_seed(3);
    const std::int64_t B = 2, T = 90, G = 4, A = 32;
    const std::vector<torch::Tensor> parts = bf16Normal({B, T, 3, G, A}).permute({2, 0, 3, 1, 4}).unbind(0);
    const torch::Tensor bias = test::additiveMask(T, T, {T, 51}, false);
    QVERIFY(!parts[0].is_contiguous());
    const torch::Tensor got = amxAttention(parts[0], parts[1], parts[2], bias, 0.25);
    QVERIFY(test::relativeError(got, test::attentionReference(parts[0], parts[1], parts[2], bias, 0.25)) < kTolerance);
}

void TestAmxAttention::aRowWithEveryKeyMaskedAveragesTheValues()
{
    // Every key at -1e9 (a padded entry's rows): softmax is uniform, the output the values' mean.
    torch::manual_seed(5);
    const std::int64_t T = 40, A = 32;
    const torch::Tensor q = bf16Normal({1, 1, T, A}), k = bf16Normal({1, 1, T, A}), v = bf16Normal({1, 1, T, A});
    const torch::Tensor bias = torch::full({1, 1, 1, T}, -1e9);
    const torch::Tensor got = amxAttention(q, k, v, bias, 1.0);
    const torch::Tensor mean = v.to(torch::kDouble).mean(2, /*keepdim=*/true).expand({1, 1, T, A});
    QVERIFY(torch::isfinite(got.to(torch::kFloat)).all().item<bool>());
    QVERIFY2(test::relativeError(got, mean) < kTolerance, qPrintable(QString::number(test::relativeError(got, mean))));
}

void TestAmxAttention::keysWhoseBiasIsMinusInfinityAreLeftOut()
{
    // A bias of -inf (the same for every row, then row by row) leaves its keys
    // out exactly: the output is attention over the other keys alone, and no
    // NaN comes of -inf minus the row's maximum.
    torch::manual_seed(6);
    const std::int64_t T = 50, A = 32, kept = 21;
    const torch::Tensor q = bf16Normal({1, 2, T, A}), k = bf16Normal({1, 2, T, A}), v = bf16Normal({1, 2, T, A});
    const float inf = std::numeric_limits<float>::infinity();
    const torch::Tensor perKey = torch::zeros({1, 1, 1, T}).index_fill_(3, torch::arange(kept, T), -inf);
    for (const torch::Tensor& bias : {perKey, perKey.expand({1, 1, T, T}).contiguous()}) {
        const torch::Tensor got = amxAttention(q, k, v, bias, 0.2);
        const torch::Tensor alone =
            test::attentionReference(q, k.narrow(2, 0, kept), v.narrow(2, 0, kept), torch::Tensor(), 0.2);
        QVERIFY(torch::isfinite(got.to(torch::kFloat)).all().item<bool>());
        QVERIFY2(test::relativeError(got, alone) < kTolerance, qPrintable(QString::number(test::relativeError(got, alone))));
    }
}

void TestAmxAttention::takesOnlyWhatItCanCompute()
{
    const torch::Tensor q = bf16Normal({1, 2, 32, 32}), k = bf16Normal({1, 2, 40, 32}), v = bf16Normal({1, 2, 40, 32});
    QVERIFY(amxAttentionApplies(q, k, v, torch::Tensor()));
    QVERIFY(amxAttentionApplies(q, k, v, torch::zeros({1, 1, 32, 40})));
    QVERIFY(!amxAttentionApplies(q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat), torch::Tensor()));
    QVERIFY(!amxAttentionApplies(q.clone().requires_grad_(true), k, v, torch::Tensor()));
    // A head dimension that is not a whole tile's depth goes to the blocked kernel.
    QVERIFY(!amxAttentionApplies(q.narrow(3, 0, 16), k.narrow(3, 0, 16), v.narrow(3, 0, 16), torch::Tensor()));
    // A decoding step's one query; a bias that does not broadcast, or is not fp32.
    QVERIFY(!amxAttentionApplies(q.narrow(2, 0, 1), k, v, torch::Tensor()));
    QVERIFY(!amxAttentionApplies(q, k, v, torch::zeros({1, 2, 32, 40})));
    QVERIFY(!amxAttentionApplies(q, k, v, torch::zeros({1, 1, 32, 40}, torch::kBFloat16)));
    bool refused = false;
    try {
        amxAttention(q.to(torch::kFloat), k, v, torch::Tensor(), 1.0);
    } catch (const std::invalid_argument& e) {
        refused = QString(e.what()).contains("amxAttention");
    }
    QVERIFY(refused);
}

void TestAmxAttention::fullAttentionTakesItUnderTheCpusAutocast()
{
    // bf16 q, k and v (as the CPU's autocast leaves them) with an fp32 mask: the
    // full mechanism answers by the AMX kernel (bit for bit), on LibTorch 2.x
    // too before its fused kernel, and makes no [T, T] scores, and its context
    // is the formula's to bf16's precision.
    torch::manual_seed(9);
    MixInput in;
    in.q = bf16Normal({2, 2, 48, 32});
    in.k = bf16Normal({2, 2, 48, 32});
    in.v = bf16Normal({2, 2, 48, 32});
    in.bias = test::additiveMask(48, 48, {48, 30}, false);
    const test::FullMechanismPass pass = test::fullMechanismInInference(in);
    QCOMPARE(pass.context.scalar_type(), torch::kBFloat16);
    const double error =
        test::relativeError(pass.context, test::attentionReference(in.q, in.k, in.v, in.bias, 1.0 / std::sqrt(32.0)));
    QVERIFY2(error < kTolerance, qPrintable(QStringLiteral("relative error %1").arg(error)));
    QVERIFY(torch::equal(pass.context, amxAttention(in.q, in.k, in.v, in.bias, 1.0 / std::sqrt(32.0))));
    QVERIFY2(!pass.madeScores, "the scores were made");
}

QTEST_GUILESS_MAIN(TestAmxAttention)
#include "tst_amxattention.moc"
