#include "Runtime.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <thread>

namespace widelab {

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
    std::string summary = "LibTorch " TORCH_VERSION ", " + std::to_string(at::get_num_threads()) + " threads, ";
    summary += torch::cuda::is_available() ? std::to_string(torch::cuda::device_count()) + " CUDA device(s)"
                                           : "no CUDA";
    return summary;
}

}  // namespace widelab
