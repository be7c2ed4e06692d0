#include "Runtime.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>
// Official CUDA builds of LibTorch ship these, with the CUDA runtime's headers;
// Debian's CPU build ships neither.
#if __has_include(<ATen/cuda/CUDAContext.h>) && __has_include(<cuda_runtime_api.h>)
#include <ATen/cuda/CUDAContext.h>
#define WIDELAB_CUDA_PROPERTIES 1
#endif

#include <cstdio>
#include <cstdlib>
#include <thread>

#include <unistd.h>

namespace widelab {

void preferPassiveOpenMpWait(char** argv)
{
    if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT"))
        return;
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
    // Only reached when exec failed: carry on with the spinning default.
}

int setComputeThreads(int threads)
{
    if (threads <= 0)
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
    return at::get_num_threads();
}

int computeThreads() { return at::get_num_threads(); }

std::string runtimeSummary()
{
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const int threads = at::get_num_threads();
    std::string summary = "LibTorch " TORCH_VERSION ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads")
                          + " (OpenMP "
                          + (policy ? std::string(policy) : std::string("default")) + " wait), ";
    summary += torch::cuda::is_available() ? std::to_string(torch::cuda::device_count()) + " CUDA device(s)"
                                           : "no CUDA";
    return summary;
}

std::vector<DeviceInfo> availableDevices()
{
    std::vector<DeviceInfo> devices;
    const unsigned cores = std::thread::hardware_concurrency();
    devices.push_back({"cpu", "CPU (" + std::to_string(cores) + " cores)", 0});
    if (!torch::cuda::is_available())
        return devices;
    for (std::size_t i = 0; i < torch::cuda::device_count(); ++i) {
        DeviceInfo gpu{"cuda:" + std::to_string(i), "GPU " + std::to_string(i), 0};
#ifdef WIDELAB_CUDA_PROPERTIES
        const cudaDeviceProp* properties = at::cuda::getDeviceProperties(static_cast<int>(i));
        gpu.memoryBytes = static_cast<std::int64_t>(properties->totalGlobalMem);
        char memory[32];
        std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(gpu.memoryBytes) / (1024.0 * 1024.0 * 1024.0));
        gpu.label += std::string(": ") + properties->name + " (" + memory + ")";
#endif
        devices.push_back(gpu);
    }
    return devices;
}

}  // namespace widelab
