// defines: OperatorTally, OperatorCounter, synchronisesWithTheDevice,
// readsOnTheHostOnlyOnTheCpu: how many
// ATen operators some work dispatches, in all and innermost (those that call no
// other operator), by phase of the step and by name, and which of them make the
// host wait for the device, for `widelab-cli bench`
#pragma once

#include "PhaseTimer.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace widelab {

// Every operator costs the host a pass through LibTorch's dispatcher (and
// autograd's bookkeeping); on a GPU each innermost one that computes launches
// a kernel. A step of small kernels is bound by these host costs, so their
// count is the figure to cut when the GPU waits on the host.
struct OperatorTally {
    std::int64_t operators = 0;  // every operator dispatched, those called by others included
    std::map<std::string, std::int64_t> byName;  // the same operators by name
    // The innermost operators (those that called no other: kernels, views,
    // allocations) by name, per PhaseScope open when they ran (PhaseTimer.h),
    // indexed by Phase, the last entry those outside every scope. Backward's
    // operators count under Phase::Backward.
    std::array<std::map<std::string, std::int64_t>, static_cast<std::size_t>(Phase::Count) + 1> innermostByPhase;
    // The operators that make the host wait for the device
    // (synchronisesWithTheDevice), whether innermost or not, by phase as above;
    // one called inside another such (item's _local_scalar_dense) is not counted again.
    std::array<std::map<std::string, std::int64_t>, static_cast<std::size_t>(Phase::Count) + 1> synchronisingByPhase;

    std::int64_t innermost() const;
    std::int64_t innermost(Phase phase) const;  // Phase::Count: outside every scope
    std::map<std::string, std::int64_t> innermostByName() const;  // over all phases
    // The `count` most frequent innermost operators, most frequent first (ties
    // by name): of the whole step, or of one phase.
    std::vector<std::pair<std::string, std::int64_t>> mostFrequent(std::size_t count) const;
    std::vector<std::pair<std::string, std::int64_t>> mostFrequent(std::size_t count, Phase phase) const;
    // The synchronising operators of a training step by name: every phase's but
    // Phase::Measurement's, where the host reads what it measures by design.
    std::map<std::string, std::int64_t> synchronisingInStep() const;
};

// Whether an operator (by its RecordFunction name, "aten::nonzero") makes the
// host wait for the device: it reads a value back (item, is_nonzero, equal), or
// its result's size depends on the data (nonzero, which boolean-mask indexing
// calls, masked_select, unique, bincount). A copy to the host is not among them:
// its name does not say where the copy goes.
bool synchronisesWithTheDevice(const char* name);
// Whether an operator's CPU kernel reads values of the CPU tensors it is given
// where its CUDA kernel reads them on the device: LibTorch 2.x's fused Adam and
// AdamW read each step count with item on the CPU only. What such an operator
// calls is not counted as synchronising.
bool readsOnTheHostOnlyOnTheCpu(const char* name);

// Counts the operators dispatched from its construction to its destruction, on
// this thread and on the threads that run this thread's backward passes (they
// inherit its RecordFunction callbacks). Phases are attributed while
// PhaseTimer is enabled. One counter at a time, made and destroyed on one
// thread, outside any backward pass it counts.
class OperatorCounter {
public:
    OperatorCounter();
    ~OperatorCounter();
    OperatorCounter(const OperatorCounter&) = delete;
    OperatorCounter& operator=(const OperatorCounter&) = delete;

    OperatorTally tally() const;

    struct State;  // what the RecordFunction callbacks count into (OperatorCount.cpp)

private:
    std::unique_ptr<State> m_state;
};

}  // namespace widelab
