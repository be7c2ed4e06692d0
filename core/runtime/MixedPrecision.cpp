#include "MixedPrecision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace widelab {

// LibTorch 2.x names the device type autocast applies to; 1.x had one switch
// for "the GPU" (and deprecates nothing we call).
MixedPrecision::MixedPrecision(bool enabled) : m_enabled(enabled)
{
    if (!m_enabled)
        return;
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
}

MixedPrecision::~MixedPrecision()
{
    if (!m_enabled)
        return;
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
}

}  // namespace widelab
