// defines: AutocastScope, autocastEnabled, autocastType, autocastWeight:
// mixed-precision autocast on one device type while in scope, whether it is
// on, its type, and a weight's copy in it, through whichever autocast API the
// linked LibTorch offers
#pragma once

#include <ATen/core/Tensor.h>
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

// The type products come out in on `x`'s device: autocast's when it is on
// there, else x's own.
c10::ScalarType autocastType(const at::Tensor& x);

// `weight` as autocast hands it to a product: while autocast is on for its
// device and it is an fp32 parameter, its low-precision copy, made once per
// outermost scope however many blocks share the weight (autocast's own
// cache), so that its gradient is summed over them in that type and cast
// back once; else `weight` itself. Autocast caches no view (a transpose, a
// slice), so a product that takes a view of a parameter asks for the copy
// first and views the copy.
at::Tensor autocastWeight(const at::Tensor& weight);

}  // namespace widelab
