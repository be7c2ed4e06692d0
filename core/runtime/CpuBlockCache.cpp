#include "CpuBlockCache.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <string_view>

#include <sys/mman.h>

namespace widelab {
namespace {

constexpr std::size_t kAlignment = 64;  // what LibTorch's own CPU allocator guarantees
constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
constexpr std::size_t kLargestFit = 2;  // a request may take an idle block up to this many times its size
// Idle blocks may reach this many times the peak in use. Once was too few: a
// wide model's step uses more distinct classes (its QKV output, context, FFN
// hidden) than fit in its peak, and the one requested least recently went back
// to the system every step, to return as freshly cleared pages.
constexpr std::size_t kIdleOverPeak = 2;

// Every allocation starts with this header, one alignment unit before the data
// LibTorch sees: LibTorch frees some buffers through Allocator::raw_deleter,
// one function for every size, which must tell a cached block from a small one.
struct BlockHeader {
    std::uint64_t magic;  // kMagic: a block of this allocator
    std::size_t size;     // bytes after the header: the size class, or the request
    bool cached;
    bool idle;              // cached blocks: in an idle list, not in a tensor
    BlockHeader* nextIdle;  // the size class's idle list, so that freeing never allocates
};
constexpr std::uint64_t kMagic = 0x57'69'64'65'4c'61'62'21;  // "WideLab!"
static_assert(sizeof(BlockHeader) <= kAlignment);

void* dataOf(BlockHeader* header) { return reinterpret_cast<char*>(header) + kAlignment; }
BlockHeader* headerOf(void* data) { return reinterpret_cast<BlockHeader*>(static_cast<char*>(data) - kAlignment); }

// Small blocks come from the C heap. Cached blocks are mapped on their own:
// from the heap, the ones given back would sit between small live ones,
// unreturnable, and the process's memory would creep up over a long run.
BlockHeader* newBlock(std::size_t size, bool cached)
{
    void* memory = nullptr;
    if (cached) {
        memory = mmap(nullptr, kAlignment + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED)
            return nullptr;
        // Large blocks in 2 MiB pages where the kernel has them (transparent
        // huge pages, "madvise" mode on Debian): 1/512 of the page faults and
        // fewer TLB misses over the attention probabilities.
        if (size >= kHugePageBytes)
            madvise(memory, kAlignment + size, MADV_HUGEPAGE);
    } else {
        memory = std::aligned_alloc(kAlignment, (kAlignment + size + kAlignment - 1) / kAlignment * kAlignment);
        if (!memory)
            return nullptr;
    }
    return new (memory) BlockHeader{kMagic, size, cached, false, nullptr};
}

void deleteBlock(BlockHeader* block)
{
    if (block->cached)
        munmap(block, kAlignment + block->size);
    else
        std::free(block);
}

// The cached blocks, live and idle, behind a mutex: tensors are freed on any thread.
class BlockPool {
public:
    BlockHeader* take(std::size_t bytes)
    {
        const std::size_t size = cpuBlockClass(bytes);
        std::lock_guard lock(m_mutex);
        m_classes[size].lastRequest = ++m_clock;
        BlockHeader* block = takeIdle(size);
        if (block) {
            ++m_stats.reused;
        } else {
            // Idle blocks of other classes make room first, as in put(): idle
            // and new memory together stay within kIdleOverPeak times the peak in use.
            const std::size_t bound = kIdleOverPeak * m_stats.peakLiveBytes;
            returnIdle(bound > size ? bound - size : 0);
            block = newBlock(size, true);
            if (!block) {  // give the idle blocks back and try once more
                returnIdle(0);
                block = newBlock(size, true);
            }
            TORCH_CHECK(block, "CPU out of memory: WideLab's block cache could not allocate ", size, " bytes (",
                        m_stats.liveBytes, " bytes in tensors)");
            ++m_stats.fresh;
        }
        m_stats.liveBytes += block->size;
        m_stats.peakLiveBytes = std::max(m_stats.peakLiveBytes, m_stats.liveBytes);
        return block;
    }

    void put(BlockHeader* block)
    {
        std::lock_guard lock(m_mutex);
        TORCH_INTERNAL_ASSERT(!block->idle, "a block freed twice in WideLab's block cache");
        SizeClass& sizeClass = m_classes.find(block->size)->second;  // made by take()
        block->idle = true;
        block->nextIdle = sizeClass.idle;
        sizeClass.idle = block;
        m_stats.liveBytes -= block->size;
        m_stats.idleBytes += block->size;
        returnIdle(kIdleOverPeak * m_stats.peakLiveBytes);
    }

    CpuBlockCacheStats stats()
    {
        std::lock_guard lock(m_mutex);
        return m_stats;
    }

    void releaseAll()
    {
        std::lock_guard lock(m_mutex);
        returnIdle(0);
    }

private:
    struct SizeClass {
        BlockHeader* idle = nullptr;  // most recently freed first
        std::uint64_t lastRequest = 0;
    };

    // An idle block of the class `size`, or else of the smallest class up to
    // kLargestFit times larger: batches of varying length ask for ever new
    // sizes, and a slightly larger block beats mapping a new one. Null when
    // there is none. Called with the mutex held.
    BlockHeader* takeIdle(std::size_t size)
    {
        for (auto it = m_classes.lower_bound(size); it != m_classes.end() && it->first <= size * kLargestFit; ++it) {
            BlockHeader* block = it->second.idle;
            if (!block)
                continue;
            it->second.idle = block->nextIdle;  // the most recently freed: likeliest still in cache
            it->second.lastRequest = m_clock;
            block->idle = false;
            m_stats.idleBytes -= block->size;
            return block;
        }
        return nullptr;
    }

    // While more than `limit` bytes are idle, frees the idle blocks of the size
    // class requested least recently. Called with the mutex held.
    void returnIdle(std::size_t limit)
    {
        while (m_stats.idleBytes > limit) {
            auto oldest = m_classes.end();
            for (auto it = m_classes.begin(); it != m_classes.end(); ++it) {
                if (it->second.idle
                    && (oldest == m_classes.end() || it->second.lastRequest < oldest->second.lastRequest))
                    oldest = it;
            }
            BlockHeader* block = oldest->second.idle;
            oldest->second.idle = block->nextIdle;
            m_stats.idleBytes -= block->size;
            deleteBlock(block);
            ++m_stats.returned;
        }
    }

    std::mutex m_mutex;
    std::map<std::size_t, SizeClass> m_classes;  // by block size
    CpuBlockCacheStats m_stats;
    std::uint64_t m_clock = 0;
};

// Never destroyed: tensors freed during static destruction still find it.
BlockPool& pool()
{
    static auto* blocks = new BlockPool;
    return *blocks;
}

void giveBack(void* data)
{
    if (!data)
        return;
    BlockHeader* block = headerOf(data);
    TORCH_INTERNAL_ASSERT(block->magic == kMagic, "memory freed through WideLab's block cache that it did not "
                                                  "allocate: install the cache before any LibTorch work");
    if (block->cached)
        pool().put(block);
    else
        deleteBlock(block);
}

class CachingCpuAllocator final : public c10::Allocator {
public:
    // LibTorch 1.x and early 2.x declare allocate() const, later versions
    // non-const: defining both overrides whichever the headers declare. No
    // `override` on any member, as it cannot go on these two.
    c10::DataPtr allocate(std::size_t bytes) const { return serve(bytes); }
    c10::DataPtr allocate(std::size_t bytes) { return serve(bytes); }
    // Pure virtual in the newer versions; a plain member in the older.
    void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
    // One deleter for every block: LibTorch's raw_allocate/raw_deallocate need it.
    c10::DeleterFnPtr raw_deleter() const { return &giveBack; }

private:
    static c10::DataPtr serve(std::size_t bytes)
    {
        const c10::Device cpu(c10::DeviceType::CPU);
        if (bytes == 0)
            return {nullptr, nullptr, &giveBack, cpu};
        // As LibTorch's own allocator: a "size" past this is a negative number cast.
        TORCH_CHECK(static_cast<std::ptrdiff_t>(bytes) >= 0, "CPU out of memory: cannot allocate ", bytes, " bytes");
        BlockHeader* block = bytes >= kMinBlockBytes ? pool().take(bytes) : newBlock(bytes, false);
        TORCH_CHECK(block, "CPU out of memory: could not allocate ", bytes, " bytes");
        void* data = dataOf(block);
        return {data, data, &giveBack, cpu};
    }
};

std::atomic<bool> g_installed = false;

}  // namespace

std::size_t cpuBlockClass(std::size_t bytes)
{
    const std::size_t step = std::max(std::bit_floor(std::max<std::size_t>(bytes, 1)) / 8, kAlignment);
    return (bytes + step - 1) / step * step;
}

bool installCpuBlockCache()
{
    static std::once_flag once;
    std::call_once(once, [] {
        const char* setting = std::getenv("WIDELAB_CPU_BLOCK_CACHE");
        if (setting && std::string_view(setting) == "0")
            return;
        // Owned by no one: LibTorch keeps the pointer for the life of the process.
        static auto* allocator = new CachingCpuAllocator;
        c10::SetCPUAllocator(allocator, std::numeric_limits<std::uint8_t>::max());
        g_installed = c10::GetCPUAllocator() == allocator;
    });
    return g_installed;
}

bool cpuBlockCacheInstalled() { return g_installed; }

CpuBlockCacheStats cpuBlockCacheStats() { return pool().stats(); }

void releaseCpuBlockCache() { pool().releaseAll(); }

}  // namespace widelab
