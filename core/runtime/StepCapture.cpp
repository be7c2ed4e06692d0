#include "StepCapture.h"

#include <torch/cuda.h>

#ifdef WIDELAB_TORCH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

#include <stdexcept>

namespace widelab {

void synchronizeDevice(const c10::Device& device)
{
    if (device.is_cuda())
        torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

bool cudaGraphBeingRecorded(const c10::Device& device)
{
#ifdef WIDELAB_TORCH_CUDA
    if (!device.is_cuda())
        return false;
    const c10::cuda::OptionalCUDAGuard onDevice(device.has_index() ? std::optional<c10::Device>(device) : std::nullopt);
    return c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
#else
    (void)device;
    return false;
#endif
}

std::optional<std::string> cudaGraphRefusal(const c10::Device& device)
{
#ifdef WIDELAB_TORCH_CUDA
    if (!device.is_cuda())
        return "the " + device.str() + " device has no CUDA graphs";
    return std::nullopt;
#else
    return "this LibTorch was built without CUDA (the " + device.str() + " device has no CUDA graphs)";
#endif
}

Recorder cudaGraphRecorder(const c10::Device& device)
{
    if (const auto refusal = cudaGraphRefusal(device))
        throw std::invalid_argument("a CUDA graph cannot be recorded: " + *refusal);
#ifdef WIDELAB_TORCH_CUDA
    // One memory pool for every graph of this recorder: a replay's intermediate
    // tensors are dead when it ends, so graphs replayed one at a time may share
    // their memory (eight shapes of a step would otherwise hold eight steps'
    // activations). What lives past a replay (its outputs) stays allocated, so
    // no other capture takes it.
    const c10::cuda::CUDAGuard onDevice(device);
    const auto pool = at::cuda::graph_pool_handle();
    return [device, pool](const std::function<void()>& work) -> Replay {
        const c10::cuda::CUDAGuard onDevice(device);
        auto graph = std::make_shared<at::cuda::CUDAGraph>();
        const bool cached = at::autocast::is_autocast_cache_enabled();
        at::autocast::set_autocast_cache_enabled(false);
        try {
            graph->capture_begin(pool);
            try {
                work();
            } catch (...) {
                // End the capture the work broke, so that the stream takes work again.
                try {
                    graph->capture_end();
                } catch (...) {
                }
                (void)cudaGetLastError();
                throw;
            }
            graph->capture_end();
        } catch (const std::exception& error) {
            at::autocast::set_autocast_cache_enabled(cached);
            throw std::runtime_error(std::string("capturing a CUDA graph failed: ") + error.what());
        }
        at::autocast::set_autocast_cache_enabled(cached);
        return [graph] { graph->replay(); };
    };
#else
    return {};
#endif
}

#ifdef WIDELAB_TORCH_CUDA
struct SideStream::Guard {
    c10::cuda::CUDAStreamGuard stream;
};
#else
struct SideStream::Guard {};
#endif

SideStream::SideStream(const c10::Device& device) : m_device(device)
{
#ifdef WIDELAB_TORCH_CUDA
    if (!device.is_cuda())
        return;
    synchronizeDevice(device);
    m_guard.reset(new Guard{c10::cuda::CUDAStreamGuard(c10::cuda::getStreamFromPool(false, device.index()))});
#endif
}

SideStream::~SideStream()
{
    if (!m_guard)
        return;
    try {
        synchronizeDevice(m_device);
    } catch (...) {  // a device that failed fails again at the next use, with its message
    }
}

}  // namespace widelab
