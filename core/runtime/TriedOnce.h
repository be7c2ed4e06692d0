// defines: TriedOnce: whether a kernel of WideLab's own may run on a GPU,
// tried once per device against what LibTorch's operators give, the answer
// kept for the process
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace widelab {

class TriedOnce {
public:
    // `what` names the kernel in the reasons: "the routing kernel".
    explicit TriedOnce(std::string what) : m_what(std::move(what)) {}

    // Why the kernel cannot run on `device` (no index: on a GPU the current
    // one), or "". The first call for a device runs `attempt` on it,
    // which returns why the kernel's results differ, or "", and keeps that
    // answer; an exception it throws keeps "<what> fails on <device>: ..." as
    // the reason. Nothing is tried, or kept, while a CUDA graph is being
    // recorded on the device: the attempt copies to and from the host.
    // Callers say first which devices the kernel is for.
    std::string refusal(const c10::Device& device, const std::function<std::string(const c10::Device&)>& attempt);

private:
    std::string m_what;
    std::mutex m_mutex;
    std::map<std::pair<c10::DeviceType, c10::DeviceIndex>, std::string> m_tried;
};

}  // namespace widelab
