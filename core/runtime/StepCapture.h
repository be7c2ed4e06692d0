// defines: Replay, Recorder, cudaGraphRefusal, cudaGraphRecorder, SideStream,
// synchronizeDevice: device work recorded once and replayed (CUDA graphs), the
// stream it is recorded on, and waiting for a device
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace widelab {

// Waits until every kernel queued on `device` has finished; nothing on the CPU.
// Host clocks time a GPU's work only between two of these.
void synchronizeDevice(const c10::Device& device);

// Runs recorded work again: the same kernels, on the same memory.
using Replay = std::function<void()>;
// Records `work` and returns what runs it. The work must read and write only
// tensors that outlive the recording, and launch the same kernels whatever
// their contents (no reading back, no shape taken from data). Throws
// std::runtime_error naming why when it cannot be recorded.
using Recorder = std::function<Replay(const std::function<void()>& work)>;

// Whether a CUDA graph is being recorded on the current stream of `device`
// (false on a CPU): work that copies from the host, or tries something once,
// must not run then.
bool cudaGraphBeingRecorded(const c10::Device& device);

// Why `device` cannot record CUDA graphs ("the CPU has no CUDA graphs", "this
// LibTorch was built without CUDA"), or nothing when it can.
std::optional<std::string> cudaGraphRefusal(const c10::Device& device);

// Captures the work as a CUDA graph on the device's current stream, which must
// be a side stream (SideStream): the capture queues nothing, so the work has
// not run when the recorder returns. Autocast's cache is off during the
// capture (its casts would not outlive it). The recorder's graphs share one
// memory pool: they must be replayed one at a time, and a tensor one of them
// reads must not be written by another (the outputs each keeps are not).
// Throws std::invalid_argument when cudaGraphRefusal names a reason.
Recorder cudaGraphRecorder(const c10::Device& device);

// For its lifetime the current stream of a CUDA `device` is one from the pool,
// as a capture needs (not the legacy default stream, with which captured work
// may not synchronise). The device is synchronised on entry and on exit, so
// that work before and after sees this stream's work done. Nothing on the CPU.
class SideStream {
public:
    explicit SideStream(const c10::Device& device);
    ~SideStream();
    SideStream(const SideStream&) = delete;
    SideStream& operator=(const SideStream&) = delete;

private:
    struct Guard;
    std::unique_ptr<Guard> m_guard;
    c10::Device m_device;
};

}  // namespace widelab
