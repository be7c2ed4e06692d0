// defines: OperatorTime, KernelProfile, profileKernels: where some work spends
// its time, by ATen operator, by kernel and by phase of the step, through
// LibTorch's profiler: on a GPU the device time of the kernels and copies, on
// the CPU each operator's self time (`widelab-cli bench --kernels`)
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace widelab {

struct OperatorTime {
    std::string name;
    std::int64_t calls = 0;
    double seconds = 0.0;
};

// On a GPU the operator counts are those that launched a kernel or copy and
// their seconds the device time of what they launched; the kernels are listed
// by their own names too. On the CPU an operator's seconds are its self time:
// its span less the spans of the operators it called. Most time first.
struct KernelProfile {
    bool deviceTime = false;  // kernels on a GPU (true) or operators' self time on the CPU
    double seconds = 0.0;     // the sum over byOperator (all of it, where a caller keeps only the first entries)
    // The work's wall time under the profiler, from its start to the device's
    // last kernel. Beside `seconds`: on a GPU how long the device was idle (or
    // busy twice over, where streams overlap); on the CPU the time outside any
    // operator (WideLab's own kernels, the host's glue).
    double span = 0.0;
    std::vector<OperatorTime> byOperator;
    std::vector<OperatorTime> byKernel;  // empty on the CPU
    // The same seconds by the phase (PhaseTimer.h's names) whose scope was open
    // when the host reached the operator, "(outside the phases)" for the rest;
    // empty where no phase scope was open (PhaseTimer enabled) in the work.
    std::vector<OperatorTime> byPhase;
    std::string unavailable;             // why nothing was recorded; empty when something was
};

// Runs `work` once under the profiler (after synchronising `device`, and
// synchronising it again before reading the device's records). Another
// profiler already running, a profiler that cannot start, or a GPU whose
// activities cannot be recorded leaves the profile empty with `unavailable`
// saying why; `work` runs either way.
KernelProfile profileKernels(const std::function<void()>& work, const c10::Device& device);

}  // namespace widelab
