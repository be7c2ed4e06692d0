// Tests of runtime/TriedOnce on the CPU: a kernel's try runs once per device,
// its answer kept, and an exception it throws becomes the reason.
#include "TestSupport.h"
#include "runtime/TriedOnce.h"

#include <QtTest>

#include <stdexcept>

using namespace widelab;

class TestTriedOnce : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void triesOncePerDeviceAndKeepsTheAnswer();
    void aThrownTryBecomesTheReason();
};

void TestTriedOnce::triesOncePerDeviceAndKeepsTheAnswer()
{
    TriedOnce kernel("the test kernel");
    int tries = 0;
    const auto differs = [&](const c10::Device& on) {
        ++tries;
        return "other sums on " + on.str();
    };
    // The CPU with and without its index is one device: one try.
    QCOMPARE(kernel.refusal(c10::Device(c10::kCPU), differs), std::string("other sums on cpu:0"));
    QCOMPARE(kernel.refusal(c10::Device(c10::kCPU, 0), differs), std::string("other sums on cpu:0"));
    QCOMPARE(tries, 1);
    // Another device gets its own try, and a passed try keeps "".
    QCOMPARE(kernel.refusal(c10::Device(c10::kMeta), [&](const c10::Device&) {
        ++tries;
        return std::string();
    }),
             std::string());
    QCOMPARE(kernel.refusal(c10::Device(c10::kMeta), differs), std::string());
    QCOMPARE(tries, 2);
}

void TestTriedOnce::aThrownTryBecomesTheReason()
{
    TriedOnce kernel("the test kernel");
    const auto fails = [](const c10::Device&) -> std::string {
        throw std::runtime_error("no kernel image for this GPU\nat line 12");
    };
    const std::string want = "the test kernel fails on cpu:0: no kernel image for this GPU";
    QCOMPARE(kernel.refusal(c10::Device(c10::kCPU), fails), want);
    QCOMPARE(kernel.refusal(c10::Device(c10::kCPU), [](const c10::Device&) { return std::string(); }), want);
}

QTEST_APPLESS_MAIN(TestTriedOnce)
#include "tst_triedonce.moc"
