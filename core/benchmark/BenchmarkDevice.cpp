#include "BenchmarkDevice.h"

#include "runtime/Runtime.h"
#include "runtime/StepCapture.h"

#include <torch/cuda.h>
#include <torch/torch.h>


#include <algorithm>
#include <chrono>
#include <memory>
#include <regex>
#include <stdexcept>

namespace widelab {

c10::Device benchmarkDevice(const std::string& name)
{
    static const std::regex valid(R"(cpu|cuda(:[0-9]{1,3})?)");
    if (!std::regex_match(name, valid))
        throw std::invalid_argument("--device: \"" + name + "\" is not cpu, cuda or cuda:N");
    if (name == "cpu")
        return c10::Device(c10::kCPU);
    if (!torch::cuda::is_available())
        throw std::invalid_argument("--device " + name + ": this LibTorch has no usable CUDA device");
    const std::int64_t index = name.size() > 5 ? std::stoll(name.substr(5)) : 0;
    const auto count = static_cast<std::int64_t>(torch::cuda::device_count());
    if (index >= count)
        throw std::invalid_argument("--device " + name + ": only " + std::to_string(count) + " CUDA device(s) present");
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::function<void()> captureCudaGraph(const c10::Device& device, const std::function<void()>& queueStep)
{
    const Recorder record = cudaGraphRecorder(device);
    Replay replay;
    {
        const SideStream onSide(device);
        for (int i = 0; i < 3; ++i)  // warm-up on the capture's stream
            queueStep();
        synchronizeDevice(device);
        replay = record(queueStep);
    }
    return replay;
}

double measureDeviceMatmulPeak(const c10::Device& device, c10::ScalarType dtype, std::int64_t size, int repeats)
{
    if (device.is_cpu() && dtype == c10::kFloat)
        return measureMatmulPeak(size, repeats);
    torch::NoGradGuard noGrad;
    // Deterministic values, without the default generator (as measureMatmulPeak).
    const auto options = torch::TensorOptions().dtype(dtype).device(device);
    const torch::Tensor a = torch::linspace(-1.0, 1.0, size * size, options).view({size, size});
    const torch::Tensor b = a.t().contiguous();
    torch::Tensor c = torch::mm(a, b);
    // A GPU finishes one product in about a millisecond: time a burst.
    const int burst = device.is_cuda() ? 20 : 1;
    const double flops = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
    double best = 0.0;
    for (int i = 0; i < repeats; ++i) {
        synchronizeDevice(device);
        const auto start = std::chrono::steady_clock::now();
        for (int j = 0; j < burst; ++j)
            torch::mm_out(c, a, b);
        synchronizeDevice(device);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, burst * flops / std::max(seconds, 1e-9));
    }
    return best;
}

std::string shortDtypeName(c10::ScalarType dtype)
{
    switch (dtype) {
    case c10::kBFloat16:
        return "bf16";
    case c10::kHalf:
        return "fp16";
    case c10::kFloat:
        return "fp32";
    case c10::kDouble:
        return "fp64";
    default:
        return c10::toString(dtype);
    }
}

}  // namespace widelab
