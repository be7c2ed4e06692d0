// defines: Phase, PhaseTimer (opt-in wall-clock totals per phase of a training
// step, for `widelab-cli bench`), PhaseScope (the RAII timer the model uses)
// and phaseOfScope (which phase a profiler's range names)
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace at {
struct RecordFunction;
}

namespace widelab {

// What a PhaseScope measures. The scopes never nest, so the totals add up.
enum class Phase {
    Attention,  // attention sublayers' forward: qkv, scores, softmax, mixing, output projection
    FeedForward,  // dense FFN forward, or the expert products of a mixture
    Routing,    // router, top-k, slots, balance loss, dispatch copy and combine (forward)
    Paths,      // residual, dropout and path combination after each sublayer (forward)
    Backward,   // the whole backward pass (autograd does not run through the scopes)
    Optimizer,  // optimizer step
    Measurement,  // reading the loss back as a number
    Count
};

const char* phaseName(Phase phase);

// While PhaseTimer is enabled, each PhaseScope is also a range of LibTorch's
// profiler (a user scope) named "widelab::phase::" and its phase's name, so
// that a profile can say which phase launched each kernel (KernelProfile.h).
// The phase a range of that name stands for; none for any other name.
std::optional<Phase> phaseOfScope(std::string_view rangeName);

// Process-wide totals. Off by default; while off a PhaseScope costs one relaxed
// atomic load. Meant for one training thread: enable it only in the benchmark.
//
// A GPU runs kernels asynchronously, so a scope that reads the host's clock
// times the queueing of its work, not the work. `synchronize`, when given,
// waits for the device: scopes call it as they open and close, costing a
// round trip each, so the steps timed with it are not the steps timed for
// throughput. Never set in training.
class PhaseTimer {
public:
    using SynchronizeFunction = void (*)();
    static void setEnabled(bool enabled, SynchronizeFunction synchronize = nullptr)
    {
        s_synchronize = enabled ? synchronize : nullptr;
        s_enabled.store(enabled, std::memory_order_relaxed);
    }
    static bool enabled() { return s_enabled.load(std::memory_order_relaxed); }
    static void synchronize()
    {
        if (s_synchronize)
            s_synchronize();
    }
    static void reset() { s_seconds.fill(0.0); }
    static void add(Phase phase, double seconds) { s_seconds[static_cast<std::size_t>(phase)] += seconds; }
    static double seconds(Phase phase) { return s_seconds[static_cast<std::size_t>(phase)]; }
    // The phase whose scope is open, Phase::Count outside every scope; kept
    // only while enabled (OperatorCount.h attributes operators by it, from
    // autograd's threads too). Returns the phase it replaces.
    static Phase current() { return s_current.load(std::memory_order_relaxed); }
    static Phase enter(Phase phase) { return s_current.exchange(phase, std::memory_order_relaxed); }

private:
    static std::atomic<bool> s_enabled;
    static std::atomic<Phase> s_current;
    static SynchronizeFunction s_synchronize;  // set and read by the one benchmark thread
    static std::array<double, static_cast<std::size_t>(Phase::Count)> s_seconds;
};

class PhaseScope {
public:
    explicit PhaseScope(Phase phase) : m_phase(phase), m_on(PhaseTimer::enabled())
    {
        if (m_on) {
            PhaseTimer::synchronize();
            m_outer = PhaseTimer::enter(phase);
            m_range.reset(openRange(phase));
            m_start = std::chrono::steady_clock::now();
        }
    }
    ~PhaseScope()
    {
        if (!m_on)
            return;
        PhaseTimer::synchronize();
        PhaseTimer::add(m_phase, std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count());
        m_range.reset();
        PhaseTimer::enter(m_outer);
    }
    PhaseScope(const PhaseScope&) = delete;
    PhaseScope& operator=(const PhaseScope&) = delete;

private:
    // The profiler's range, or null where no profiler records (PhaseTimer.cpp).
    static at::RecordFunction* openRange(Phase phase);
    struct CloseRange {
        void operator()(at::RecordFunction* range) const;
    };

    Phase m_phase;
    Phase m_outer = Phase::Count;
    bool m_on;
    std::unique_ptr<at::RecordFunction, CloseRange> m_range;
    std::chrono::steady_clock::time_point m_start;
};

}  // namespace widelab
