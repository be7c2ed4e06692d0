// defines: MixedPrecision: bf16 autocast on CUDA for the forward passes of one
// scope (training steps, benchmarks); the router stays fp32 (Router.cpp)
#pragma once

namespace widelab {

// Enables CUDA autocast to bf16 for the scope when `enabled`; does nothing
// otherwise (the CPU always runs fp32). Leaving the scope drops autocast's
// cache of low-precision weight copies, which would otherwise outlive the step
// and feed the next steps stale weights. Scopes do not nest.
class MixedPrecision {
public:
    explicit MixedPrecision(bool enabled);
    ~MixedPrecision();
    MixedPrecision(const MixedPrecision&) = delete;
    MixedPrecision& operator=(const MixedPrecision&) = delete;

private:
    bool m_enabled;
};

}  // namespace widelab
