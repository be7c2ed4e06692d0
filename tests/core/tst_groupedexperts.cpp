// Tests of model/GroupedExperts: the experts as grouped products over the
// (token, choice) pairs sorted by expert give what the batched products over
// the capacity buffer give, forward and backward, dropped pairs included, and a
// LibTorch without at::_grouped_mm says so. The comparisons need LibTorch 2.8
// or newer (PyPI's build, whose CPU grouped product is a fallback), and are
// skipped, naming the reason, on Debian's 1.13.
#include "TestSupport.h"
#include "model/FeedForward.h"
#include "model/GroupedExperts.h"
#include "model/Router.h"

#include <QtTest>

#include <sstream>
#include <stdexcept>
#include <string>

using namespace widelab;

namespace {

const c10::Device cpu(c10::kCPU);

QString printed(const torch::Tensor& t)
{
    std::ostringstream text;
    text << t;
    return QString::fromStdString(text.str());
}

// What dispatchCombine sums from the pairs' answers: gate-weighted, dropped
// pairs weighted zero, the K choices of a token added.
torch::Tensor combined(const torch::Tensor& answers, const Routing& r)
{
    const torch::Tensor weight = torch::where(r.kept, r.gates, 0.0).reshape({-1, 1});
    return (answers * weight).view({r.expert.size(0), r.expert.size(1), -1}).sum(1);
}

Routing routed(const torch::Tensor& x, std::int64_t experts, double capacityFactor)
{
    torch::manual_seed(5);
    RoutingOptions options;
    options.topK = 2;
    options.capacityFactor = capacityFactor;
    return route(x, torch::randn({experts, x.size(1)}), options);
}

}  // namespace

class TestGroupedExperts : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theCpuKeepsTheBatchedProducts();
    void withoutGroupedProductsTheReasonIsGiven();
    void handWorkedAnswers();
    void matchesTheBatchedProducts_data();
    void matchesTheBatchedProducts();
};

void TestGroupedExperts::theCpuKeepsTheBatchedProducts()
{
    // 2.11's CPU grouped product is slower than bmm over the buffer: the CPU
    // never takes it, whatever the LibTorch.
    QVERIFY(!groupedExpertsRun(torch::zeros({4, 8})));
}

void TestGroupedExperts::withoutGroupedProductsTheReasonIsGiven()
{
    const std::string refusal = groupedProductsRefusal(cpu, torch::kFloat);
    if (refusal.empty())
        QSKIP("this LibTorch has at::_grouped_mm");
    QVERIFY2(refusal.find("at::_grouped_mm") != std::string::npos, refusal.c_str());
    FeedForward experts(2, 4, 4, Activation::Relu);
    const torch::Tensor x = torch::randn({3, 4});
    const Routing r = routed(x, 2, 1.0);
    try {
        groupedExpertAnswers(x.repeat_interleave(2, 0), r, *experts);
        QFAIL("groupedExpertAnswers ran without at::_grouped_mm");
    } catch (const std::invalid_argument& error) {
        QCOMPARE(std::string(error.what()), refusal);
    }
}

void TestGroupedExperts::handWorkedAnswers()
{
    const std::string refusal = groupedProductsRefusal(cpu, torch::kFloat);
    if (!refusal.empty())
        QSKIP(refusal.c_str());
    // D = M = 4, ReLU, first matrix the identity, second 2I, 3I and 4I for
    // experts 0, 1 and 2, no biases, one slot per expert. Token 0 picks experts
    // 0 and 1, token 1 experts 1 and 2; expert 1's slot went to token 0, so
    // pair (1, 0) is dropped. The answers: token 0's x times 2 and 3, token 1's
    // relu(x) times 4 for its second choice, and zero for the dropped pair.
    FeedForward experts(3, 4, 4, Activation::Relu);
    {
        torch::NoGradGuard noGrad;
        experts->wIn.copy_(torch::eye(4).expand({3, 4, 4}));
        experts->wOut.copy_(torch::stack({2 * torch::eye(4), 3 * torch::eye(4), 4 * torch::eye(4)}));
        experts->bIn.zero_();
        experts->bOut.zero_();
    }
    Routing r;
    r.expert = torch::tensor({0, 1, 1, 2}, torch::kLong).view({2, 2});
    r.slot = torch::tensor({0, 0, 1, 0}, torch::kLong).view({2, 2});
    r.capacity = 1;
    r.kept = r.slot < r.capacity;
    r.gates = torch::tensor({0.25f, 0.75f, 0.5f, 0.5f}).view({2, 2});
    r.experts = 3;
    const torch::Tensor x = torch::tensor({1.0f, 2.0f, 0.0f, 1.0f, 4.0f, -3.0f, 1.0f, -1.0f}).view({2, 4});
    const torch::Tensor answers = groupedExpertAnswers(x.repeat_interleave(2, 0), r, *experts);
    const torch::Tensor expected = torch::tensor({2.0f, 4.0f, 0.0f, 2.0f,    // token 0, expert 0
                                                  3.0f, 6.0f, 0.0f, 3.0f,    // token 0, expert 1
                                                  0.0f, 0.0f, 0.0f, 0.0f,    // token 1, expert 1: dropped
                                                  16.0f, 0.0f, 4.0f, 0.0f})  // token 1, expert 2
                                       .view({4, 4});
    QVERIFY2(torch::allclose(answers, expected), qPrintable(printed(answers)));
    // Combined: 0.25 * 2x + 0.75 * 3x = 2.75x for token 0, 0.5 * 4 relu(x) for token 1.
    QVERIFY(torch::allclose(combined(answers, r),
                            torch::tensor({2.75f, 5.5f, 0.0f, 2.75f, 8.0f, 0.0f, 2.0f, 0.0f}).view({2, 4})));
}

void TestGroupedExperts::matchesTheBatchedProducts_data()
{
    QTest::addColumn<double>("capacityFactor");
    // 12 tokens, 3 experts, top-2: ceil(2 * 0.5 * 12 / 3) = 4 slots each, so
    // pairs are dropped; a factor of 0 drops none (capacity 12).
    QTest::newRow("with dropped pairs") << 0.5;
    QTest::newRow("dropless") << 0.0;
}

void TestGroupedExperts::matchesTheBatchedProducts()
{
    const std::string refusal = groupedProductsRefusal(cpu, torch::kFloat);
    if (!refusal.empty())
        QSKIP(refusal.c_str());
    QFETCH(double, capacityFactor);
    torch::manual_seed(7);
    FeedForward experts(3, 8, 16, Activation::Gelu);
    const torch::Tensor x0 = torch::randn({12, 8});
    const Routing r = routed(x0, 3, capacityFactor);
    QVERIFY(capacityFactor > 0 ? !r.kept.all().item<bool>() : r.kept.all().item<bool>());

    // On the CPU dispatchCombine takes the batched products.
    const torch::Tensor upstream = torch::linspace(-1.0, 1.0, 12 * 8).view({12, 8});
    std::vector<torch::Tensor> outputs, gradients;
    for (const bool grouped : {false, true}) {
        experts->zero_grad();
        const torch::Tensor x = x0.clone().requires_grad_();
        const torch::Tensor y = grouped ? combined(groupedExpertAnswers(x.repeat_interleave(2, 0), r, *experts), r)
                                        : dispatchCombine(x, r, *experts);
        y.backward(upstream);
        outputs.push_back(y.detach());
        gradients.push_back(x.grad());
        for (const torch::Tensor& p : {experts->wIn, experts->bIn, experts->wOut, experts->bOut})
            gradients.push_back(p.grad().clone());
    }
    QVERIFY(torch::allclose(outputs[1], outputs[0], 1e-5, 1e-6));
    const std::size_t half = gradients.size() / 2;
    for (std::size_t i = 0; i < half; ++i)
        QVERIFY2(torch::allclose(gradients[half + i], gradients[i], 1e-5, 1e-6),
                 qPrintable(QString("gradient %1 (x, w_in, b_in, w_out, b_out)").arg(i)));
}

QTEST_APPLESS_MAIN(TestGroupedExperts)
#include "tst_groupedexperts.moc"
