// defines: installCpuBlockCache, cpuBlockCacheInstalled, cpuBlockCacheStats,
// releaseCpuBlockCache: a CPU allocator for LibTorch that keeps freed large
// blocks for the next tensor of about the same size
#pragma once

#include <cstddef>
#include <cstdint>

namespace widelab {

// Why: a training step allocates the same large activations every step, and
// glibc hands each block of 32 MB or more (smaller ones too, early on) to the
// kernel and back: every step then pays a page fault and a page clear per 4 KiB
// of activations, a quarter of the step time of a wide model here. The cache
// keeps freed blocks of at least kMinBlockBytes, in size classes an eighth of a
// power of two apart (at most 12.5 % slack), and hands the most recently freed
// block of the class back, or of the smallest class with one up to twice as
// large (batches of varying length ask for new sizes all the time). Smaller
// requests are plain aligned allocations.
//
// Idle blocks are bounded: whenever more bytes would be idle (or idle and newly
// taken) than twice what was ever live in cached blocks at once, the blocks of
// the size classes requested least recently go back to the system. Live and
// idle together stay within three times that peak. The peak counts blocks, not
// tensors: a tensor may hold a block up to 2.25x its size (class slack, then a
// larger class), so the bound is loose; the 10,000-step run in docs/performance.md
// shows what the earlier bound (idle within once the peak) came to in practice.
//
// Installs once, process-wide and for good, replacing LibTorch's CPU allocator;
// call it first thing in main(), before any LibTorch work: buffers LibTorch
// allocated raw before it would otherwise come back to it. Returns false when
// WIDELAB_CPU_BLOCK_CACHE=0 in the environment asked it not to, which is the
// setting for sanitizer and profiler runs (reused blocks hide use-after-free
// from a sanitizer, and the profiler sees no CPU memory events).
bool installCpuBlockCache();
bool cpuBlockCacheInstalled();

inline constexpr std::size_t kMinBlockBytes = std::size_t{64} << 10;

struct CpuBlockCacheStats {
    std::size_t liveBytes = 0;      // in tensors now, cached blocks only
    std::size_t idleBytes = 0;      // freed, kept for reuse
    std::size_t peakLiveBytes = 0;  // the most ever live at once
    std::uint64_t reused = 0;       // requests served from idle blocks
    std::uint64_t fresh = 0;        // requests that took new memory
    std::uint64_t returned = 0;     // idle blocks given back to the system
};
CpuBlockCacheStats cpuBlockCacheStats();

// Gives every idle block back to the system (e.g. when a run ends).
void releaseCpuBlockCache();

// The size class a request of `bytes` is served from (bytes >= kMinBlockBytes).
std::size_t cpuBlockClass(std::size_t bytes);

}  // namespace widelab
