// Tests of runtime/KernelProfile on the CPU: operators' calls as the work makes
// them, self time that leaves out what an operator calls, the ranking, the
// time by phase scope, and a profile refused while another runs. tst_cuda
// checks the device side.
#include "TestSupport.h"
#include "runtime/KernelProfile.h"
#include "runtime/PhaseTimer.h"

#include <QtTest>

#include <chrono>
#include <cmath>
#include <functional>

using namespace widelab;

namespace {

const OperatorTime* find(const KernelProfile& profile, const std::string& name)
{
    for (const OperatorTime& entry : profile.byOperator)
        if (entry.name == name)
            return &entry;
    return nullptr;
}

const OperatorTime* findPhase(const KernelProfile& profile, const std::string& name)
{
    for (const OperatorTime& entry : profile.byPhase)
        if (entry.name == name)
            return &entry;
    return nullptr;
}

const c10::Device cpu(c10::kCPU);

}  // namespace

class TestKernelProfile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void countsEachCall();
    void aCallersTimeLeavesOutItsCallees();
    void ranksMostTimeFirst();
    void phasesTakeTheOperatorsTheirScopesOpened();
    void noPhasesWithoutTheTimer();
    void refusesWhileAnotherProfilerRuns();
};

void TestKernelProfile::countsEachCall()
{
    const torch::Tensor a = torch::ones({64, 64});
    torch::Tensor c;
    const KernelProfile profile = profileKernels(
        [&] {
            c = torch::mm(a, a);
            c = torch::mm(c, a);
            c = torch::mm(c, a);
            c = c + a;
        },
        cpu);
    QVERIFY2(profile.unavailable.empty(), profile.unavailable.c_str());
    QVERIFY(!profile.deviceTime);
    QVERIFY(profile.byKernel.empty());
    const OperatorTime* mm = find(profile, "aten::mm");
    QVERIFY(mm != nullptr);
    QCOMPARE(mm->calls, std::int64_t{3});
    QVERIFY(find(profile, "aten::add") != nullptr);
    QCOMPARE(find(profile, "aten::add")->calls, std::int64_t{1});
    QCOMPARE(c[0][0].item<double>(), 64.0 * 64.0 * 64.0 + 1.0);  // the work ran
}

void TestKernelProfile::aCallersTimeLeavesOutItsCallees()
{
    // matmul of two matrices calls mm, which does all the arithmetic: its self
    // time is a small part of mm's. Self times add up to no more than the span.
    const torch::Tensor a = torch::rand({384, 384}), b = torch::rand({384, 384});
    const auto began = std::chrono::steady_clock::now();
    const KernelProfile profile = profileKernels(
        [&] {
            for (int i = 0; i < 4; ++i)
                (void)torch::matmul(a, b);
        },
        cpu);
    const double span = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    const OperatorTime* matmul = find(profile, "aten::matmul");
    const OperatorTime* mm = find(profile, "aten::mm");
    QVERIFY(matmul != nullptr && mm != nullptr);
    QCOMPARE(matmul->calls, std::int64_t{4});
    QCOMPARE(mm->calls, std::int64_t{4});
    QVERIFY2(matmul->seconds < 0.25 * mm->seconds,
             qPrintable(QString("matmul %1 s, mm %2 s").arg(matmul->seconds).arg(mm->seconds)));
    // The work's own span lies within the call's; the operators' self times
    // within the work's span (to the microsecond LibTorch 1.13 counts in).
    QVERIFY2(profile.span > 0.0 && profile.span <= span, qPrintable(QString("%1 s of %2 s").arg(profile.span).arg(span)));
    QVERIFY2(profile.seconds <= profile.span + 1e-4,
             qPrintable(QString("%1 s of %2 s").arg(profile.seconds).arg(profile.span)));
    double sum = 0.0;
    for (const OperatorTime& entry : profile.byOperator)
        sum += entry.seconds;
    QCOMPARE(profile.seconds, sum);
}

void TestKernelProfile::ranksMostTimeFirst()
{
    // One large product (2 * 512^3 FLOPs) among small additions of 16 values.
    const torch::Tensor big = torch::rand({512, 512}), small = torch::ones({16});
    const KernelProfile profile = profileKernels(
        [&] {
            torch::Tensor s = small;
            for (int i = 0; i < 5; ++i)
                s = s + small;
            (void)torch::mm(big, big);
        },
        cpu);
    QVERIFY(profile.byOperator.size() >= 2);
    QCOMPARE(profile.byOperator.front().name, std::string("aten::mm"));
    for (std::size_t i = 1; i < profile.byOperator.size(); ++i)
        QVERIFY(profile.byOperator[i - 1].seconds >= profile.byOperator[i].seconds);
}

void TestKernelProfile::phasesTakeTheOperatorsTheirScopesOpened()
{
    // Routing's scope holds one large product (2 * 512^3 FLOPs), the experts'
    // two additions of 16 values, and one addition runs outside every scope.
    const torch::Tensor big = torch::rand({512, 512}), small = torch::ones({16});
    PhaseTimer::reset();
    PhaseTimer::setEnabled(true);
    const KernelProfile profile = profileKernels(
        [&] {
            {
                const PhaseScope timed(Phase::Routing);
                (void)torch::mm(big, big);
            }
            {
                const PhaseScope timed(Phase::FeedForward);
                (void)(small + small);
                (void)(small + 1);
            }
            (void)(small * 2);
        },
        cpu);
    PhaseTimer::setEnabled(false);
    PhaseTimer::reset();
    QVERIFY2(profile.unavailable.empty(), profile.unavailable.c_str());
    const OperatorTime* routing = findPhase(profile, "routing_dispatch_combine");
    const OperatorTime* experts = findPhase(profile, "ffn_experts");
    const OperatorTime* outside = findPhase(profile, "(outside the phases)");
    QVERIFY(routing != nullptr && experts != nullptr && outside != nullptr);
    QCOMPARE(profile.byPhase.size(), std::size_t{3});
    // The scopes themselves are not operators.
    for (const OperatorTime& entry : profile.byOperator)
        QVERIFY2(entry.name.find("widelab::") == std::string::npos, entry.name.c_str());
    // Each phase has the operators its work dispatches when profiled alone.
    const auto operatorsOf = [](const std::function<void()>& work) {
        std::int64_t calls = 0;
        for (const OperatorTime& entry : profileKernels(work, cpu).byOperator)
            calls += entry.calls;
        return calls;
    };
    QCOMPARE(routing->calls, operatorsOf([&] { (void)torch::mm(big, big); }));
    QCOMPARE(experts->calls, operatorsOf([&] {
                 (void)(small + small);
                 (void)(small + 1);
             }));
    QCOMPARE(outside->calls, operatorsOf([&] { (void)(small * 2); }));
    // mm's time is routing's; each phase's time is its operators' time.
    QVERIFY2(find(profile, "aten::mm")->seconds <= routing->seconds,
             qPrintable(QString("mm %1 s, routing %2 s").arg(find(profile, "aten::mm")->seconds).arg(routing->seconds)));
    double sum = 0.0;
    for (const OperatorTime& entry : profile.byPhase)
        sum += entry.seconds;
    QVERIFY(std::abs(sum - profile.seconds) < 1e-9);
}

void TestKernelProfile::noPhasesWithoutTheTimer()
{
    // PhaseTimer off: the scopes open no range, and the profile has no phases.
    QVERIFY(!PhaseTimer::enabled());
    const KernelProfile profile = profileKernels(
        [&] {
            const PhaseScope timed(Phase::Routing);
            (void)(torch::ones({4}) + 1);
        },
        cpu);
    QVERIFY(find(profile, "aten::add") != nullptr);
    QVERIFY(profile.byPhase.empty());
}

void TestKernelProfile::refusesWhileAnotherProfilerRuns()
{
    int ran = 0;
    KernelProfile inner;
    const KernelProfile outer = profileKernels(
        [&] {
            inner = profileKernels([&] { ++ran; }, cpu);
            (void)(torch::ones({4}) + 1);
        },
        cpu);
    QCOMPARE(ran, 1);
    QCOMPARE(inner.unavailable, std::string("another profiler is running"));
    QVERIFY(inner.byOperator.empty());
    QVERIFY2(outer.unavailable.empty(), outer.unavailable.c_str());
    QVERIFY(find(outer, "aten::add") != nullptr);
}

QTEST_GUILESS_MAIN(TestKernelProfile)
#include "tst_kernelprofile.moc"
