#include "Runtime.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

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

}  // namespace widelab
