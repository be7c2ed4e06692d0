// A feed-forward layer's first bias and activation in one pass
// (model/BiasActivation): hand-known values of GELU, SiLU and ReLU; every
// build against the formulas in double precision, for widths that are not a
// whole vector, batches with a bias each, and arguments where erf and e^x
// leave their middle range; what it refuses; and the feed-forward layer,
// which takes it for inference, answering as it does in training; bf16, as
// the CPU's autocast hands it over, equal to fp32's answer rounded once.
#include "KernelBuilds.h"
#include "TestSupport.h"
#include "model/BiasActivation.h"
#include "model/FeedForward.h"
#include "runtime/Autocast.h"
#include "runtime/OperatorCount.h"

#include <QtTest>

using namespace widelab;

Q_DECLARE_METATYPE(widelab::Activation)

namespace {

// The activations in double precision, from their definitions: GELU z Phi(z)
// with Phi(z) = (1 + erf(z / sqrt 2)) / 2, SiLU z / (1 + e^-z).
torch::Tensor reference(const torch::Tensor& z, Activation activation)
{
    const torch::Tensor d = z.to(torch::kDouble);
    switch (activation) {
    case Activation::Relu: return d.clamp_min(0.0);
    case Activation::Silu: return d / (1.0 + torch::exp(-d));
    case Activation::Gelu: break;
    }
    return d * 0.5 * (1.0 + torch::erf(d / std::sqrt(2.0)));
}

const char* nameOf(Activation activation)
{
    switch (activation) {
    case Activation::Relu: return "relu";
    case Activation::Silu: return "silu";
    case Activation::Gelu: break;
    }
    return "gelu";
}

}  // namespace

class TestBiasActivation : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void activatesAsByHand();
    void equalsTheDoublePrecisionFormula_data();
    void equalsTheDoublePrecisionFormula();
    void writesOverTheProductAndReturnsIt();
    void takesOnlyWhatItCanCompute();
    void theFeedForwardLayerAnswersAsInTraining();
    void bf16IsTheFp32ResultRoundedOnce_data();
    void bf16IsTheFp32ResultRoundedOnce();
    void theLayerTakesItUnderTheCpusAutocast();
};

void TestBiasActivation::activatesAsByHand()
{
    // z = x + bias = [-2, -1, 0, 1, 2]. Phi(1) = 0.8413447461, Phi(2) = 0.9772498681
    // (tables of the normal distribution); sigmoid(1) = 0.7310585786, sigmoid(2) = 0.8807970780.
    const torch::Tensor x = torch::tensor({-1.5f, -1.0f, 0.5f, 0.0f, 3.0f}).view({1, 5});
    const torch::Tensor bias = torch::tensor({-0.5f, 0.0f, -0.5f, 1.0f, -1.0f});
    const std::vector<std::pair<Activation, std::vector<double>>> expected = {
        {Activation::Relu, {0.0, 0.0, 0.0, 1.0, 2.0}},
        {Activation::Gelu, {-2 * (1 - 0.9772498681), -(1 - 0.8413447461), 0.0, 0.8413447461, 2 * 0.9772498681}},
        {Activation::Silu, {-2 * (1 - 0.8807970780), -(1 - 0.7310585786), 0.0, 0.7310585786, 2 * 0.8807970780}},
    };
    for (const InstructionSet set : test::kernelBuilds())
        for (const auto& [activation, values] : expected) {
            const torch::Tensor got = biasActivation(x.clone(), bias, activation, set);
            const torch::Tensor want = torch::tensor(values, torch::kDouble).view({1, 5});
            QVERIFY2(torch::allclose(got.to(torch::kDouble), want, 0.0, 1e-6),
                     qPrintable(QStringLiteral("%1, %2").arg(nameOf(activation), instructionSetName(set))));
        }
}

// Each shape for every build this CPU runs, each activation.
void TestBiasActivation::equalsTheDoublePrecisionFormula_data()
{
    QTest::addColumn<int>("units");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("width");
    QTest::addColumn<bool>("biasPerUnit");
    QTest::addColumn<double>("spread");
    QTest::addColumn<Activation>("activation");
    QTest::addColumn<InstructionSet>("set");

    test::forEachKernelBuild([](InstructionSet set, auto row) {
        for (const Activation a : {Activation::Gelu, Activation::Silu, Activation::Relu}) {
            const auto named = [&](const char* shape) -> QTestData& {
                return row(QByteArray(nameOf(a)).append(": ").append(shape).constData());
            };
            named("a dense layer, 64 x 1024") << 0 << 64 << 1024 << false << 3.0 << a << set;
            named("a width of one") << 0 << 5 << 1 << false << 3.0 << a << set;
            named("a width of 37, not a whole vector") << 0 << 9 << 37 << false << 3.0 << a << set;
            named("4 experts, a bias each") << 4 << 7 << 40 << true << 3.0 << a << set;
            named("3 paths, one bias for all") << 3 << 5 << 24 << false << 3.0 << a << set;
            named("arguments in the tens") << 0 << 16 << 64 << false << 20.0 << a << set;
        }
    });
}

void TestBiasActivation::equalsTheDoublePrecisionFormula()
{
    QFETCH(int, units);
    QFETCH(int, rows);
    QFETCH(int, width);
    QFETCH(bool, biasPerUnit);
    QFETCH(double, spread);
    QFETCH(Activation, activation);
    QFETCH(InstructionSet, set);

    torch::manual_seed(7);
    const torch::Tensor x = units == 0 ? torch::randn({rows, width}) * spread
                                       : torch::randn({units, rows, width}) * spread;
    const torch::Tensor bias = biasPerUnit ? torch::randn({units, width}) * spread : torch::randn({width}) * spread;
    const torch::Tensor z = units == 0 || !biasPerUnit ? x + bias : x + bias.unsqueeze(1);
    const torch::Tensor got = biasActivation(x.clone(), bias, activation, set);
    // erf to 1.5e-7 and e^x to 2 ulp, then fp32 rounding: 1e-6 of the value, and 1e-6 near zero.
    const torch::Tensor want = reference(z, activation);
    const double worst = ((got.to(torch::kDouble) - want).abs() / (want.abs() + 1.0)).max().item<double>();
    QVERIFY2(worst < 1e-6, qPrintable(QStringLiteral("largest error %1").arg(worst)));
}

void TestBiasActivation::writesOverTheProductAndReturnsIt()
{
    const torch::Tensor product = torch::tensor({-1.0f, 2.0f}).view({1, 2});
    const torch::Tensor got = biasActivation(product, torch::zeros({2}), Activation::Relu);
    QVERIFY(got.is_same(product));
    QCOMPARE(product[0][0].item<float>(), 0.0f);
    QCOMPARE(product[0][1].item<float>(), 2.0f);
}

void TestBiasActivation::takesOnlyWhatItCanCompute()
{
    const torch::Tensor x = torch::randn({4, 6}), bias = torch::randn({6});
    {
        torch::NoGradGuard inference;
        QVERIFY(biasActivationApplies(x, bias));
        QVERIFY(!biasActivationApplies(x.to(torch::kDouble), bias.to(torch::kDouble)));
        QVERIFY(!biasActivationApplies(x.to(torch::kBFloat16), bias));
    }
    QVERIFY(!biasActivationApplies(x, bias));  // training: LibTorch's ops, which autograd knows

    auto refuses = [](const torch::Tensor& product, const torch::Tensor& b) {
        try {
            biasActivation(product, b, Activation::Gelu);
        } catch (const std::invalid_argument& e) {
            return QString(e.what()).contains("biasActivation");
        }
        return false;
    };
    QVERIFY(refuses(x, torch::randn({5})));                   // the bias's width differs
    QVERIFY(refuses(x, torch::randn({4, 6})));                // a bias per unit, but no units
    QVERIFY(refuses(x.t(), torch::randn({4})));               // not contiguous
    QVERIFY(refuses(x.to(torch::kDouble), bias.to(torch::kDouble)));
    QVERIFY(refuses(torch::randn({6}), bias));                // no rows
    QVERIFY(refuses(torch::randn({2, 4, 6}), torch::randn({3, 6})));  // 3 biases for 2 units
    QVERIFY(refuses(x.to(torch::kBFloat16), bias));          // a bf16 product takes a bf16 bias
}

void TestBiasActivation::theFeedForwardLayerAnswersAsInTraining()
{
    // The same layer and input: with gradients on it takes addmm and the
    // activation; for inference the product without its bias and the kernel.
    torch::manual_seed(3);
    for (const Activation activation : {Activation::Gelu, Activation::Silu, Activation::Relu}) {
        FeedForward ffn(2, 16, 40, activation);
        {
            torch::NoGradGuard noGrad;
            for (torch::Tensor& p : ffn->parameters())
                p.normal_();
        }
        const torch::Tensor x = torch::randn({9, 16}), each = torch::randn({2, 5, 16});
        const torch::Tensor trainedShared = ffn->forwardShared(x).detach(), trainedEach = ffn->forwardEach(each).detach();
        torch::NoGradGuard inference;
        QVERIFY(biasActivationApplies(x, ffn->bIn));
        QVERIFY2(torch::allclose(ffn->forwardShared(x), trainedShared, 1e-5, 1e-4), nameOf(activation));
        QVERIFY2(torch::allclose(ffn->forwardEach(each), trainedEach, 1e-5, 1e-4), nameOf(activation));
    }
}

// bf16 products and biases (the CPU's autocast makes both) are widened as
// they are read and rounded once, ties to even: the answer is LibTorch's
// rounding of the fp32 build's answer on the widened inputs, bit for bit.
void TestBiasActivation::bf16IsTheFp32ResultRoundedOnce_data()
{
    QTest::addColumn<int>("units");
    QTest::addColumn<int>("width");
    QTest::addColumn<Activation>("activation");
    QTest::addColumn<InstructionSet>("set");
    test::forEachKernelBuild([](InstructionSet set, auto row) {
        for (const Activation a : {Activation::Gelu, Activation::Silu, Activation::Relu}) {
            const auto named = [&](const char* shape) -> QTestData& {
                return row(QByteArray(nameOf(a)).append(": ").append(shape).constData());
            };
            named("a width of 1024") << 0 << 1024 << a << set;
            named("a width of 37, not a whole vector") << 0 << 37 << a << set;
            named("3 experts, a bias each") << 3 << 40 << a << set;
        }
    });
}

void TestBiasActivation::bf16IsTheFp32ResultRoundedOnce()
{
    QFETCH(int, units);
    QFETCH(int, width);
    QFETCH(Activation, activation);
    QFETCH(InstructionSet, set);
    torch::manual_seed(width + units);
    const torch::Tensor product =
        (units == 0 ? torch::randn({11, width}) : torch::randn({units, 11, width})).mul(3.0).to(torch::kBFloat16);
    const torch::Tensor bias =
        (units == 0 ? torch::randn({width}) : torch::randn({units, width})).to(torch::kBFloat16);
    const torch::Tensor got = biasActivation(product.clone(), bias, activation, set);
    QCOMPARE(got.scalar_type(), torch::kBFloat16);
    const torch::Tensor widened = biasActivation(product.to(torch::kFloat), bias.to(torch::kFloat), activation, set);
    QVERIFY(torch::equal(got, widened.to(torch::kBFloat16)));
    // And near the formula: bf16 keeps 8 bits.
    const torch::Tensor z = product.to(torch::kDouble) + (units == 0 ? bias : bias.unsqueeze(1)).to(torch::kDouble);
    const torch::Tensor want = reference(z, activation);
    const double worst = ((got.to(torch::kDouble) - want).abs() / (want.abs() + 1.0)).max().item<double>();
    QVERIFY2(worst < 4e-3, qPrintable(QStringLiteral("largest error %1").arg(worst)));
}

void TestBiasActivation::theLayerTakesItUnderTheCpusAutocast()
{
    // Under the CPU's autocast the product and autocast's copy of the bias are
    // bf16: the layer takes the kernel (no GELU operator runs; before, bf16's
    // GELU in 1.13 was a fifth of a 6x8 model's inference outside the
    // products) and answers in bf16, near its fp32 answer.
    torch::manual_seed(4);
    FeedForward ffn(2, 16, 32, Activation::Gelu);
    const torch::Tensor x = torch::randn({6, 16}), each = torch::randn({2, 3, 16});
    torch::NoGradGuard inference;
    const torch::Tensor fp32Shared = ffn->forwardShared(x), fp32Each = ffn->forwardEach(each);
    const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
    QVERIFY(biasActivationApplies(x, autocastWeight(ffn->bIn)));
    QVERIFY(!biasActivationApplies(x, ffn->bIn));  // an fp32 bias beside a bf16 product
    OperatorTally tally;
    torch::Tensor shared, perUnit;
    {
        const OperatorCounter counter;
        shared = ffn->forwardShared(x);
        perUnit = ffn->forwardEach(each);
        tally = counter.tally();
    }
    QCOMPARE(tally.innermostByName().count("aten::gelu"), std::size_t{0});
    QCOMPARE(shared.scalar_type(), torch::kBFloat16);
    QVERIFY(torch::allclose(shared.to(torch::kFloat), fp32Shared, 5e-2, 5e-2));
    QVERIFY(torch::allclose(perUnit.to(torch::kFloat), fp32Each, 5e-2, 5e-2));
}

QTEST_GUILESS_MAIN(TestBiasActivation)
#include "tst_biasactivation.moc"
