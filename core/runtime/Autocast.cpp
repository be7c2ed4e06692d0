#include "Autocast.h"

#include <ATen/autocast_mode.h>

#include <stdexcept>
#include <string>

#if __has_include(<torch/version.h>)
#include <torch/version.h>
#endif

// LibTorch 2.4 and later take the device type as an argument (the per-device
// functions of 1.x/2.0 are deprecated there); Debian's 1.13 has no version.h.
#if defined(TORCH_VERSION_MAJOR) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))
#define WIDELAB_AUTOCAST_BY_DEVICE_TYPE 1
#endif

namespace widelab {
namespace {

void requireSupported(c10::DeviceType type)
{
    if (type != c10::DeviceType::CUDA && type != c10::DeviceType::CPU)
        throw std::invalid_argument("autocast: only CUDA and CPU are supported, not "
                                    + c10::DeviceTypeName(type, /*lower_case=*/true));
}

#ifdef WIDELAB_AUTOCAST_BY_DEVICE_TYPE
bool isEnabled(c10::DeviceType type) { return at::autocast::is_autocast_enabled(type); }
void setEnabled(c10::DeviceType type, bool on) { at::autocast::set_autocast_enabled(type, on); }
c10::ScalarType dtypeOf(c10::DeviceType type) { return at::autocast::get_autocast_dtype(type); }
void setDtype(c10::DeviceType type, c10::ScalarType dtype) { at::autocast::set_autocast_dtype(type, dtype); }
#else
bool isEnabled(c10::DeviceType type)
{
    return type == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void setEnabled(c10::DeviceType type, bool on)
{
    if (type == c10::DeviceType::CUDA)
        at::autocast::set_enabled(on);
    else
        at::autocast::set_cpu_enabled(on);
}
c10::ScalarType dtypeOf(c10::DeviceType type)
{
    return type == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
}
void setDtype(c10::DeviceType type, c10::ScalarType dtype)
{
    if (type == c10::DeviceType::CUDA)
        at::autocast::set_autocast_gpu_dtype(dtype);
    else
        at::autocast::set_autocast_cpu_dtype(dtype);
}
#endif

}  // namespace

bool autocastEnabled(c10::DeviceType deviceType)
{
    requireSupported(deviceType);
    return isEnabled(deviceType);
}

c10::ScalarType autocastType(const at::Tensor& x)
{
    const c10::DeviceType type = x.device().type();
    const bool supported = type == c10::DeviceType::CUDA || type == c10::DeviceType::CPU;
    return supported && isEnabled(type) ? dtypeOf(type) : x.scalar_type();
}

at::Tensor autocastWeight(const at::Tensor& weight)
{
    const c10::ScalarType to = autocastType(weight);
    if (weight.scalar_type() != at::kFloat || to == at::kFloat)
        return weight;
    return at::autocast::cached_cast(to, weight, weight.device().type());
}

AutocastScope::AutocastScope(c10::DeviceType deviceType, c10::ScalarType dtype, bool enabled)
    : m_type(deviceType), m_active(enabled)
{
    if (!m_active)
        return;
    requireSupported(m_type);
    m_wasEnabled = isEnabled(m_type);
    m_previousDtype = dtypeOf(m_type);
    setDtype(m_type, dtype);
    setEnabled(m_type, true);
    at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope()
{
    if (!m_active)
        return;
    if (at::autocast::decrement_nesting() == 0)
        at::autocast::clear_cache();
    setEnabled(m_type, m_wasEnabled);
    setDtype(m_type, m_previousDtype);
}

}  // namespace widelab
