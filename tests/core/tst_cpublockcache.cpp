// Tests of runtime/CpuBlockCache: size classes worked out by hand, reuse of a
// freed block, no sharing between live tensors, the bound on idle memory, many
// threads, and training that gives the same numbers with the cache as without.
#include "model/WideTransformer.h"
#include "runtime/CpuBlockCache.h"

#include "TestSupport.h"

#include <c10/core/CPUAllocator.h>

#include <QtTest>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

using namespace widelab;

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// A float tensor of `bytes` bytes (a multiple of 4).
torch::Tensor tensorOfBytes(std::int64_t bytes) { return torch::empty({bytes / 4}, torch::kFloat); }

// Losses and final parameters of a few AdamW steps of a small WideNet with
// dropout, from a fixed seed: activations of 64 KiB to 1 MiB, freed and
// allocated again every step.
std::vector<torch::Tensor> trainSmallWideNet()
{
    torch::manual_seed(7);
    const ModelConfig config =
        test::modelConfig(R"({"vocab_size": 50, "max_len": 64, "d_model": 64, "heads": 4, "ffn_dim": 128,
                             "layers": 3, "dropout": 0.1, "num_classes": 5, "experts": 4, "top_k": 2,
                             "share_attention": true, "share_ffn": true})");
    WideTransformer model(config);
    model->train();
    torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));
    std::vector<torch::Tensor> results;
    for (int step = 0; step < 4; ++step) {
        const torch::Tensor ids = torch::randint(0, 50, {8, 64}, torch::kLong);
        const torch::Tensor labels = torch::randint(0, 5, {8}, torch::kLong);
        optimizer.zero_grad();
        const ModelOutput out = model->forward(ids);
        const torch::Tensor loss = torch::cross_entropy_loss(out.logits, labels) + out.balanceLoss;
        loss.backward();
        optimizer.step();
        results.push_back(loss.detach().clone());
    }
    for (const torch::Tensor& p : model->parameters())
        results.push_back(p.detach().clone());
    return results;
}

}  // namespace

class TestBlockCache : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void sizeClassesAreAnEighthOfAPowerOfTwoApart();
    void trainingGivesTheSameNumbersWithTheCache();
    void aFreedBlockServesTheNextRequestOfItsClass();
    void aRequestMayTakeABlockUpToTwiceItsSize();
    void smallRequestsBypassTheCache();
    void liveTensorsNeverShareABlock();
    void rawAllocationsComeBackThroughTheRawDeleter();
    void idleMemoryIsBoundedByThePeakInUse();
    void aStepsClassesStayIdleBeyondItsPeak();
    void manyThreadsAllocateAndFree();
};

// Each test starts with no idle blocks, whatever the ones before it left.
void TestBlockCache::init() { releaseCpuBlockCache(); }

void TestBlockCache::sizeClassesAreAnEighthOfAPowerOfTwoApart()
{
    // By hand: 64 KiB is a power of two (its own class); just above it the step
    // is 64 KiB / 8 = 8 KiB; above 1 MiB it is 128 KiB.
    QCOMPARE(cpuBlockClass(65536), std::size_t{65536});
    QCOMPARE(cpuBlockClass(65537), std::size_t{65536 + 8192});
    QCOMPARE(cpuBlockClass(73728), std::size_t{73728});
    QCOMPARE(cpuBlockClass(1048577), std::size_t{1048576 + 131072});
    QCOMPARE(cpuBlockClass(1000000), std::size_t{1048576});  // step 65536: 16 steps
    QCOMPARE(cpuBlockClass(200 * 1000 * 1000), std::size_t{201326592});  // step 2^24: 12 steps
    std::size_t previous = 0;
    for (std::size_t bytes = kMinBlockBytes; bytes < (std::size_t{1} << 34); bytes = bytes * 9 / 7 + 13) {
        const std::size_t size = cpuBlockClass(bytes);
        QVERIFY2(size >= bytes && size - bytes <= bytes / 8, qPrintable(QString::number(bytes)));
        QCOMPARE(size % 64, std::size_t{0});
        QVERIFY(size >= previous);
        previous = size;
    }
}

void TestBlockCache::trainingGivesTheSameNumbersWithTheCache()
{
    // Runs first, before anything installs the cache. (Programs install it
    // before any LibTorch work; here the first run needs the default allocator.
    // This model's operations free no raw buffer allocated before the install.)
    QVERIFY(!cpuBlockCacheInstalled());
    const std::vector<torch::Tensor> withoutCache = trainSmallWideNet();

    qunsetenv("WIDELAB_CPU_BLOCK_CACHE");
    QVERIFY(installCpuBlockCache());
    QVERIFY(cpuBlockCacheInstalled());
    const std::uint64_t reusedBefore = cpuBlockCacheStats().reused;
    const std::vector<torch::Tensor> withCache = trainSmallWideNet();
    QVERIFY2(cpuBlockCacheStats().reused > reusedBefore + 100, "the training steps reused few blocks");

    QCOMPARE(withCache.size(), withoutCache.size());
    for (std::size_t i = 0; i < withCache.size(); ++i)
        QVERIFY2(torch::equal(withCache[i], withoutCache[i]), qPrintable(QString("result %1 differs").arg(i)));
}

void TestBlockCache::aFreedBlockServesTheNextRequestOfItsClass()
{
    QVERIFY(installCpuBlockCache());
    void* first = nullptr;
    {
        const torch::Tensor t = tensorOfBytes(1000000);
        first = t.data_ptr();
        QCOMPARE(reinterpret_cast<std::uintptr_t>(first) % 64, std::uintptr_t{0});
    }
    const CpuBlockCacheStats before = cpuBlockCacheStats();
    // 1,010,000 bytes are in the same 1 MiB class as 1,000,000.
    const torch::Tensor again = tensorOfBytes(1010000);
    QCOMPARE(again.data_ptr(), first);
    const CpuBlockCacheStats after = cpuBlockCacheStats();
    QCOMPARE(after.reused, before.reused + 1);
    QCOMPARE(after.fresh, before.fresh);
    QCOMPARE(after.liveBytes, before.liveBytes + 1048576);
    QCOMPARE(after.idleBytes, before.idleBytes - 1048576);
}

void TestBlockCache::aRequestMayTakeABlockUpToTwiceItsSize()
{
    QVERIFY(installCpuBlockCache());
    // Live throughout, so that the peak in use leaves room for an idle 8 MiB
    // block when the 3 MiB request below takes new memory.
    const torch::Tensor ballast = tensorOfBytes(16 * kMiB);
    void* block = nullptr;
    {
        const torch::Tensor t = tensorOfBytes(8 * kMiB);
        block = t.data_ptr();
    }
    {
        // 5 MiB: the 8 MiB block is less than twice as large, and counts whole.
        const std::size_t liveBefore = cpuBlockCacheStats().liveBytes;
        const torch::Tensor t = tensorOfBytes(5 * kMiB);
        QCOMPARE(t.data_ptr(), block);
        QCOMPARE(cpuBlockCacheStats().idleBytes, std::size_t{0});
        QCOMPARE(cpuBlockCacheStats().liveBytes, liveBefore + 8 * kMiB);
    }
    // 3 MiB: the 8 MiB block is more than twice as large, and stays idle.
    const torch::Tensor t = tensorOfBytes(3 * kMiB);
    QVERIFY(t.data_ptr() != block);
    QCOMPARE(cpuBlockCacheStats().idleBytes, std::size_t(8 * kMiB));
}

void TestBlockCache::smallRequestsBypassTheCache()
{
    QVERIFY(installCpuBlockCache());
    const CpuBlockCacheStats before = cpuBlockCacheStats();
    const torch::Tensor small = tensorOfBytes(kMinBlockBytes - 64);
    const CpuBlockCacheStats after = cpuBlockCacheStats();
    QCOMPARE(after.liveBytes, before.liveBytes);
    QCOMPARE(after.reused + after.fresh, before.reused + before.fresh);
    small.fill_(3.0f);
    QCOMPARE(small.sum().item<double>(), 3.0 * static_cast<double>(small.numel()));
}

void TestBlockCache::liveTensorsNeverShareABlock()
{
    QVERIFY(installCpuBlockCache());
    // Freed and taken again in between, so that the idle lists are in play.
    std::vector<torch::Tensor> kept;
    std::set<const void*> blocks;
    for (int i = 0; i < 40; ++i) {
        torch::Tensor t = tensorOfBytes(kMiB + 4 * (i % 5));
        if (i % 3 == 0)
            continue;  // freed at once
        t.fill_(static_cast<float>(i));
        QVERIFY2(blocks.insert(t.data_ptr()).second, "two live tensors got the same block");
        kept.push_back(t);
    }
    int index = 0;
    for (int i = 0; i < 40; ++i) {
        if (i % 3 == 0)
            continue;
        QCOMPARE(kept[index].min().item<float>(), static_cast<float>(i));
        QCOMPARE(kept[index].max().item<float>(), static_cast<float>(i));
        ++index;
    }
}

void TestBlockCache::rawAllocationsComeBackThroughTheRawDeleter()
{
    // LibTorch (oneDNN's buffers, some kernels' scratch space) allocates raw
    // and frees through raw_deleter(), one function for every size.
    QVERIFY(installCpuBlockCache());
    c10::Allocator* allocator = c10::GetCPUAllocator();
    QVERIFY(allocator->raw_deleter() != nullptr);
    for (const std::size_t bytes : {std::size_t{100}, std::size_t{3} * kMiB}) {
        const CpuBlockCacheStats before = cpuBlockCacheStats();
        void* raw = allocator->raw_allocate(bytes);
        QVERIFY(raw);
        QCOMPARE(reinterpret_cast<std::uintptr_t>(raw) % 64, std::uintptr_t{0});
        std::memset(raw, 0x5a, bytes);
        const std::size_t cached = bytes >= kMinBlockBytes ? cpuBlockClass(bytes) : 0;
        const CpuBlockCacheStats live = cpuBlockCacheStats();
        QCOMPARE(live.liveBytes, before.liveBytes + cached);
        allocator->raw_deallocate(raw);
        const CpuBlockCacheStats after = cpuBlockCacheStats();
        QCOMPARE(after.liveBytes, before.liveBytes);
        QCOMPARE(after.idleBytes, live.idleBytes + cached);
        if (cached) {  // and the block serves the next request of its class
            void* again = allocator->raw_allocate(bytes);
            QCOMPARE(again, raw);
            allocator->raw_deallocate(again);
        }
    }
}

void TestBlockCache::idleMemoryIsBoundedByThePeakInUse()
{
    QVERIFY(installCpuBlockCache());
    releaseCpuBlockCache();
    QCOMPARE(cpuBlockCacheStats().idleBytes, std::size_t{0});

    // Sixteen sizes of distinct classes (the step is at most 1 MiB below
    // 16 MiB), one at a time: without the bound 136 MiB would stay idle, far
    // more than was ever in use at once.
    const CpuBlockCacheStats start = cpuBlockCacheStats();
    void* last = nullptr;
    for (std::int64_t mib = 1; mib <= 16; ++mib) {
        const torch::Tensor t = tensorOfBytes(mib * kMiB);
        last = t.data_ptr();
    }
    const CpuBlockCacheStats after = cpuBlockCacheStats();
    QVERIFY(after.peakLiveBytes >= start.liveBytes + 16 * kMiB);
    QVERIFY2(after.idleBytes <= 2 * after.peakLiveBytes, "idle blocks exceed twice the peak in use");
    QVERIFY2(after.returned > start.returned, "nothing went back to the system");
    // The least recently requested classes went first: the last one is still there.
    const torch::Tensor again = tensorOfBytes(16 * kMiB);
    QCOMPARE(again.data_ptr(), last);

    releaseCpuBlockCache();
    QCOMPARE(cpuBlockCacheStats().idleBytes, std::size_t{0});
}

// A wide model's step: its QKV output, context and FFN hidden, each freed
// before the next is taken, are more bytes idle between steps than were ever
// live at once. All stay idle, so the next step's first request gets its block
// back rather than fresh pages (with idle bounded by once the peak, the class
// requested least recently went back to the system every step).
void TestBlockCache::aStepsClassesStayIdleBeyondItsPeak()
{
    QVERIFY(installCpuBlockCache());
    // A peak at least twice what is live now, plus 16 MiB; then nothing idle.
    const std::int64_t live = static_cast<std::int64_t>(cpuBlockCacheStats().liveBytes);
    tensorOfBytes((16 * kMiB + 2 * live) / kMiB * kMiB);
    releaseCpuBlockCache();
    const CpuBlockCacheStats start = cpuBlockCacheStats();
    const std::int64_t room = static_cast<std::int64_t>(start.peakLiveBytes - start.liveBytes);
    QVERIFY(room >= 16 * kMiB);

    // Four classes an eighth apart, smallest first (so that none takes another's
    // idle block), each within the room under the peak: together 1.58 times the
    // room, more than the peak (what is live is at most a third of it), less
    // than twice it.
    const std::int64_t base = room / 3 / kMiB * kMiB;
    void* first = nullptr;
    std::size_t idle = 0;
    for (std::int64_t eighths = 8; eighths <= 11; ++eighths) {
        const std::int64_t bytes = base * eighths / 8;
        const torch::Tensor t = tensorOfBytes(bytes);
        if (!first)
            first = t.data_ptr();
        idle += cpuBlockClass(static_cast<std::size_t>(bytes));
    }
    const CpuBlockCacheStats after = cpuBlockCacheStats();
    QCOMPARE(after.peakLiveBytes, start.peakLiveBytes);
    QVERIFY2(idle > after.peakLiveBytes, "the step's classes fit within the peak: the case is not made");
    QCOMPARE(after.returned, start.returned);
    QCOMPARE(after.idleBytes, start.idleBytes + idle);

    const torch::Tensor nextStep = tensorOfBytes(base);
    QCOMPARE(nextStep.data_ptr(), first);

    releaseCpuBlockCache();
}

void TestBlockCache::manyThreadsAllocateAndFree()
{
    QVERIFY(installCpuBlockCache());
    const std::size_t liveBefore = cpuBlockCacheStats().liveBytes;
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w) {
        threads.emplace_back([w, &wrong] {
            for (int i = 0; i < 200; ++i) {
                const float value = static_cast<float>(w * 1000 + i);
                torch::Tensor a = torch::full({(i % 7 + 1) * 20000}, value);
                const torch::Tensor b = a + 1.0f;  // allocated while `a` is live
                if (a.max().item<float>() != value || b.min().item<float>() != value + 1.0f)
                    ++wrong;
            }
        });
    }
    for (std::thread& t : threads)
        t.join();
    QCOMPARE(wrong.load(), 0);
    QCOMPARE(cpuBlockCacheStats().liveBytes, liveBefore);
}

QTEST_GUILESS_MAIN(TestBlockCache)
#include "tst_cpublockcache.moc"
