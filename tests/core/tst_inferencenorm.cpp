// Inference's LayerNorms on the CPU (model/InferenceNorm): in fp32, a
// sublayer's output added to the residual stream in the pass that norms the
// sum; under the CPU's autocast, a norm written in bf16 as it is computed.
// Every build against the formula in double precision and against LibTorch's
// own LayerNorm, for widths that are not a whole vector and rows laid out
// apart; what each takes; and models taking them.
#include "KernelBuilds.h"
#include "TestSupport.h"
#include "model/InferenceNorm.h"
#include "model/WideTransformer.h"
#include "runtime/Autocast.h"
#include "runtime/OperatorCount.h"

#include <QtTest>

using namespace widelab;

class TestInferenceNorm : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(2); }
    void addsThenNormsAsTwoOperatorsWould_data();
    void addsThenNormsAsTwoOperatorsWould();
    void aRowWorkedByHand();
    void equalsLayerNormRoundedOnce_data();
    void equalsLayerNormRoundedOnce();
    void takesOnlyWhatItCanCompute();
    void aDenseModelNormsInBf16UnderAutocast();
    void aModelInInferenceAddsInItsNorms();
};

void TestInferenceNorm::addsThenNormsAsTwoOperatorsWould_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("width");
    QTest::addColumn<bool>("apart");  // rows of h and the addend laid out further apart than their width
    QTest::addColumn<bool>("addend");
    QTest::addColumn<InstructionSet>("set");
    test::forEachKernelBuild([](InstructionSet set, auto row) {
        row("a model's width, 256") << 300 << 256 << false << true << set;
        row("a width of 37, not a whole vector") << 50 << 37 << false << true << set;
        row("a width of one") << 6 << 1 << false << true << set;
        row("rows apart, width 48") << 40 << 48 << true << true << set;
        row("no addend: the norm alone") << 64 << 256 << false << false << set;
        row("no addend, rows apart") << 10 << 40 << true << false << set;
    });
}

void TestInferenceNorm::addsThenNormsAsTwoOperatorsWould()
{
    QFETCH(int, rows);
    QFETCH(int, width);
    QFETCH(bool, apart);
    QFETCH(bool, addend);
    QFETCH(InstructionSet, set);
    torch::manual_seed(rows * 7 + width);
    const std::int64_t stride = apart ? width + 5 : width;
    // [2, rows / 2, width] (rows even) as a residual stream is [B, T, D]; an offset and spread as it has them.
    const torch::Tensor h = (torch::randn({rows, stride}) * 3.0 + 1.5).narrow(1, 0, width).view({-1, rows / 2, width});
    const torch::Tensor out =
        addend ? (torch::randn({rows, stride}) * 0.5).narrow(1, 0, width).view({-1, rows / 2, width}) : torch::Tensor();
    const torch::Tensor weight = torch::randn({width}), bias = torch::randn({width});
    const NormedResidual got = residualNorm(h, out, weight, bias, 1e-5, set);

    const torch::Tensor sum = addend ? h + out : h;
    QCOMPARE(got.sum.sizes().vec(), h.sizes().vec());
    QCOMPARE(got.normed.sizes().vec(), h.sizes().vec());
    QCOMPARE(got.normed.scalar_type(), torch::kFloat);
    QVERIFY(got.normed.is_contiguous());
    // Each element of the sum is one fp32 addition, as LibTorch's.
    QVERIFY(torch::equal(got.sum, sum));
    // LayerNorm of the sum in double precision; fp32's sums of 256 add a few 1e-7.
    const torch::Tensor exact = torch::layer_norm(sum.to(torch::kDouble), {width}, weight.to(torch::kDouble),
                                                  bias.to(torch::kDouble), 1e-5);
    const double worst = (got.normed.to(torch::kDouble) - exact).abs().max().item<double>();
    const double scale = exact.abs().max().item<double>();
    QVERIFY2(worst < 2e-6 * std::max(1.0, scale), qPrintable(QStringLiteral("off by %1").arg(worst)));
    // LibTorch's fp32 LayerNorm: at width one its moments leave x - mean a
    // rounding away from zero (its answer 4e-5 off the bias, which is exact).
    if (width == 1)
        return;
    const double fromTorch =
        (got.normed - torch::layer_norm(sum, {width}, weight, bias, 1e-5)).abs().max().item<double>();
    QVERIFY2(fromTorch < 2e-6 * std::max(1.0, scale), qPrintable(QStringLiteral("off LibTorch's by %1").arg(fromTorch)));
}

void TestInferenceNorm::aRowWorkedByHand()
{
    // h = (1, 2, 3, 4) plus (1, 0, 1, 2) is (2, 2, 4, 6): mean 3.5, centred
    // (-1.5, -1.5, 0.5, 2.5), biased variance (2.25 + 2.25 + 0.25 + 6.25) / 4 =
    // 2.75; weight 2 and bias 1 make 1 + 2 (x - 3.5) / sqrt(2.75 + eps).
    const torch::Tensor h = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({1, 4});
    const torch::Tensor addend = torch::tensor({1.0f, 0.0f, 1.0f, 2.0f}).view({1, 4});
    const torch::Tensor weight = torch::full({4}, 2.0f), bias = torch::ones({4});
    for (const InstructionSet set : test::kernelBuilds()) {
        const NormedResidual got = residualNorm(h, addend, weight, bias, 0.25, set);
        QVERIFY(torch::equal(got.sum, torch::tensor({2.0f, 2.0f, 4.0f, 6.0f}).view({1, 4})));
        const double root = std::sqrt(2.75 + 0.25);  // eps 0.25 makes it sqrt(3)
        const std::vector<double> expected{1 - 3.0 / root, 1 - 3.0 / root, 1 + 1.0 / root, 1 + 5.0 / root};
        for (int j = 0; j < 4; ++j)
            QVERIFY2(std::abs(got.normed[0][j].item<double>() - expected[static_cast<std::size_t>(j)]) < 1e-6,
                     qPrintable(QStringLiteral("%1, element %2").arg(instructionSetName(set)).arg(j)));
    }
}

void TestInferenceNorm::equalsLayerNormRoundedOnce_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("width");
    QTest::addColumn<bool>("apart");  // rows laid out further apart than their width
    QTest::addColumn<InstructionSet>("set");
    test::forEachKernelBuild([](InstructionSet set, auto row) {
        row("a model's width, 256") << 300 << 256 << false << set;
        row("a width of 37, not a whole vector") << 50 << 37 << false << set;
        row("a width of one") << 5 << 1 << false << set;
        row("rows apart, width 48") << 40 << 48 << true << set;
    });
}

void TestInferenceNorm::equalsLayerNormRoundedOnce()
{
    QFETCH(int, rows);
    QFETCH(int, width);
    QFETCH(bool, apart);
    QFETCH(InstructionSet, set);
    torch::manual_seed(rows + width);
    // An offset and spread as a residual stream has them.
    const torch::Tensor wide = torch::randn({rows, apart ? width + 11 : width}) * 3.0 + 1.5;
    const torch::Tensor x = wide.narrow(1, 0, width);
    const torch::Tensor weight = torch::randn({width}), bias = torch::randn({width});
    const torch::Tensor got = normToBf16(x, weight, bias, 1e-5, set);
    QCOMPARE(got.scalar_type(), torch::kBFloat16);
    QCOMPARE(got.sizes().vec(), x.sizes().vec());

    const torch::Tensor exact = torch::layer_norm(x.to(torch::kDouble), {width}, weight.to(torch::kDouble),
                                                  bias.to(torch::kDouble), 1e-5);
    // bf16 rounds to within 2^-8 of a value; fp32's sums add a few 1e-7.
    const double worst = ((got.to(torch::kDouble) - exact).abs() - exact.abs() * std::ldexp(1.0, -8))
                             .max()
                             .item<double>();
    QVERIFY2(worst < 1e-5, qPrintable(QStringLiteral("beyond bf16's rounding by %1").arg(worst)));

    // LibTorch's fp32 LayerNorm cast to bf16 (what autocast did): the same
    // bits but where fp32's last bits fall on the other side of a tie.
    const torch::Tensor cast = torch::layer_norm(x, {width}, weight, bias, 1e-5).to(torch::kBFloat16);
    const double differing = got.ne(cast).to(torch::kDouble).mean().item<double>();
    QVERIFY2(differing < 0.01, qPrintable(QStringLiteral("%1 of the elements differ").arg(differing)));
}

void TestInferenceNorm::takesOnlyWhatItCanCompute()
{
    const torch::Tensor x = torch::randn({4, 6}), weight = torch::randn({6}), bias = torch::randn({6});
    {
        torch::NoGradGuard inference;
        QVERIFY(residualNormApplies(x, torch::randn({4, 6}), weight, bias));
        QVERIFY(residualNormApplies(x, torch::Tensor(), weight, bias));
        QVERIFY(!residualNormApplies(x, torch::randn({4, 5}), weight, bias));  // not h's shape
        QVERIFY(!residualNormApplies(x, torch::randn({2, 4, 6}), weight, bias));
        QVERIFY(!residualNormApplies(x, torch::randn({4, 6}).to(torch::kBFloat16), weight, bias));
        QVERIFY(!residualNormApplies(x.to(torch::kDouble), torch::Tensor(), weight, bias));
        QVERIFY(!residualNormApplies(x, torch::Tensor(), torch::randn({5}), bias));
        QVERIFY(!residualNormApplies(x, torch::Tensor(), weight, torch::Tensor()));
        const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
        QVERIFY(!residualNormApplies(x, torch::Tensor(), weight, bias));  // normToBf16's, or LibTorch's
    }
    QVERIFY(!residualNormApplies(x, torch::Tensor(), weight, bias));  // training: LibTorch's, which autograd knows
    bool refusedResidual = false;
    try {
        residualNorm(x, torch::randn({3, 6}), weight, bias, 1e-5);
    } catch (const std::invalid_argument& e) {
        refusedResidual = QString(e.what()).contains("residualNorm");
    }
    QVERIFY(refusedResidual);
    {
        torch::NoGradGuard inference;
        QVERIFY(!normToBf16Applies(x, weight, bias));  // no autocast: LibTorch's fp32 LayerNorm
        const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
        QVERIFY(normToBf16Applies(x, weight, bias));
        QVERIFY(!normToBf16Applies(x.to(torch::kDouble), weight, bias));
        QVERIFY(!normToBf16Applies(x, torch::randn({5}), bias));
        QVERIFY(!normToBf16Applies(x, weight, torch::Tensor()));
        QVERIFY(!normToBf16Applies(x, weight.to(torch::kBFloat16), bias));
    }
    {
        const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
        QVERIFY(!normToBf16Applies(x, weight, bias));  // training: LibTorch's, which autograd knows
    }
    bool refused = false;
    try {
        normToBf16(x.to(torch::kDouble), weight, bias, 1e-5);
    } catch (const std::invalid_argument& e) {
        refused = QString(e.what()).contains("normToBf16");
    }
    QVERIFY(refused);
}

void TestInferenceNorm::aDenseModelNormsInBf16UnderAutocast()
{
    // Under the CPU's autocast a dense model's block norms feed only products
    // and are written in bf16 (LibTorch's LayerNorm runs only for the final
    // norm), and it answers as in fp32 to bf16's precision. A mixture's FFN
    // norms stay fp32, for its router (its logits are not compared: in a model
    // this small, bf16's rounding alone moves tokens between experts, 11 % of
    // the logits' norm with this fast path off as on).
    const auto config = [](const std::string& overrides) {
        return test::modelConfig(R"({"vocab_size": 17, "max_len": 20, "d_model": 32, "heads": 2, "head_dim": 16,
                                     "ffn_dim": 48, "layers": 3, "dropout": 0.0, "num_classes": 3})",
                                 overrides);
    };
    for (const auto& [overrides, torchNorms] :
         std::vector<std::pair<std::string, std::int64_t>>{{"{}", 1}, {R"({"experts": 4, "top_k": 2})", 4}}) {
        const bool dense = torchNorms == 1;
        torch::manual_seed(11);
        WideTransformer model(config(overrides));
        model->eval();
        const torch::Tensor ids = torch::randint(17, {4, 19}, torch::kLong);
        torch::NoGradGuard inference;
        const torch::Tensor fp32 = model->forward(ids).logits;
        const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
        OperatorTally tally;
        torch::Tensor logits;
        {
            const OperatorCounter counter;
            logits = model->forward(ids).logits;
            tally = counter.tally();
        }
        const std::int64_t norms = tally.byName.count("aten::layer_norm") ? tally.byName.at("aten::layer_norm") : 0;
        QCOMPARE(norms, torchNorms);
        QVERIFY(torch::isfinite(logits.to(torch::kFloat)).all().item<bool>());
        const double error = test::relativeError(logits.to(torch::kFloat), fp32);
        QVERIFY2(!dense || error < 3e-2, qPrintable(QStringLiteral("%1: relative error %2").arg(overrides.c_str()).arg(error)));
    }
}

void TestInferenceNorm::aModelInInferenceAddsInItsNorms()
{
    // In inference in fp32 a block's LayerNorms are WideLab's and add the
    // sublayer before them: of a 3-block single-path model's six residual
    // additions five happen in the norm after them, and the last one stays an
    // addition (the final LayerNorm is the model's own, LibTorch's). The
    // logits equal those of the same model with the gradient on (LibTorch's
    // norms and additions), for a classifier read at its CLS token (whose last
    // block takes one row), one read by the mean, a mixture (its FFN norm fp32
    // for the router) and two paths (norms only, each addition a combination).
    const auto config = [](const std::string& overrides) {
        return test::modelConfig(R"({"vocab_size": 17, "max_len": 20, "d_model": 40, "heads": 2, "head_dim": 16,
                                     "ffn_dim": 48, "layers": 3, "dropout": 0.1, "num_classes": 3})",
                                 overrides);
    };
    const auto count = [](const OperatorTally& tally, const char* name) -> std::int64_t {
        return tally.byName.count(name) ? tally.byName.at(name) : 0;
    };
    for (const char* overrides : {R"({"pooling": "cls"})", R"({"pooling": "mean"})",
                                  R"({"experts": 4, "top_k": 2})", R"({"paths": 2})"}) {
        torch::manual_seed(5);
        WideTransformer model(config(overrides));
        model->eval();
        const torch::Tensor ids = torch::randint(1, 17, {3, 19}, torch::kLong);
        OperatorTally withGradient, inference;
        torch::Tensor reference, logits;
        {
            const OperatorCounter counter;
            reference = model->forward(ids).logits.detach();
            withGradient = counter.tally();
        }
        {
            torch::NoGradGuard noGradient;
            const OperatorCounter counter;
            logits = model->forward(ids).logits;
            inference = counter.tally();
        }
        const double error = test::relativeError(logits, reference);
        QVERIFY2(error < 1e-5, qPrintable(QStringLiteral("%1: relative error %2").arg(overrides).arg(error)));
        QCOMPARE(count(inference, "aten::layer_norm"), 1);  // the final norm
        QCOMPARE(count(withGradient, "aten::layer_norm"), 7);
        if (std::string(overrides).find("paths") == std::string::npos)
            QCOMPARE(count(withGradient, "aten::add") - count(inference, "aten::add"), 5);
    }
}

QTEST_GUILESS_MAIN(TestInferenceNorm)
#include "tst_inferencenorm.moc"
