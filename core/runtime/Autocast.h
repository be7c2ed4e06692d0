// defines: AutocastScope, autocastEnabled: mixed-precision autocast on one
// device type while in scope, and whether it is on, through whichever
// autocast API the linked LibTorch offers
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace widelab {

// Enables autocast to `dtype` (bf16, fp16) for `deviceType` (CUDA or CPU) for
// the lifetime of the scope, e.g. around a forward pass and its loss; backward
// runs outside it. Leaving restores the previous state and, at the outermost
// scope, drops autocast's cache of low-precision weight copies, which would
// otherwise feed the next step stale weights. `enabled` false makes it a no-op.
// Code that must stay in fp32 (the MoE router) excludes the autocast keys itself.
class AutocastScope {
public:
    AutocastScope(c10::DeviceType deviceType, c10::ScalarType dtype, bool enabled = true);
    ~AutocastScope();
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

private:
    c10::DeviceType m_type;
    bool m_active;
    bool m_wasEnabled = false;
    c10::ScalarType m_previousDtype = c10::ScalarType::Undefined;
};

// Whether autocast is on for `deviceType` (CUDA or CPU) in this thread: then
// products come out in its type, whatever their inputs' type.
bool autocastEnabled(c10::DeviceType deviceType);

}  // namespace widelab
