// Tests of runtime/OperatorCount: the operators some work dispatches, counted
// on sequences whose operators are known by hand (one aten::add per `+`), the
// innermost rule on a composite operator, phases and the backward pass.
#include "TestSupport.h"
#include "runtime/OperatorCount.h"

#include <ATen/record_function.h>

#include <QtTest>

#include <stdexcept>

using namespace widelab;

namespace {

std::int64_t byName(const OperatorTally& tally, const std::string& name)
{
    const std::map<std::string, std::int64_t> counts = tally.innermostByName();
    const auto it = counts.find(name);
    return it == counts.end() ? 0 : it->second;
}

std::int64_t inPhase(const OperatorTally& tally, Phase phase)
{
    return tally.innermost(phase);
}

// Enables PhaseTimer (without synchronising) for a scope, as the benchmark's counting pass does.
struct PhasesOn {
    PhasesOn() { PhaseTimer::setEnabled(true); }
    ~PhasesOn()
    {
        PhaseTimer::setEnabled(false);
        PhaseTimer::reset();
    }
};

}  // namespace

class TestOperatorCount : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void countsEachOperatorOnce();
    void compositeOperatorsAreNotInnermost();
    void attributesOperatorsToTheOpenPhase();
    void countsTheBackwardPass();
    void countsOnlyWhileAlive();
    void mostFrequentRanksByCount();
    void countsWhatMakesTheHostWait();
};

void TestOperatorCount::countsEachOperatorOnce()
{
    const torch::Tensor a = torch::ones({4}), b = torch::full({4}, 2.0);
    OperatorTally tally;
    {
        const OperatorCounter counter;
        const torch::Tensor c = a + b;
        const torch::Tensor d = c + a;
        const torch::Tensor e = d * b;
        const torch::Tensor f = e + e;
        tally = counter.tally();
        QCOMPARE(f[0].item<double>(), 16.0);  // ((1 + 2) + 1) * 2 * 2, after the tally
    }
    QCOMPARE(tally.operators, std::int64_t{4});
    QCOMPARE(tally.innermost(), std::int64_t{4});
    QCOMPARE(byName(tally, "aten::add"), std::int64_t{3});
    QCOMPARE(byName(tally, "aten::mul"), std::int64_t{1});
    QCOMPARE(tally.innermostByName().size(), std::size_t{2});
    // Outside every phase (PhaseTimer is off): the last entry.
    QCOMPARE(tally.innermost(Phase::Count), std::int64_t{4});
}

void TestOperatorCount::compositeOperatorsAreNotInnermost()
{
    // linear calls other operators (a transpose and a product at least), so it
    // is counted among all operators but not among the innermost ones, and the
    // two counts differ by the operators that called others.
    const torch::Tensor x = torch::ones({3, 4}), w = torch::ones({5, 4}), bias = torch::zeros({5});
    OperatorTally tally;
    {
        const OperatorCounter counter;
        const torch::Tensor y = torch::linear(x, w, bias);
        tally = counter.tally();
        QCOMPARE(y[0][0].item<double>(), 4.0);
    }
    QCOMPARE(byName(tally, "aten::linear"), std::int64_t{0});
    QVERIFY2(tally.innermost() >= 2, qPrintable(QString::number(tally.innermost())));
    QVERIFY(tally.operators > tally.innermost());
    // Every operator by name, linear itself among them.
    QCOMPARE(tally.byName.at("aten::linear"), std::int64_t{1});
    std::int64_t all = 0;
    for (const auto& [name, count] : tally.byName)
        all += count;
    QCOMPARE(all, tally.operators);
    std::int64_t named = 0;
    for (const auto& [name, count] : tally.innermostByName())
        named += count;
    QCOMPARE(named, tally.innermost());
}

void TestOperatorCount::attributesOperatorsToTheOpenPhase()
{
    const torch::Tensor a = torch::ones({4});
    const PhasesOn phases;
    OperatorTally tally;
    {
        const OperatorCounter counter;
        torch::Tensor x = a + a;  // other
        {
            const PhaseScope timed(Phase::Routing);
            x = x + a;
            x = x + a;
        }
        {
            const PhaseScope timed(Phase::Attention);
            x = x * a;
        }
        x = x + a;  // other again: the scope gave the phase back
        tally = counter.tally();
    }
    QCOMPARE(inPhase(tally, Phase::Routing), std::int64_t{2});
    QCOMPARE(inPhase(tally, Phase::Attention), std::int64_t{1});
    QCOMPARE(tally.innermost(Phase::Count), std::int64_t{2});
    QCOMPARE(inPhase(tally, Phase::Backward), std::int64_t{0});
}

void TestOperatorCount::countsTheBackwardPass()
{
    const torch::Tensor w = torch::full({4}, 3.0).requires_grad_(true);
    const torch::Tensor x = torch::full({4}, 2.0);
    const PhasesOn phases;
    OperatorTally tally;
    {
        const OperatorCounter counter;
        const torch::Tensor loss = (x * w).sum();
        {
            const PhaseScope timed(Phase::Backward);
            loss.backward();
        }
        tally = counter.tally();
    }
    // d loss / d w = x: computed by MulBackward as grad * x, a second aten::mul.
    QCOMPARE(w.grad()[0].item<double>(), 2.0);
    QVERIFY2(inPhase(tally, Phase::Backward) >= 1, qPrintable(QString::number(inPhase(tally, Phase::Backward))));
    QVERIFY2(byName(tally, "aten::mul") >= 2, qPrintable(QString::number(byName(tally, "aten::mul"))));
}

void TestOperatorCount::countsOnlyWhileAlive()
{
    const torch::Tensor a = torch::ones({4});
    {
        const OperatorCounter first;
        QVERIFY_EXCEPTION_THROWN(OperatorCounter second, std::logic_error);
        (void)(a + a);
        QCOMPARE(first.tally().operators, std::int64_t{1});
    }
    (void)(a + a);  // no counter: nothing to count it
    const OperatorCounter again;
    QCOMPARE(again.tally().operators, std::int64_t{0});
    (void)(a * a);
    QCOMPARE(again.tally().operators, std::int64_t{1});
    QCOMPARE(byName(again.tally(), "aten::mul"), std::int64_t{1});
}

void TestOperatorCount::mostFrequentRanksByCount()
{
    OperatorTally tally;
    // add 3, mul 4 + 3 = 7, cat 3, sum 1 over two phases
    tally.innermostByPhase[static_cast<std::size_t>(Phase::Routing)] = {{"aten::add", 3}, {"aten::mul", 4}};
    tally.innermostByPhase.back() = {{"aten::mul", 3}, {"aten::cat", 3}, {"aten::sum", 1}};
    const auto ranked = tally.mostFrequent(3);
    QCOMPARE(ranked.size(), std::size_t{3});
    QCOMPARE(ranked[0].first, std::string("aten::mul"));
    QCOMPARE(ranked[1].first, std::string("aten::add"));  // ties keep the names' order
    QCOMPARE(ranked[2].first, std::string("aten::cat"));
    QCOMPARE(tally.mostFrequent(10).size(), std::size_t{4});
}

void TestOperatorCount::countsWhatMakesTheHostWait()
{
    const torch::Tensor x = torch::tensor({0.0, 2.0, 0.0, 3.0});
    const PhasesOn phases;
    OperatorTally tally;
    {
        const OperatorCounter counter;
        const double sum = x.sum().item<double>();  // item, whose _local_scalar_dense is not counted again
        const torch::Tensor where = x.nonzero();    // its size depends on the data
        const torch::Tensor big = x.index({x > 1});  // a boolean mask: index calls nonzero
        const torch::Tensor twice = x * 2;          // waits for nothing
        {
            const PhaseScope measured(Phase::Measurement);  // a read by design, not the step's
            QCOMPARE(x.max().item<double>(), 3.0);
        }
        tally = counter.tally();
        QCOMPARE(sum, 5.0);
        QCOMPARE(where.size(0), std::int64_t{2});
        QCOMPARE(big.size(0), std::int64_t{2});
        QCOMPARE(twice[3].item<double>(), 6.0);
    }
    const std::map<std::string, std::int64_t> expected{{"aten::item", 1}, {"aten::nonzero", 2}};
    QCOMPARE(tally.synchronisingInStep(), expected);
    QCOMPARE(tally.synchronisingByPhase[static_cast<std::size_t>(Phase::Measurement)].at("aten::item"), std::int64_t{1});
    QVERIFY(synchronisesWithTheDevice("aten::masked_select"));
    QVERIFY(!synchronisesWithTheDevice("aten::index"));
    QVERIFY(!synchronisesWithTheDevice("aten::add"));
    // LibTorch 2.x's fused AdamW reads its step counts with item on the CPU
    // alone: a read inside it is its CPU kernel's, not counted; one after it is.
    QVERIFY(readsOnTheHostOnlyOnTheCpu("aten::_fused_adamw_"));
    QVERIFY(!readsOnTheHostOnlyOnTheCpu("aten::index"));
    OperatorTally fused;
    {
        const OperatorCounter counter;
        {
            RECORD_FUNCTION("aten::_fused_adamw_", std::vector<c10::IValue>());
            QCOMPARE(x.sum().item<double>(), 5.0);
        }
        QCOMPARE(x.sum().item<double>(), 5.0);
        fused = counter.tally();
    }
    QCOMPARE(fused.synchronisingInStep(), (std::map<std::string, std::int64_t>{{"aten::item", 1}}));
}

QTEST_GUILESS_MAIN(TestOperatorCount)
#include "tst_operatorcount.moc"
