// Autocast's weights (runtime/Autocast): a parameter's low-precision copy
// made once per scope, however many products share it, so that its gradient
// is summed in that type and cast back once; the weight itself where
// autocast is off and for other types; a view cast afresh each time; a new
// scope seeing the parameter as the optimiser left it; and the type products
// come out in.
#include "runtime/Autocast.h"

#include <torch/torch.h>

#include <QtTest>

using namespace widelab;

namespace {

torch::Tensor parameter(std::vector<std::int64_t> shape, double value)
{
    return torch::full(shape, value).requires_grad_();
}

}  // namespace

class TestAutocast : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aParameterIsCastOncePerScope();
    void withoutAutocastTheWeightIsItself();
    void neitherAnotherTypeNorAViewIsCast();
    void aNewScopeSeesTheUpdatedParameter();
    void aSharedWeightsGradientSumsEveryUse();
    void productsTypeFollowsTheScope();
};

void TestAutocast::aParameterIsCastOncePerScope()
{
    const torch::Tensor p = parameter({4, 3}, 0.5);
    const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
    const torch::Tensor first = autocastWeight(p), second = autocastWeight(p);
    QCOMPARE(first.scalar_type(), torch::kBFloat16);
    QCOMPARE(first.data_ptr(), second.data_ptr());
    // One cast in the graph: both uses' gradients meet before it.
    QVERIFY(first.grad_fn() != nullptr);
    QCOMPARE(first.grad_fn().get(), second.grad_fn().get());
}

void TestAutocast::withoutAutocastTheWeightIsItself()
{
    const torch::Tensor p = parameter({4, 3}, 0.5);
    QVERIFY(autocastWeight(p).is_same(p));
    const AutocastScope off(c10::DeviceType::CPU, torch::kBFloat16, /*enabled=*/false);
    QVERIFY(autocastWeight(p).is_same(p));
}

void TestAutocast::neitherAnotherTypeNorAViewIsCast()
{
    const torch::Tensor half = torch::ones({4, 3}, torch::kBFloat16).requires_grad_();
    const torch::Tensor counts = torch::ones({4, 3}, torch::kLong);
    const torch::Tensor p = parameter({4, 3}, 0.5);
    const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
    QVERIFY(autocastWeight(half).is_same(half));
    QVERIFY(autocastWeight(counts).is_same(counts));
    // A view is cast (it is a weight for a product) but not kept: each call
    // casts again, which is why callers view the copy, not the parameter.
    const torch::Tensor view = p.t();
    const torch::Tensor first = autocastWeight(view), second = autocastWeight(view);
    QCOMPARE(first.scalar_type(), torch::kBFloat16);
    QVERIFY(first.data_ptr() != second.data_ptr());
}

void TestAutocast::aNewScopeSeesTheUpdatedParameter()
{
    const torch::Tensor p = parameter({2, 2}, 0.5);
    {
        const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
        QCOMPARE(autocastWeight(p)[0][0].item<float>(), 0.5f);
    }
    {
        const torch::NoGradGuard noGrad;
        p.add_(1.0);  // as an optimiser's step between two forward passes
    }
    const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
    QCOMPARE(autocastWeight(p)[0][0].item<float>(), 1.5f);
}

void TestAutocast::aSharedWeightsGradientSumsEveryUse()
{
    // Two products share w [2, 3]: y = x1 w^T + x2 w^T, loss = sum(y).
    // d loss / d w[j][k] = sum_i x1[i][k] + sum_i x2[i][k] = 2 * 1 + 2 * 2 = 6,
    // exact in bf16, and the gradient comes back to the fp32 parameter.
    const torch::Tensor w = parameter({2, 3}, 0.25);
    const torch::Tensor x1 = torch::ones({2, 3}), x2 = torch::full({2, 3}, 2.0);
    torch::Tensor loss;
    {
        const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
        const torch::Tensor y = torch::mm(x1, autocastWeight(w).t()) + torch::mm(x2, autocastWeight(w).t());
        QCOMPARE(y.scalar_type(), torch::kBFloat16);
        loss = y.sum();
    }
    loss.backward();
    QCOMPARE(w.grad().scalar_type(), torch::kFloat32);
    QVERIFY(torch::equal(w.grad(), torch::full({2, 3}, 6.0)));
}

void TestAutocast::productsTypeFollowsTheScope()
{
    const torch::Tensor x = torch::ones({2, 2});
    QCOMPARE(autocastType(x), torch::kFloat32);
    QCOMPARE(autocastType(x.to(torch::kDouble)), torch::kFloat64);
    const AutocastScope bf16(c10::DeviceType::CPU, torch::kBFloat16);
    QCOMPARE(autocastType(x), torch::kBFloat16);
}

QTEST_GUILESS_MAIN(TestAutocast)
#include "tst_autocast.moc"
