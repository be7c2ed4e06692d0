// defines: DeviceMemory, deviceMemory, resetPeakDeviceMemory, releaseCachedDeviceMemory:
// the memory a run holds on its device, as the allocator that serves it counts it
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace widelab {

// On a GPU: the CUDA caching allocator's bytes in live tensors (allocated) and
// the bytes it holds from the driver (reserved), now and at their peaks since
// the last reset. On the CPU: the process's resident set now (both fields) and
// its high-water mark (both peaks), which is what the kernel charges the run.
struct DeviceMemory {
    bool cuda = false;
    std::int64_t allocated = 0, reserved = 0;
    std::int64_t peakAllocated = 0, peakReserved = 0;
};

// Never synchronises the device: the CUDA allocator counts on the host.
DeviceMemory deviceMemory(const c10::Device& device);

// Starts the peaks again from the current figures (CUDA only; a process's
// resident high-water mark cannot be reset).
void resetPeakDeviceMemory(const c10::Device& device);

// Gives the CUDA allocator's idle blocks back to the driver (after an
// out-of-memory error, so that a retry or another process can use them).
void releaseCachedDeviceMemory(const c10::Device& device);

// What a run could still allocate on `device`: on a GPU, the driver's free
// memory; on the CPU, the kernel's MemAvailable, or less where a cgroup limit
// (a container) leaves less. 0 when it cannot be told.
std::int64_t availableMemory(const c10::Device& device);

}  // namespace widelab
