// Tests of model/Dropout: the share dropped, the scale, the gradient, seeding,
// independence from the thread count; expectations derived by hand.
#include "model/Dropout.h"

#include <torch/torch.h>

#include <QtTest>

#include <cmath>

using namespace widelab;

namespace {

// |share - p| within `sigmas` binomial standard deviations of n draws.
bool shareNear(double share, double p, std::int64_t n, double sigmas = 5.0)
{
    return std::abs(share - p) <= sigmas * std::sqrt(p * (1 - p) / static_cast<double>(n));
}

double zeroShare(const torch::Tensor& t) { return t.eq(0).to(torch::kDouble).mean().item<double>(); }

}  // namespace

class TestDropout : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void identityWhenNotTrainingOrZero();
    void dropsTheShareAskedForAndScalesTheRest_data();
    void dropsTheShareAskedForAndScalesTheRest();
    void everyPositionIsDroppedAlike();
    void gradientIsTheMaskTimesTheScale();
    void seededByTorchAndIndependentOfThreads();
    void lowerPrecisionAndStridedInputs();
};

void TestDropout::identityWhenNotTrainingOrZero()
{
    const torch::Tensor x = torch::randn({4, 5});
    QVERIFY(applyDropout(x, 0.3, false).is_same(x));
    QVERIFY(applyDropout(x, 0.0, true).is_same(x));
    QCOMPARE(applyDropout(x, 1.0, true).abs().sum().item<double>(), 0.0);
}

void TestDropout::dropsTheShareAskedForAndScalesTheRest_data()
{
    QTest::addColumn<double>("p");
    QTest::newRow("0.1") << 0.1;
    QTest::newRow("0.5") << 0.5;
    QTest::newRow("0.9") << 0.9;
}

void TestDropout::dropsTheShareAskedForAndScalesTheRest()
{
    QFETCH(double, p);
    torch::manual_seed(1);
    const std::int64_t n = std::int64_t{1} << 20;
    const torch::Tensor out = applyDropout(torch::ones({n}), p, true);
    const double share = zeroShare(out);
    QVERIFY2(shareNear(share, p, n), qPrintable(QString::number(share)));
    // Every kept element is 1 / (1 - p), p rounded to a multiple of 2^-16: the
    // scale differs from 1 / (1 - p) by under 2^-17 / (1 - p)^2 relative.
    const torch::Tensor kept = out.masked_select(out.ne(0));
    const double scale = kept[0].item<double>();
    QVERIFY(kept.eq(kept[0]).all().item<bool>());
    QVERIFY2(std::abs(scale * (1 - p) - 1) < 1e-4 / (1 - p), qPrintable(QString::number(scale)));
    // The expectation is kept: the mean of the output is 1 within its error.
    const double mean = out.mean().item<double>();
    QVERIFY2(std::abs(mean - 1) <= 5 * std::sqrt(p / (1 - p) / n), qPrintable(QString::number(mean)));
}

void TestDropout::everyPositionIsDroppedAlike()
{
    // The mask hashes positions: every residue modulo 4, and
    // the start and end of the 2^14-element chunks, must drop the same share.
    torch::manual_seed(2);
    const std::int64_t n = std::int64_t{1} << 21;
    const torch::Tensor zero = applyDropout(torch::ones({n}), 0.25, true).eq(0).to(torch::kDouble);
    const torch::Tensor lanes = zero.view({-1, 4}).mean(0);
    for (int lane = 0; lane < 4; ++lane)
        QVERIFY2(shareNear(lanes[lane].item<double>(), 0.25, n / 4), qPrintable(QString::number(lane)));
    const torch::Tensor chunks = zero.view({-1, 1 << 14});
    QVERIFY(shareNear(chunks.narrow(1, 0, 256).mean().item<double>(), 0.25, chunks.size(0) * 256));
    QVERIFY(shareNear(chunks.narrow(1, (1 << 14) - 256, 256).mean().item<double>(), 0.25, chunks.size(0) * 256));
    // Neighbouring chunks do not repeat each other's mask.
    QVERIFY(chunks[0].ne(chunks[1]).any().item<bool>());
}

void TestDropout::gradientIsTheMaskTimesTheScale()
{
    torch::manual_seed(3);
    const torch::Tensor x = (torch::rand({300, 70}) + 0.5).requires_grad_(true);  // no zeros
    const torch::Tensor out = applyDropout(x, 0.2, true);
    const torch::Tensor kept = out.ne(0);
    const torch::Tensor scale = out.detach().masked_select(kept) / x.detach().masked_select(kept);
    QVERIFY(torch::allclose(scale, torch::full_like(scale, scale[0].item<double>())));
    const torch::Tensor upstream = torch::randn({300, 70});
    out.backward(upstream);
    const torch::Tensor expected = torch::where(kept, upstream * scale[0].item<double>(), torch::zeros_like(upstream));
    QVERIFY(torch::allclose(x.grad(), expected, 1e-6, 1e-7));

    // In double the scale is applied in double: 1 / (1 - 3277 / 65536) exactly, by hand.
    const torch::Tensor xd = (torch::rand({200, 50}, torch::kDouble) + 0.5).requires_grad_(true);
    const torch::Tensor outd = applyDropout(xd, 0.05, true);
    const double exact = 65536.0 / (65536.0 - 3277.0);
    const torch::Tensor keptd = outd.ne(0);
    QVERIFY(torch::allclose(outd.masked_select(keptd), xd.detach().masked_select(keptd) * exact, 1e-15, 0));
    outd.sum().backward();
    QVERIFY(torch::allclose(xd.grad(), keptd.to(torch::kDouble) * exact, 1e-15, 0));
}

void TestDropout::seededByTorchAndIndependentOfThreads()
{
    const torch::Tensor x = torch::ones({5, 40000});  // 13 chunks
    const int threads = at::get_num_threads();
    at::set_num_threads(4);  // the chunks split over 4 threads, then all on 1
    torch::manual_seed(4);
    const torch::Tensor first = applyDropout(x, 0.3, true), second = applyDropout(x, 0.3, true);
    QVERIFY(!torch::equal(first, second));
    at::set_num_threads(1);
    torch::manual_seed(4);
    const torch::Tensor again = applyDropout(x, 0.3, true);
    at::set_num_threads(threads);
    QVERIFY(torch::equal(first, again));
}

void TestDropout::lowerPrecisionAndStridedInputs()
{
    torch::manual_seed(5);
    const torch::Tensor x = torch::rand({600, 500}).add(1).to(torch::kBFloat16);
    const torch::Tensor out = applyDropout(x, 0.5, true);
    QCOMPARE(out.scalar_type(), torch::kBFloat16);
    QVERIFY(shareNear(zeroShare(out), 0.5, x.numel()));
    const torch::Tensor kept = out.ne(0);
    QVERIFY(torch::equal(out.masked_select(kept), (x.to(torch::kFloat) * 2).to(torch::kBFloat16).masked_select(kept)));

    const torch::Tensor wide = torch::rand({300, 400}).add(1);
    const torch::Tensor transposed = applyDropout(wide.t(), 0.5, true);
    QCOMPARE(transposed.sizes(), wide.t().sizes());
    const torch::Tensor keptT = transposed.ne(0);
    QVERIFY(torch::allclose(transposed.masked_select(keptT), (wide.t() * 2).masked_select(keptT)));
}

QTEST_APPLESS_MAIN(TestDropout)
#include "tst_dropout.moc"
