// Tests of model/GroupedExperts: the experts over the (token, choice) pairs
// sorted by expert, an mm per expert (the CPU's, with any LibTorch) or
// at::_grouped_mm (a GPU's; LibTorch 2.8 and newer also run it on the CPU, so
// PyPI's build tests it here), give what the batched products over the
// capacity buffer give, forward and backward, dropped pairs included, and a
// LibTorch without at::_grouped_mm says so.
#include "TestSupport.h"
#include "model/FeedForward.h"
#include "model/GroupPlan.h"
#include "model/GroupedExperts.h"
#include "model/Router.h"

#include <QtTest>

#include <torch/version.h>

#include <stdexcept>
#include <string>
#include <utility>

using namespace widelab;
using widelab::test::printed;

Q_DECLARE_METATYPE(widelab::GroupedProducts)

namespace {

const c10::Device cpu(c10::kCPU);

// Each way of multiplying the groups as a test row; at::_grouped_mm's rows
// skip, naming the reason, where this LibTorch has none.
void productRows()
{
    QTest::addColumn<GroupedProducts>("products");
    QTest::newRow("an mm per expert") << GroupedProducts::MmPerExpert;
    QTest::newRow("at::_grouped_mm") << GroupedProducts::GroupedMm;
}

// Why this LibTorch cannot multiply the groups so, "" when it can.
std::string missing(GroupedProducts products)
{
    return products == GroupedProducts::GroupedMm ? groupedProductsRefusal(cpu, torch::kFloat) : std::string();
}

// What dispatchCombine sums from the pairs' answers: gate-weighted, dropped
// pairs weighted zero, the K choices of a token added.
torch::Tensor combined(const torch::Tensor& answers, const Routing& r)
{
    const torch::Tensor weight = torch::where(r.kept, r.gates, 0.0).reshape({-1, 1});
    return (answers * weight).view({r.expert.size(0), r.expert.size(1), answers.size(1)}).sum(1);
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
    void theCpuGroupsItsProducts();
    void withoutGroupedProductsTheReasonIsGiven();
    void anMmPerExpertTakesCpuTensorsOnly();
    void handWorkedAnswers_data() { productRows(); }
    void handWorkedAnswers();
    void noTokensGetNoAnswers_data() { productRows(); }
    void noTokensGetNoAnswers();
    void matchesTheBatchedProducts_data();
    void matchesTheBatchedProducts();
    void rowsOfAnOddWidthAreRefused_data();
    void rowsOfAnOddWidthAreRefused();
    void thePlanSortsPairsByExpertDroppedLast();
    void theCpuPlansByOperators();
};

void TestGroupedExperts::theCpuGroupsItsProducts()
{
    // The routing is in host memory: the groups are counted there, and each
    // expert's is an mm, with or without at::_grouped_mm.
    QVERIFY(groupedExpertsRun(torch::zeros({4, 8}), 16));
}

void TestGroupedExperts::withoutGroupedProductsTheReasonIsGiven()
{
    const std::string refusal = groupedProductsRefusal(cpu, torch::kFloat);
    if (refusal.empty())
        QSKIP("this LibTorch has at::_grouped_mm");
    QVERIFY2(refusal.find("at::_grouped_mm") != std::string::npos, refusal.c_str());
    QVERIFY2(refusal.find(TORCH_VERSION) != std::string::npos, refusal.c_str());
    FeedForward experts(2, 4, 4, Activation::Relu);
    const torch::Tensor x = torch::randn({3, 4});
    const Routing r = routed(x, 2, 1.0);
    try {
        groupedExpertAnswers(x, r, *experts, GroupedProducts::GroupedMm);
        QFAIL("groupedExpertAnswers ran without at::_grouped_mm");
    } catch (const std::invalid_argument& error) {
        QCOMPARE(std::string(error.what()), refusal);
    }
}

void TestGroupedExperts::anMmPerExpertTakesCpuTensorsOnly()
{
    // A meta tensor stands for any device but the host's: its routing cannot be read in place.
    FeedForward experts(2, 4, 4, Activation::Relu);
    const torch::Tensor x = torch::randn({3, 4});
    const Routing r = routed(x, 2, 1.0);
    try {
        groupedExpertAnswers(torch::empty({3, 4}, torch::TensorOptions().device(c10::kMeta)), r, *experts,
                             GroupedProducts::MmPerExpert);
        QFAIL("an mm per expert took a tensor off the CPU");
    } catch (const std::invalid_argument& error) {
        QVERIFY2(std::string(error.what()).find("CPU tensors, not meta") != std::string::npos, error.what());
    }
}

void TestGroupedExperts::handWorkedAnswers()
{
    QFETCH(GroupedProducts, products);
    if (const std::string why = missing(products); !why.empty())
        QSKIP(why.c_str());
    // D = M = 4, ReLU, first matrix the identity, second 2I, 3I, 5I and 4I for
    // experts 0 to 3, no biases, one slot per expert. Token 0 picks experts 0
    // and 1, token 1 experts 1 and 3; expert 1's slot went to token 0, so pair
    // (1, 0) is dropped, and expert 2 gets no pair (an empty group between
    // two). The answers: token 0's x times 2 and 3, token 1's relu(x) times 4
    // for its second choice, and zero for the dropped pair.
    FeedForward experts(4, 4, 4, Activation::Relu);
    {
        torch::NoGradGuard noGrad;
        experts->wIn.copy_(torch::eye(4).expand({4, 4, 4}));
        experts->wOut.copy_(torch::stack({2 * torch::eye(4), 3 * torch::eye(4), 5 * torch::eye(4), 4 * torch::eye(4)}));
        experts->bIn.zero_();
        experts->bOut.zero_();
    }
    Routing r;
    r.expert = torch::tensor({0, 1, 1, 3}, torch::kLong).view({2, 2});
    r.slot = torch::tensor({0, 0, 1, 0}, torch::kLong).view({2, 2});
    r.capacity = 1;
    r.kept = r.slot < r.capacity;
    r.gates = torch::tensor({0.25f, 0.75f, 0.5f, 0.5f}).view({2, 2});
    r.experts = 4;
    const torch::Tensor x = torch::tensor({1.0f, 2.0f, 0.0f, 1.0f, 4.0f, -3.0f, 1.0f, -1.0f}).view({2, 4});
    const torch::Tensor answers = groupedExpertAnswers(x, r, *experts, products);
    const torch::Tensor expected = torch::tensor({2.0f, 4.0f, 0.0f, 2.0f,    // token 0, expert 0
                                                  3.0f, 6.0f, 0.0f, 3.0f,    // token 0, expert 1
                                                  0.0f, 0.0f, 0.0f, 0.0f,    // token 1, expert 1: dropped
                                                  16.0f, 0.0f, 4.0f, 0.0f})  // token 1, expert 3
                                       .view({4, 4});
    QVERIFY2(torch::allclose(answers, expected), qPrintable(printed(answers)));
    // Combined: 0.25 * 2x + 0.75 * 3x = 2.75x for token 0, 0.5 * 4 relu(x) for token 1.
    QVERIFY(torch::allclose(combined(answers, r),
                            torch::tensor({2.75f, 5.5f, 0.0f, 2.75f, 8.0f, 0.0f, 2.0f, 0.0f}).view({2, 4})));
}

void TestGroupedExperts::noTokensGetNoAnswers()
{
    QFETCH(GroupedProducts, products);
    if (const std::string why = missing(products); !why.empty())
        QSKIP(why.c_str());
    // A batch whose every position is padding routes no token: every group is empty.
    FeedForward experts(3, 8, 16, Activation::Gelu);
    const torch::Tensor x = torch::zeros({0, 8}).requires_grad_();
    const Routing r = routed(x.detach(), 3, 1.0);
    const torch::Tensor answers = groupedExpertAnswers(x, r, *experts, products);
    QCOMPARE(answers.sizes().vec(), (std::vector<std::int64_t>{0, 8}));
    combined(answers, r).sum().backward();
    QCOMPARE(x.grad().sizes().vec(), (std::vector<std::int64_t>{0, 8}));
    QCOMPARE(experts->wIn.grad().abs().sum().item<double>(), 0.0);
}

void TestGroupedExperts::matchesTheBatchedProducts_data()
{
    QTest::addColumn<GroupedProducts>("products");
    QTest::addColumn<double>("capacityFactor");
    // 12 tokens, 3 experts, top-2: ceil(2 * 0.5 * 12 / 3) = 4 slots each, so
    // pairs are dropped; a factor of 0 drops none (capacity 12).
    for (const auto& [name, products] : {std::pair{"an mm per expert", GroupedProducts::MmPerExpert},
                                         std::pair{"at::_grouped_mm", GroupedProducts::GroupedMm}}) {
        QTest::addRow("%s, with dropped pairs", name) << products << 0.5;
        QTest::addRow("%s, dropless", name) << products << 0.0;
    }
}

void TestGroupedExperts::matchesTheBatchedProducts()
{
    QFETCH(GroupedProducts, products);
    QFETCH(double, capacityFactor);
    if (const std::string why = missing(products); !why.empty())
        QSKIP(why.c_str());
    torch::manual_seed(7);
    FeedForward experts(3, 8, 16, Activation::Gelu);
    {
        // Biases of their own (they start at zero), so that both products' must reach the answers.
        const torch::NoGradGuard noGrad;
        experts->bIn.copy_(torch::linspace(-0.5, 0.7, 3 * 16).view({3, 16}));
        experts->bOut.copy_(torch::linspace(0.4, -0.6, 3 * 8).view({3, 8}));
    }
    const torch::Tensor x0 = torch::randn({12, 8});
    const Routing r = routed(x0, 3, capacityFactor);
    QVERIFY(capacityFactor > 0 ? !r.kept.all().item<bool>() : r.kept.all().item<bool>());

    const torch::Tensor upstream = torch::linspace(-1.0, 1.0, 12 * 8).view({12, 8});
    std::vector<torch::Tensor> outputs, gradients;
    for (const bool grouped : {false, true}) {
        experts->zero_grad();
        const torch::Tensor x = x0.clone().requires_grad_();
        const torch::Tensor y = combined(grouped ? groupedExpertAnswers(x, r, *experts, products)
                                                 : bufferedExpertAnswers(x, r, *experts),
                                         r);
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

// at::_grouped_mm reads rows of a multiple of 16 bytes: 6 values in fp32 are 24.
void TestGroupedExperts::rowsOfAnOddWidthAreRefused_data()
{
    QTest::addColumn<std::int64_t>("width");
    QTest::addColumn<std::int64_t>("hidden");
    QTest::addColumn<QString>("named");
    QTest::newRow("d_model 6") << std::int64_t{6} << std::int64_t{16} << QStringLiteral("d_model 6 in Float is 24");
    QTest::newRow("ffn_dim 6") << std::int64_t{8} << std::int64_t{6} << QStringLiteral("ffn_dim 6 in Float is 24");
}

void TestGroupedExperts::rowsOfAnOddWidthAreRefused()
{
    QFETCH(std::int64_t, width);
    QFETCH(std::int64_t, hidden);
    QFETCH(QString, named);
    if (const std::string why = missing(GroupedProducts::GroupedMm); !why.empty())
        QSKIP(why.c_str());
    torch::manual_seed(7);
    FeedForward experts(3, width, hidden, Activation::Gelu);
    const torch::Tensor x = torch::randn({12, width});
    const Routing r = routed(x, 3, 0.0);
    try {
        (void)groupedExpertAnswers(x, r, *experts, GroupedProducts::GroupedMm);
        QFAIL("rows of 24 bytes were multiplied");
    } catch (const std::invalid_argument& error) {
        const std::string what = error.what();
        QVERIFY2(what.find("multiple of 16 bytes") != std::string::npos
                     && what.find(named.toStdString()) != std::string::npos,
                 what.c_str());
    }
}

void TestGroupedExperts::thePlanSortsPairsByExpertDroppedLast()
{
    // Token 0 picks experts 0 and 1, token 1 experts 1 (dropped) and 3, of 4.
    // Keys by pair: 0, 1, 4 (dropped), 3; sorted: pairs 0, 1, 3, 2. So pair 2
    // takes the last row and pair 3 the one before it; the rows' tokens are
    // 0, 0, 1 and none (2). Groups of 1, 1, 0 and 1 rows, the dropped row
    // joining the last: ends 1, 2, 2, 4.
    const torch::Tensor expert = torch::tensor({0, 1, 1, 3}, torch::kLong).view({2, 2});
    const torch::Tensor kept = torch::tensor({1, 1, 0, 1}, torch::kLong).to(torch::kBool).view({2, 2});
    const GroupPlan plan = planGroupsByOperators(expert, kept, 4);
    QVERIFY2(torch::equal(plan.row, torch::tensor({0, 1, 3, 2}, torch::kLong)), qPrintable(printed(plan.row)));
    QVERIFY2(torch::equal(plan.token, torch::tensor({0, 0, 1, 2}, torch::kLong)), qPrintable(printed(plan.token)));
    QVERIFY2(torch::equal(plan.rowKey, torch::tensor({0, 1, 3, 4}, torch::kLong)), qPrintable(printed(plan.rowKey)));
    QVERIFY2(torch::equal(plan.ends, torch::tensor({1, 2, 2, 4}, torch::kInt)), qPrintable(printed(plan.ends)));
    // Equal keys keep pair order: three pairs of expert 2 stay 0, 1, 2.
    const GroupPlan same = planGroupsByOperators(torch::full({3, 1}, 2, torch::kLong), torch::ones({3, 1}, torch::kBool), 3);
    QVERIFY(torch::equal(same.row, torch::tensor({0, 1, 2}, torch::kLong)));
    QVERIFY(torch::equal(same.ends, torch::tensor({0, 0, 3}, torch::kInt)));
}

void TestGroupedExperts::theCpuPlansByOperators()
{
    // The kernel is CUDA's: on the CPU planGroups is the operators' plan, and says why.
    QVERIFY(!groupPlanRefusal(cpu, 4).empty());
    const torch::Tensor expert = torch::tensor({2, 0, 1, 2, 0, 1}, torch::kLong).view({3, 2});
    const torch::Tensor kept = torch::tensor({1, 1, 1, 0, 1, 1}, torch::kLong).to(torch::kBool).view({3, 2});
    const GroupPlan got = planGroups(expert, kept, 3), want = planGroupsByOperators(expert, kept, 3);
    QVERIFY(torch::equal(got.row, want.row) && torch::equal(got.token, want.token) && torch::equal(got.ends, want.ends));
}

QTEST_APPLESS_MAIN(TestGroupedExperts)
#include "tst_groupedexperts.moc"
