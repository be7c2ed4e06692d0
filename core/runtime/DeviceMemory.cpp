#include "DeviceMemory.h"

// A CUDA build of LibTorch (CMakeLists.txt decides) has the caching allocator;
// with Debian's CPU build every device is the CPU.
#ifdef WIDELAB_TORCH_CUDA
#include <ATen/Functions.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <cstdio>
#include <filesystem>
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

// The first number in `file`, or -1 (absent, or "max": no limit).
std::int64_t numberIn(const std::filesystem::path& file)
{
    std::ifstream in(file);
    long long value = -1;
    if (!(in >> value))
        return -1;
    return value;
}

std::int64_t availableHostMemory()
{
    std::int64_t available = -1;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
        long long kib = 0;
        if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kib) == 1)
            available = kib * 1024;
    }
    // cgroup v2: what the container may still take.
    const std::int64_t limit = numberIn("/sys/fs/cgroup/memory.max");
    const std::int64_t used = numberIn("/sys/fs/cgroup/memory.current");
    if (limit > 0 && used >= 0 && (available < 0 || limit - used < available))
        available = std::max<std::int64_t>(0, limit - used);
    return std::max<std::int64_t>(0, available);
}

#ifdef WIDELAB_TORCH_CUDA
// The caching allocator sets itself up at the first CUDA tensor; asking it for
// statistics before that fails ("Invalid device argument: did you call
// init?"). Creating one small tensor sets it up the way LibTorch itself does.
c10::DeviceIndex readyAllocator(const c10::Device& device)
{
    const c10::DeviceIndex index = device.has_index() ? device.index() : 0;
    (void)at::empty({1}, at::TensorOptions().device(c10::Device(c10::kCUDA, index)));
    return index;
}
#endif

}  // namespace

std::int64_t availableMemory(const c10::Device& device)
{
#ifdef WIDELAB_TORCH_CUDA
    if (device.is_cuda()) {
        const c10::cuda::CUDAGuard guard(device);
        std::size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
            cudaGetLastError();  // clear it: the question failed, not the run
            return 0;
        }
        return static_cast<std::int64_t>(free);
    }
#endif
    return device.is_cuda() ? 0 : availableHostMemory();
}

DeviceMemory deviceMemory(const c10::Device& device)
{
#ifdef WIDELAB_TORCH_CUDA
    if (device.is_cuda()) {
        namespace allocator = c10::cuda::CUDACachingAllocator;
        constexpr auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
        const auto stats = allocator::getDeviceStats(readyAllocator(device));
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
        c10::cuda::CUDACachingAllocator::resetPeakStats(readyAllocator(device));
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


}  // namespace widelab
