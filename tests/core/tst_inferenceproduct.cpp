// Inference's projections by oneDNN's matmul on the CPU
// (model/InferenceProduct): a product worked by hand with its bias and each
// activation; shapes and layouts as the model hands them over (a Linear
// weight's transpose, rows of a wider tensor, a transposed left operand)
// against the formula in double precision; what it refuses; and a Linear
// layer answering in inference as in training (the feed-forward layer's own
// check is tst_biasactivation's, whose shared layer takes this path here).
// Skipped, saying so, in a build without oneDNN.
#include "TestSupport.h"
#include "model/BatchedMatmul.h"
#include "model/InferenceProduct.h"
#include "runtime/Autocast.h"
#include "runtime/Runtime.h"

#include <QtTest>

#include <torch/nn/modules/linear.h>

using namespace widelab;

namespace {

// act(a b + bias) in double precision, from the definitions: GELU z Phi(z)
// with Phi(z) = (1 + erf(z / sqrt 2)) / 2, SiLU z / (1 + e^-z).
torch::Tensor reference(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                        std::optional<Activation> activation)
{
    torch::Tensor z = torch::mm(a.to(torch::kDouble), b.to(torch::kDouble));
    if (bias.defined())
        z = z + bias.to(torch::kDouble);
    if (!activation)
        return z;
    switch (*activation) {
    case Activation::Relu: return z.clamp_min(0.0);
    case Activation::Silu: return z / (1.0 + torch::exp(-z));
    case Activation::Gelu: break;
    }
    return z * 0.5 * (1.0 + torch::erf(z / std::sqrt(2.0)));
}

bool built() { return !oneDnnVersion().empty(); }

}  // namespace

class TestInferenceProduct : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void multipliesAsByHand();
    void equalsTheDoublePrecisionFormula_data();
    void equalsTheDoublePrecisionFormula();
    void takesOnlyWhatItCanCompute();
    void aLinearLayerAnswersAsInTraining();
};

void TestInferenceProduct::init()
{
    if (!built())
        QSKIP("built without oneDNN (libdnnl-dev): inference's products go to LibTorch's BLAS");
}

void TestInferenceProduct::multipliesAsByHand()
{
    // a b = [[1*1 + 2*0, 1*0 + 2*1, 1*-1 + 2*2], [3, 4, 3*-1 + 4*2]] = [[1, 2, 3], [3, 4, 5]];
    // + bias [0.5, -3, 0] = [[1.5, -1, 3], [3.5, 1, 5]].
    torch::NoGradGuard inference;
    const torch::Tensor a = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({2, 2});
    const torch::Tensor b = torch::tensor({1.0f, 0.0f, -1.0f, 0.0f, 1.0f, 2.0f}).view({2, 3});
    const torch::Tensor bias = torch::tensor({0.5f, -3.0f, 0.0f});
    QVERIFY(inferenceProductApplies(a, b, bias));
    const torch::Tensor plain = torch::tensor({1.5f, -1.0f, 3.0f, 3.5f, 1.0f, 5.0f}).view({2, 3});
    QVERIFY(torch::equal(inferenceProduct(a, b, bias), plain));
    QVERIFY(torch::equal(inferenceProduct(a, b, {}), torch::tensor({1.0f, 2.0f, 3.0f, 3.0f, 4.0f, 5.0f}).view({2, 3})));
    // ReLU: the -1 becomes 0. GELU(-1) = -(1 - Phi(1)) = -0.1586552539 (Phi(1) = 0.8413447461,
    // tables of the normal distribution); SiLU(-1) = -1 / (1 + e) = -0.2689414214.
    const torch::Tensor relu = inferenceProduct(a, b, bias, Activation::Relu);
    QCOMPARE(relu[0][1].item<float>(), 0.0f);
    QCOMPARE(relu[1][2].item<float>(), 5.0f);
    QVERIFY(std::abs(inferenceProduct(a, b, bias, Activation::Gelu)[0][1].item<double>() + 0.1586552539) < 1e-6);
    QVERIFY(std::abs(inferenceProduct(a, b, bias, Activation::Silu)[0][1].item<double>() + 0.2689414214) < 1e-6);
}

void TestInferenceProduct::equalsTheDoublePrecisionFormula_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("inner");
    QTest::addColumn<int>("columns");
    QTest::addColumn<QString>("layout");
    QTest::addColumn<bool>("withBias");
    QTest::addColumn<int>("activation");  // -1: none, else an Activation

    QTest::newRow("a projection, the weight's transpose") << 257 << 64 << 192 << "weight" << true << -1;
    QTest::newRow("no bias") << 33 << 40 << 24 << "weight" << false << -1;
    QTest::newRow("rows of a wider tensor") << 50 << 32 << 96 << "narrowed" << true << -1;
    QTest::newRow("a transposed left operand") << 17 << 48 << 20 << "transposed" << true << -1;
    QTest::newRow("both contiguous") << 9 << 7 << 5 << "plain" << true << -1;
    QTest::newRow("two rows") << 2 << 256 << 768 << "weight" << true << -1;
    QTest::newRow("a feed-forward layer's GELU") << 65 << 32 << 128 << "weight" << true
                                                 << static_cast<int>(Activation::Gelu);
    QTest::newRow("SiLU") << 40 << 24 << 72 << "weight" << true << static_cast<int>(Activation::Silu);
    QTest::newRow("ReLU") << 40 << 24 << 72 << "weight" << true << static_cast<int>(Activation::Relu);
}

void TestInferenceProduct::equalsTheDoublePrecisionFormula()
{
    QFETCH(int, rows);
    QFETCH(int, inner);
    QFETCH(int, columns);
    QFETCH(QString, layout);
    QFETCH(bool, withBias);
    QFETCH(int, activation);

    torch::NoGradGuard inference;
    torch::manual_seed(11);
    torch::Tensor a = torch::randn({rows, inner}), b = torch::randn({inner, columns});
    if (layout == "weight") {
        b = torch::randn({columns, inner}).t();  // a Linear weight [out, in] seen as [in, out]
    } else if (layout == "narrowed") {
        a = torch::randn({rows, inner + 13}).narrow(1, 5, inner);  // row stride inner + 13
    } else if (layout == "transposed") {
        a = torch::randn({inner, rows}).t();
    }
    const torch::Tensor bias = withBias ? torch::randn({columns}) : torch::Tensor();
    const std::optional<Activation> act =
        activation < 0 ? std::nullopt : std::optional<Activation>(static_cast<Activation>(activation));
    QVERIFY(inferenceProductApplies(a, b, bias));
    const torch::Tensor got = inferenceProduct(a, b, bias, act);
    QCOMPARE(got.size(0), static_cast<std::int64_t>(rows));
    QCOMPARE(got.size(1), static_cast<std::int64_t>(columns));
    QVERIFY(got.is_contiguous());
    // fp32 sums of up to 256 products of N(0, 1) values, against the double
    // formula: relative to the sum of the products' magnitudes, under 1e-6.
    const torch::Tensor want = reference(a, b, bias, act);
    torch::Tensor scale = torch::mm(a.abs().to(torch::kDouble), b.abs().to(torch::kDouble)) + 1.0;
    if (withBias)
        scale = scale + bias.abs().to(torch::kDouble);
    const double worst = ((got.to(torch::kDouble) - want).abs() / scale).max().item<double>();
    QVERIFY2(worst < 1e-6, qPrintable(QStringLiteral("largest error %1").arg(worst)));
}

void TestInferenceProduct::takesOnlyWhatItCanCompute()
{
    const torch::Tensor a = torch::randn({6, 4}), b = torch::randn({4, 5}), bias = torch::randn({5});
    QVERIFY(!inferenceProductApplies(a, b, bias));  // training: LibTorch's ops, which autograd knows
    torch::NoGradGuard inference;
    QVERIFY(inferenceProductApplies(a, b, bias));
    QVERIFY(inferenceProductApplies(a, b, {}));
    QVERIFY(!inferenceProductApplies(a.to(torch::kDouble), b.to(torch::kDouble), {}));
    QVERIFY(!inferenceProductApplies(a.to(torch::kBFloat16), b.to(torch::kBFloat16), {}));
    QVERIFY(!inferenceProductApplies(a, b, bias.to(torch::kDouble)));
    QVERIFY(!inferenceProductApplies(a, b, torch::randn({1, 5})));        // a bias of one row, not [N]
    QVERIFY(!inferenceProductApplies(a, b, torch::randn({4})));           // a bias of the wrong width
    QVERIFY(!inferenceProductApplies(a, torch::randn({3, 5}), bias));     // inner sizes that differ
    QVERIFY(!inferenceProductApplies(torch::randn({6, 4, 2}).select(2, 0), b, bias));  // neither stride 1
    QVERIFY(!inferenceProductApplies(torch::randn({2, 6, 4}), b, bias));  // not a matrix
    QVERIFY(!inferenceProductApplies(torch::randn({0, 4}), b, bias));     // no rows
    QVERIFY(!inferenceProductApplies(torch::randn({1, 4}), b, bias));     // one row: the BLAS's gemv
    {
        // Under the CPU's autocast products come out in bf16: LibTorch's, not this.
        const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
        QVERIFY(!inferenceProductApplies(a, b, bias));
    }
}

void TestInferenceProduct::aLinearLayerAnswersAsInTraining()
{
    // linearLayer takes the product for a [B, T, in] input in inference, and
    // LibTorch's linear with gradients on: the same answer, shaped alike.
    torch::manual_seed(5);
    torch::nn::Linear layer(16, 48);
    const torch::Tensor x = torch::randn({3, 7, 16});
    const torch::Tensor trained = linearLayer(layer, x).detach();
    torch::NoGradGuard inference;
    QVERIFY(inferenceProductApplies(x.view({-1, 16}), layer->weight.t(), layer->bias));
    const torch::Tensor inferred = linearLayer(layer, x);
    QVERIFY(inferred.sizes() == trained.sizes());
    QVERIFY(torch::allclose(inferred, trained, 1e-5, 1e-5));
}

QTEST_GUILESS_MAIN(TestInferenceProduct)
#include "tst_inferenceproduct.moc"
