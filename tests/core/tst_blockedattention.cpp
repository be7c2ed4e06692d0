// WideLab's own CPU attention for inference (model/attention/BlockedAttention):
// softmax(q k^T * scale + bias) v over blocks of keys, against the same formula
// written with LibTorch's products and softmax in double precision, for the
// shapes where the blocks' edges fall (tails of keys and of query rows, head
// sizes that are not whole vectors), every bias the model makes, and views laid
// out as the model's projections leave them.
#include "AttentionTesting.h"
#include "KernelBuilds.h"
#include "TestSupport.h"
#include "model/attention/BlockedAttention.h"

#include <QtTest>

#include <limits>

using namespace widelab;

namespace {

// float32's rounding against a double reference: under 4e-7 measured for every
// shape below; an error of a few 1e-6 in exp's series already exceeds it.
constexpr double kTolerance = 2e-6;

}  // namespace

class TestBlockedAttention : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(2); }
    void equalsTheUnblockedFormula_data();
    void equalsTheUnblockedFormula();
    void readsTheProjectionsLayoutWithoutACopy();
    void aRowWithEveryKeyMaskedAveragesTheValues_data();
    void aRowWithEveryKeyMaskedAveragesTheValues();
    void keysWhoseBiasIsMinusInfinityAreLeftOut_data();
    void keysWhoseBiasIsMinusInfinityAreLeftOut();
    void widelySpreadScoresKeepTheirPrecision_data();
    void widelySpreadScoresKeepTheirPrecision();
    void bf16IsTheFp32ResultRoundedOnce_data();
    void bf16IsTheFp32ResultRoundedOnce();
    void takesOnlyWhatItCanCompute();
    void fullAttentionTakesItInInference();
    void fullAttentionTakesItUnderTheCpusAutocast();
};

// Each shape for every build of the kernel this CPU runs (AVX-512, AVX2, the
// baseline): the one a user's CPU takes is then tested wherever the suite runs
// on a CPU with AVX-512.
void TestBlockedAttention::equalsTheUnblockedFormula_data()
{
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("queries");
    QTest::addColumn<int>("keys");
    QTest::addColumn<int>("headDim");
    QTest::addColumn<QString>("mask");  // none, padding, causal, both
    QTest::addColumn<InstructionSet>("set");

    test::forEachKernelBuild([](InstructionSet set, auto row) {
        // One block of keys exactly, and one row tile short of a whole one.
        row("64 keys, A 32, no mask") << 2 << 3 << 64 << 64 << 32 << "none" << set;
        // 100 = 64 + 36 keys, 100 = 25 row tiles; A 4 fills a quarter of a vector.
        row("100 keys, A 4, padding") << 2 << 2 << 100 << 100 << 4 << "padding" << set;
        // Two heads on two threads: each head's 130 query rows in tasks of 48, 48
        // and 34 rows, the last a partial tile; A 40 ends mid-vector.
        row("130 tokens, A 40, causal") << 1 << 2 << 130 << 130 << 40 << "causal" << set;
        // Eight heads, enough for two threads: a task per head, all 257 rows.
        row("257 tokens, 4 x 2 heads, A 32, padding") << 4 << 2 << 257 << 257 << 32 << "padding" << set;
        row("77 tokens, A 64, padding and causal") << 3 << 2 << 77 << 77 << 64 << "both" << set;
        // Cross-attention's shape: queries and keys of different lengths.
        row("19 queries, 150 keys, A 16, padding") << 2 << 1 << 19 << 150 << 16 << "padding" << set;
        row("300 tokens, A 33, padding") << 1 << 1 << 300 << 300 << 33 << "padding" << set;
    });
}

void TestBlockedAttention::equalsTheUnblockedFormula()
{
    QFETCH(int, batch);
    QFETCH(int, heads);
    QFETCH(int, queries);
    QFETCH(int, keys);
    QFETCH(int, headDim);
    QFETCH(QString, mask);
    QFETCH(InstructionSet, set);
    torch::manual_seed(queries * 7 + keys);
    const torch::Tensor q = torch::randn({batch, heads, queries, headDim});
    const torch::Tensor k = torch::randn({batch, heads, keys, headDim});
    const torch::Tensor v = torch::randn({batch, heads, keys, headDim});
    std::vector<std::int64_t> lengths;
    if (mask == "padding" || mask == "both")
        for (int b = 0; b < batch; ++b)
            lengths.push_back(keys - (b * 13) % keys);  // the first entry whole, the others shorter
    const torch::Tensor bias = test::additiveMask(queries, keys, lengths, mask == "causal" || mask == "both");
    const double scale = 1.0 / std::sqrt(static_cast<double>(headDim));

    QVERIFY(blockedAttentionApplies(q, k, v, bias));
    const torch::Tensor got = blockedAttention(q, k, v, bias, scale, set);
    QCOMPARE(got.sizes().vec(), q.sizes().vec());
    const double error = test::relativeError(got, test::attentionReference(q, k, v, bias, scale));
    QVERIFY2(error < kTolerance, qPrintable(QStringLiteral("relative error %1").arg(error)));
}

void TestBlockedAttention::readsTheProjectionsLayoutWithoutACopy()
{
    // The attention layer hands over q, k and v as views of one [B, T, 3, G, A]
    // product, permuted to [B, G, T, A]; the context comes back laid out as
    // [B, T, G, A], which the output projection reads as [B*T, G*A] as it is.
    torch::manual_seed(3);
    const std::int64_t B = 2, T = 90, G = 4, A = 32;
    const torch::Tensor qkv = torch::randn({B, T, 3, G, A}).permute({2, 0, 3, 1, 4});
    const std::vector<torch::Tensor> parts = qkv.unbind(0);
    const torch::Tensor bias = test::additiveMask(T, T, {T, 51}, false);
    QVERIFY(!parts[0].is_contiguous());
    const torch::Tensor got = blockedAttention(parts[0], parts[1], parts[2], bias, 0.25);
    QVERIFY(got.permute({0, 2, 1, 3}).is_contiguous());
    QVERIFY(test::relativeError(got, test::attentionReference(parts[0], parts[1], parts[2], bias, 0.25)) < kTolerance);
}

void TestBlockedAttention::aRowWithEveryKeyMaskedAveragesTheValues_data()
{
    QTest::addColumn<InstructionSet>("set");
    test::forEachKernelBuild([](InstructionSet set, auto row) { row("70 keys, all masked") << set; });
}

void TestBlockedAttention::aRowWithEveryKeyMaskedAveragesTheValues()
{
    QFETCH(InstructionSet, set);
    // An entry with no real token (all keys -1e9) gets what softmax gives a row
    // of equal scores: every value weighted alike, not NaN.
    torch::manual_seed(4);
    const torch::Tensor q = torch::randn({1, 1, 20, 8}), k = torch::randn({1, 1, 70, 8}), v = torch::randn({1, 1, 70, 8});
    const torch::Tensor bias = torch::full({1, 1, 1, 70}, -1e9);
    const torch::Tensor got = blockedAttention(q, k, v, bias, 1.0, set);
    const torch::Tensor mean = v.mean(2, true).expand({1, 1, 20, 8});
    QVERIFY2(test::relativeError(got, mean) < kTolerance, qPrintable(QString::number(test::relativeError(got, mean))));
}

// Each build this CPU runs, the bias the same for every row (a padding mask)
// and given row by row (as a causal one is).
void TestBlockedAttention::keysWhoseBiasIsMinusInfinityAreLeftOut_data()
{
    QTest::addColumn<bool>("byRow");
    QTest::addColumn<InstructionSet>("set");
    test::forEachKernelBuild([](InstructionSet set, auto row) {
        row("the same for every row") << false << set;
        row("row by row") << true << set;
    });
}

void TestBlockedAttention::keysWhoseBiasIsMinusInfinityAreLeftOut()
{
    // A bias of -inf (not the model's -1e9) on the first 16 keys: every row's
    // first block (or two) of keys has only -inf scores, before any finite one.
    // The result is softmax over the other keys alone, and finite: -inf minus a
    // running maximum that started at -inf would be NaN.
    QFETCH(bool, byRow);
    QFETCH(InstructionSet, set);
    torch::manual_seed(9);
    const std::int64_t Tq = 40, Tk = 70, A = 24, masked = 16;
    const torch::Tensor q = torch::randn({2, 2, Tq, A});
    const torch::Tensor k = torch::randn({2, 2, Tk, A}), v = torch::randn({2, 2, Tk, A});
    torch::Tensor bias = torch::zeros({1, 1, byRow ? Tq : 1, Tk});
    bias.narrow(3, 0, masked).fill_(-std::numeric_limits<float>::infinity());
    const double scale = 1.0 / std::sqrt(static_cast<double>(A));
    const torch::Tensor got = blockedAttention(q, k, v, bias, scale, set);
    const torch::Tensor expected =
        test::attentionReference(q, k.narrow(2, masked, Tk - masked), v.narrow(2, masked, Tk - masked), torch::Tensor(), scale);
    QVERIFY(torch::isfinite(got).all().item<bool>());
    QVERIFY2(test::relativeError(got, expected) < kTolerance, qPrintable(QString::number(test::relativeError(got, expected))));
}

void TestBlockedAttention::widelySpreadScoresKeepTheirPrecision_data()
{
    QTest::addColumn<InstructionSet>("set");
    test::forEachKernelBuild([](InstructionSet set, auto row) { row("scores a hundred apart") << set; });
}

void TestBlockedAttention::widelySpreadScoresKeepTheirPrecision()
{
    QFETCH(InstructionSet, set);
    // Scores a hundred apart: a row's largest score comes in a later block than
    // its first, so the running sums are rescaled by exp(-100)-sized factors
    // and earlier blocks' weights must vanish, not swamp the result.
    torch::manual_seed(5);
    const std::int64_t T = 200, A = 16;
    const torch::Tensor q = torch::randn({1, 2, T, A}) * 6.0, k = torch::randn({1, 2, T, A}) * 6.0;
    const torch::Tensor v = torch::randn({1, 2, T, A});
    const torch::Tensor got = blockedAttention(q, k, v, torch::Tensor(), 1.0, set);
    const torch::Tensor expected = test::attentionReference(q, k, v, torch::Tensor(), 1.0);
    QVERIFY(torch::isfinite(got).all().item<bool>());
    QVERIFY2(test::relativeError(got, expected) < kTolerance, qPrintable(QString::number(test::relativeError(got, expected))));
}

// Under the CPU's autocast the projections hand over bf16 q, k and v. The
// kernel widens them as it reads them and rounds once as it writes: its
// answer is LibTorch's rounding of the fp32 kernel's answer on the widened
// inputs, bit for bit (ties to even; a NaN stays a NaN), and near the formula
// in double precision.
void TestBlockedAttention::bf16IsTheFp32ResultRoundedOnce_data()
{
    QTest::addColumn<int>("tokens");
    QTest::addColumn<int>("headDim");
    QTest::addColumn<InstructionSet>("set");
    test::forEachKernelBuild([](InstructionSet set, auto row) {
        row("64 tokens, A 32") << 64 << 32 << set;
        // A tile of rows and a vector of dimensions left over; A 4 reads a quarter of a vector.
        row("130 tokens, A 40") << 130 << 40 << set;
        row("37 tokens, A 4") << 37 << 4 << set;
    });
}

void TestBlockedAttention::bf16IsTheFp32ResultRoundedOnce()
{
    QFETCH(int, tokens);
    QFETCH(int, headDim);
    QFETCH(InstructionSet, set);
    torch::manual_seed(tokens + headDim);
    const std::int64_t B = 2, G = 3;
    // Laid out as the projections leave them: views of one [B, T, 3, G, A] product.
    const std::vector<torch::Tensor> parts =
        torch::randn({B, tokens, 3, G, headDim}).to(torch::kBFloat16).permute({2, 0, 3, 1, 4}).unbind(0);
    const torch::Tensor &q = parts[0], &k = parts[1], &v = parts[2];
    const torch::Tensor bias = test::additiveMask(tokens, tokens, {tokens, tokens - 9}, false);
    const double scale = 1.0 / std::sqrt(static_cast<double>(headDim));

    QVERIFY(blockedAttentionApplies(q, k, v, bias));
    const torch::Tensor got = blockedAttention(q, k, v, bias, scale, set);
    QCOMPARE(got.scalar_type(), torch::kBFloat16);
    QCOMPARE(got.sizes().vec(), q.sizes().vec());
    const torch::Tensor widened =
        blockedAttention(q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat), bias, scale, set);
    QVERIFY(torch::equal(got, widened.to(torch::kBFloat16)));
    // bf16 keeps 8 bits of a value: its rounding alone is up to 2^-9 of each.
    const double error = test::relativeError(got.to(torch::kFloat), test::attentionReference(q, k, v, bias, scale));
    QVERIFY2(error < 4e-3, qPrintable(QStringLiteral("relative error %1").arg(error)));

    // A NaN in a value reaches every row that weighs it, and stays a NaN.
    const torch::Tensor poisoned = v.clone();
    poisoned[0][0][3][0] = std::numeric_limits<float>::quiet_NaN();
    const torch::Tensor withNaN = blockedAttention(q, k, poisoned, torch::Tensor(), scale, set);
    QVERIFY(torch::isnan(withNaN[0][0].select(-1, 0)).all().item<bool>());
    QVERIFY(torch::isfinite(withNaN[1]).all().item<bool>());
}

void TestBlockedAttention::takesOnlyWhatItCanCompute()
{
    const torch::Tensor q = torch::randn({1, 2, 32, 8}), k = torch::randn({1, 2, 40, 8}), v = torch::randn({1, 2, 40, 8});
    QVERIFY(blockedAttentionApplies(q, k, v, torch::Tensor()));
    QVERIFY(blockedAttentionApplies(q, k, v, torch::zeros({1, 1, 32, 40})));
    // No gradient comes out of it: inputs that need one, under grad mode, go elsewhere.
    QVERIFY(!blockedAttentionApplies(q.clone().requires_grad_(true), k, v, torch::Tensor()));
    {
        torch::NoGradGuard noGrad;
        QVERIFY(blockedAttentionApplies(q.clone().requires_grad_(true), k, v, torch::Tensor()));
    }
    QVERIFY(!blockedAttentionApplies(q.to(torch::kDouble), k.to(torch::kDouble), v.to(torch::kDouble), torch::Tensor()));
    QVERIFY(blockedAttentionApplies(q.to(torch::kBFloat16), k.to(torch::kBFloat16), v.to(torch::kBFloat16), torch::Tensor()));
    QVERIFY(!blockedAttentionApplies(q.to(torch::kHalf), k.to(torch::kHalf), v.to(torch::kHalf), torch::Tensor()));
    // One type for q, k and v; the bias fp32 whatever theirs.
    QVERIFY(!blockedAttentionApplies(q.to(torch::kBFloat16), k, v, torch::Tensor()));
    QVERIFY(!blockedAttentionApplies(q.to(torch::kBFloat16), k.to(torch::kBFloat16), v.to(torch::kBFloat16),
                                     torch::zeros({1, 1, 32, 40}, torch::kBFloat16)));
    // A decoding step's one query is left to the products.
    QVERIFY(!blockedAttentionApplies(q.narrow(2, 0, 1), k, v, torch::Tensor()));
    // A bias that does not broadcast to [B, 1, Tq, Tk].
    QVERIFY(!blockedAttentionApplies(q, k, v, torch::zeros({1, 2, 32, 40})));
    QVERIFY(!blockedAttentionApplies(q, k, v, torch::zeros({1, 1, 32, 1})));
    QVERIFY(!blockedAttentionApplies(q, k, v, torch::zeros({1, 1, 32, 40}, torch::kDouble)));
}

void TestBlockedAttention::fullAttentionTakesItInInference()
{
    // The full mechanism in inference, without a map: it answers by the
    // blocked kernel (bit for bit), on LibTorch 2.x too before its fused
    // kernel, no [T, T] scores are made (no softmax operator runs), and the
    // context is the formula's.
    torch::manual_seed(8);
    MixInput in;
    in.q = torch::randn({2, 2, 48, 16});
    in.k = torch::randn({2, 2, 48, 16});
    in.v = torch::randn({2, 2, 48, 16});
    in.bias = test::additiveMask(48, 48, {48, 30}, false);
    const test::FullMechanismPass pass = test::fullMechanismInInference(in);
    QVERIFY(test::relativeError(pass.context, test::attentionReference(in.q, in.k, in.v, in.bias, 0.25)) < kTolerance);
    QVERIFY(torch::equal(pass.context, blockedAttention(in.q, in.k, in.v, in.bias, 0.25)));
    QVERIFY2(!pass.madeScores, "the scores were made");
}

void TestBlockedAttention::fullAttentionTakesItUnderTheCpusAutocast()
{
    // Under the CPU's autocast the projections hand the mechanism bf16 q, k and
    // v and an fp32 mask: no [T, T] scores are made for them either, where before they went through bf16 products and softmax a
    // block of heads at a time, and the context is the formula's to bf16's
    // precision: the blocked kernel's answer, bit for bit (a head dimension of
    // 16 is not the AMX kernel's, a whole 32).
    torch::manual_seed(9);
    MixInput in;
    in.q = torch::randn({2, 2, 48, 16}).to(torch::kBFloat16);
    in.k = torch::randn({2, 2, 48, 16}).to(torch::kBFloat16);
    in.v = torch::randn({2, 2, 48, 16}).to(torch::kBFloat16);
    in.bias = test::additiveMask(48, 48, {48, 30}, false);
    const test::FullMechanismPass pass = test::fullMechanismInInference(in);
    QCOMPARE(pass.context.scalar_type(), torch::kBFloat16);
    const double error = test::relativeError(pass.context, test::attentionReference(in.q, in.k, in.v, in.bias, 0.25));
    QVERIFY2(error < 1e-2, qPrintable(QStringLiteral("relative error %1").arg(error)));
    QVERIFY(torch::equal(pass.context, blockedAttention(in.q, in.k, in.v, in.bias, 0.25)));
    QVERIFY2(!pass.madeScores, "the scores were made");
}

QTEST_GUILESS_MAIN(TestBlockedAttention)
#include "tst_blockedattention.moc"
