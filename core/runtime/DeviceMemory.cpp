#include "DeviceMemory.h"

// A CUDA build of LibTorch (CMakeLists.txt decides) has the caching allocator;
// with Debian's CPU build every device is the CPU.
#ifdef WIDELAB_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <cstdio>
#include <fstream>
#include <string>

namespace widelab {
namespace {

// VmRSS and VmHWM of /proc/self/status, in bytes.
DeviceMemory processMemory()
{
    DeviceMemory memory;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        long long kib = 0;
        if (std::sscanf(line.c_str(), "VmRSS: %lld kB", &kib) == 1)
            memory.allocated = memory.reserved = kib * 1024;
        else if (std::sscanf(line.c_str(), "VmHWM: %lld kB", &kib) == 1)
            memory.peakAllocated = memory.peakReserved = kib * 1024;
    }
    return memory;
}

}  // namespace

DeviceMemory deviceMemory(const c10::Device& device)
{
#ifdef WIDELAB_TORCH_CUDA
    if (device.is_cuda()) {
        namespace allocator = c10::cuda::CUDACachingAllocator;
        constexpr auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
        const auto stats = allocator::getDeviceStats(device.has_index() ? device.index() : 0);
        DeviceMemory memory;
        memory.cuda = true;
        memory.allocated = stats.allocated_bytes[all].current;
        memory.reserved = stats.reserved_bytes[all].current;
        memory.peakAllocated = stats.allocated_bytes[all].peak;
        memory.peakReserved = stats.reserved_bytes[all].peak;
        return memory;
    }
#endif
    (void)device;
    return processMemory();
}

void resetPeakDeviceMemory(const c10::Device& device)
{
#ifdef WIDELAB_TORCH_CUDA
    if (device.is_cuda())
        c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : 0);
#endif
    (void)device;
}

void releaseCachedDeviceMemory(const c10::Device& device)
{
#ifdef WIDELAB_TORCH_CUDA
    if (device.is_cuda())
        c10::cuda::CUDACachingAllocator::emptyCache();
#endif
    (void)device;
}

std::string formatBytes(std::int64_t bytes)
{
    char text[32];
    const double value = static_cast<double>(bytes);
    if (value >= 1024.0 * 1024.0 * 1024.0)
        std::snprintf(text, sizeof text, "%.2f GiB", value / (1024.0 * 1024.0 * 1024.0));
    else
        std::snprintf(text, sizeof text, "%.1f MiB", value / (1024.0 * 1024.0));
    return text;
}

}  // namespace widelab
