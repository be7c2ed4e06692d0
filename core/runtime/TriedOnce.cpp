#include "TriedOnce.h"

#include "StepCapture.h"

#if WIDELAB_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <exception>

namespace widelab {

std::string TriedOnce::refusal(const c10::Device& device,
                               const std::function<std::string(const c10::Device&)>& attempt)
{
    const std::lock_guard lock(m_mutex);
    c10::DeviceIndex index = device.has_index() ? device.index() : c10::DeviceIndex(0);
#if WIDELAB_TORCH_CUDA
    if (device.is_cuda() && !device.has_index())
        index = c10::cuda::current_device();
#endif
    const c10::Device on(device.type(), index);
    const auto key = std::make_pair(on.type(), on.index());
    if (const auto found = m_tried.find(key); found != m_tried.end())
        return found->second;
    if (cudaGraphBeingRecorded(on))
        return m_what + " is not yet tried on " + on.str() + ", and a CUDA graph is being recorded";
    std::string why;
    try {
        why = attempt(on);
    } catch (const std::exception& error) {
        const std::string message = error.what();
        why = m_what + " fails on " + on.str() + ": " + message.substr(0, message.find('\n'));
    }
    return m_tried[key] = why;
}

}  // namespace widelab
