// A LayerNorm written in bf16 as it is computed (model/NormToBf16), for
// inference under the CPU's autocast: every build against the formula in
// double precision and against LibTorch's fp32 LayerNorm cast to bf16, for
// widths that are not a whole vector and rows laid out apart; what it takes;
// and a model under autocast taking it where its norms feed only products.
#include "KernelBuilds.h"
#include "TestSupport.h"
#include "model/NormToBf16.h"
#include "model/WideTransformer.h"
#include "runtime/Autocast.h"
#include "runtime/OperatorCount.h"

#include <QtTest>

using namespace widelab;

class TestNormToBf16 : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(2); }
    void equalsLayerNormRoundedOnce_data();
    void equalsLayerNormRoundedOnce();
    void takesOnlyWhatItCanCompute();
    void aDenseModelNormsInBf16UnderAutocast();
};

void TestNormToBf16::equalsLayerNormRoundedOnce_data()
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

void TestNormToBf16::equalsLayerNormRoundedOnce()
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

void TestNormToBf16::takesOnlyWhatItCanCompute()
{
    const torch::Tensor x = torch::randn({4, 6}), weight = torch::randn({6}), bias = torch::randn({6});
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

void TestNormToBf16::aDenseModelNormsInBf16UnderAutocast()
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

QTEST_GUILESS_MAIN(TestNormToBf16)
#include "tst_normtobf16.moc"
