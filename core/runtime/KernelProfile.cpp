#include "KernelProfile.h"

#include "PhaseTimer.h"
#include "StepCapture.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace widelab {
namespace {

namespace profiler = torch::autograd::profiler;

// Kineto's activity types (libkineto's ActivityType, whose header LibTorch
// 1.13 does not install): an ATen operator and a user's range on the host, and
// the device's work.
constexpr std::uint8_t kOperator = 0, kUserRange = 1, kMemcpy = 3, kMemset = 4, kKernel = 5;

bool onTheDevice(const profiler::KinetoEvent& event)
{
    const std::uint8_t type = event.activityType();
    return type == kMemcpy || type == kMemset || type == kKernel;
}

// Kineto's events count in nanoseconds since LibTorch 2.1, in microseconds before.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define WIDELAB_KINETO_NANOSECONDS 1
#else
#define WIDELAB_KINETO_NANOSECONDS 0
#endif

// Start and length in nanoseconds.
std::uint64_t startOf(const profiler::KinetoEvent& event)
{
#if WIDELAB_KINETO_NANOSECONDS
    return event.startNs();
#else
    return event.startUs() * 1000;
#endif
}

std::uint64_t lengthOf(const profiler::KinetoEvent& event)
{
#if WIDELAB_KINETO_NANOSECONDS
    return event.durationNs();
#else
    return event.durationUs() * 1000;
#endif
}

constexpr const char* kOutsideThePhases = "(outside the phases)";

struct Sum {
    std::int64_t calls = 0;
    std::uint64_t nanoseconds = 0;
};

void add(std::map<std::string, Sum>& sums, const std::string& key, std::uint64_t nanoseconds)
{
    Sum& sum = sums[key];
    ++sum.calls;
    sum.nanoseconds += nanoseconds;
}

std::vector<OperatorTime> ranked(const std::map<std::string, Sum>& sums)
{
    std::vector<OperatorTime> list;
    for (const auto& [name, sum] : sums)
        list.push_back({name, sum.calls, 1e-9 * static_cast<double>(sum.nanoseconds)});
    std::stable_sort(list.begin(), list.end(),
                     [](const OperatorTime& a, const OperatorTime& b) { return a.seconds > b.seconds; });
    return list;
}

// Calls `each` with every operator and its span less its direct callees'
// spans, per thread: an operator called by another starts no earlier and ends
// no later than its caller.
void forEachSelfTime(const std::vector<const profiler::KinetoEvent*>& operators,
                     const std::function<void(const profiler::KinetoEvent&, std::uint64_t)>& each)
{
    std::unordered_map<std::uint64_t, std::vector<const profiler::KinetoEvent*>> byThread;
    for (const profiler::KinetoEvent* event : operators)
        byThread[event->startThreadId()].push_back(event);
    for (auto& [thread, events] : byThread) {
        // Callers before callees: by start, then the longer first, then the
        // one recorded first (callers enter before their callees do).
        std::stable_sort(events.begin(), events.end(), [](const auto* a, const auto* b) {
            if (startOf(*a) != startOf(*b))
                return startOf(*a) < startOf(*b);
            if (lengthOf(*a) != lengthOf(*b))
                return lengthOf(*a) > lengthOf(*b);
            return a->correlationId() < b->correlationId();
        });
        struct Open {
            const profiler::KinetoEvent* event;
            std::uint64_t end;
            std::uint64_t callees;
        };
        std::vector<Open> open;
        const auto close = [&] {
            const Open& done = open.back();
            each(*done.event, lengthOf(*done.event) - std::min(done.callees, lengthOf(*done.event)));
            open.pop_back();
        };
        for (const profiler::KinetoEvent* event : events) {
            const std::uint64_t start = startOf(*event);
            while (!open.empty() && open.back().end <= start)
                close();
            // A callee ends within its caller, though rounded times (1.13's
            // microseconds) can put its end a little past the caller's.
            std::uint64_t end = start + lengthOf(*event);
            if (!open.empty()) {
                open.back().callees += lengthOf(*event);
                end = std::min(end, open.back().end);
            }
            open.push_back({event, end, 0});
        }
        while (!open.empty())
            close();
    }
}

// The phase scopes' ranges (PhaseTimer.h), which never nest: which phase was
// open when the host reached a time, on any thread, as PhaseTimer::current()
// has it (so autograd's threads count under the backward's scope).
class PhaseRanges {
public:
    // Takes the ranges among `events` and returns the rest.
    std::vector<const profiler::KinetoEvent*> take(const std::vector<const profiler::KinetoEvent*>& events)
    {
        std::vector<const profiler::KinetoEvent*> rest;
        for (const profiler::KinetoEvent* event : events) {
            const bool onTheHost = event->activityType() == kOperator || event->activityType() == kUserRange;
            if (const std::optional<Phase> phase = phaseOfScope(event->name()); phase && onTheHost)
                m_ranges.push_back({startOf(*event), startOf(*event) + lengthOf(*event), *phase});
            else
                rest.push_back(event);
        }
        std::sort(m_ranges.begin(), m_ranges.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
        return rest;
    }

    bool empty() const { return m_ranges.empty(); }

    std::string at(std::uint64_t time) const
    {
        auto after = std::upper_bound(m_ranges.begin(), m_ranges.end(), time,
                                      [](std::uint64_t t, const Range& range) { return t < range.start; });
        if (after == m_ranges.begin() || time >= std::prev(after)->end)
            return kOutsideThePhases;
        return phaseName(std::prev(after)->phase);
    }

private:
    struct Range {
        std::uint64_t start, end;
        Phase phase;
    };
    std::vector<Range> m_ranges;
};

}  // namespace

KernelProfile profileKernels(const std::function<void()>& work, const c10::Device& device)
{
    KernelProfile profile;
    profile.deviceTime = device.is_cuda();
    if (torch::profiler::impl::profilerEnabled()) {
        profile.unavailable = "another profiler is running";
        work();
        return profile;
    }
    const profiler::ProfilerConfig config(profiler::ProfilerState::KINETO);
    std::set<profiler::ActivityType> activities = {profiler::ActivityType::CPU};
    if (profile.deviceTime)
        activities.insert(profiler::ActivityType::CUDA);
    synchronizeDevice(device);
    try {
        profiler::prepareProfiler(config, activities);
        profiler::enableProfiler(config, activities);
    } catch (const std::exception& error) {  // another profiler's session, on another thread
        const std::string what = error.what();
        profile.unavailable = "LibTorch's profiler cannot start: " + what.substr(0, what.find('\n'));
        work();
        return profile;
    }
    std::unique_ptr<profiler::ProfilerResult> result;
    const auto began = std::chrono::steady_clock::now();
    try {
        work();
        synchronizeDevice(device);
    } catch (...) {
        result = profiler::disableProfiler();
        throw;
    }
    profile.span = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    result = profiler::disableProfiler();

    std::vector<const profiler::KinetoEvent*> hostEvents, deviceWork;
    for (const profiler::KinetoEvent& event : result->events()) {
        if (onTheDevice(event))
            deviceWork.push_back(&event);
        else
            hostEvents.push_back(&event);
    }
    PhaseRanges phases;
    std::vector<const profiler::KinetoEvent*> operators;
    for (const profiler::KinetoEvent* event : phases.take(hostEvents))
        if (event->activityType() == kOperator)
            operators.push_back(event);
    std::map<std::string, Sum> byOperator, byPhase;
    if (!profile.deviceTime) {
        forEachSelfTime(operators, [&](const profiler::KinetoEvent& event, std::uint64_t self) {
            add(byOperator, event.name(), self);
            add(byPhase, phases.at(startOf(event)), self);
        });
    } else {
        // A kernel's linked correlation is that of the operator that launched it.
        std::unordered_map<std::uint64_t, const profiler::KinetoEvent*> launcher;
        for (const profiler::KinetoEvent* event : operators)
            launcher.emplace(event->correlationId(), event);
        std::map<std::string, Sum> byKernel;
        for (const profiler::KinetoEvent* event : deviceWork) {
            const auto found = launcher.find(event->linkedCorrelationId());
            const bool launched = found != launcher.end();
            add(byOperator, launched ? found->second->name() : "(no operator)", lengthOf(*event));
            add(byPhase, launched ? phases.at(startOf(*found->second)) : kOutsideThePhases, lengthOf(*event));
            add(byKernel, event->name(), lengthOf(*event));
        }
        profile.byKernel = ranked(byKernel);
        if (deviceWork.empty())
            profile.unavailable = "the profiler recorded no work on " + device.str()
                                  + " (CUPTI, which LibTorch's profiler reads GPU activity through, may be missing)";
    }
    profile.byOperator = ranked(byOperator);
    if (!phases.empty())
        profile.byPhase = ranked(byPhase);
    for (const OperatorTime& entry : profile.byOperator)
        profile.seconds += entry.seconds;
    if (!profile.deviceTime && profile.byOperator.empty())
        profile.unavailable = "the profiler recorded no operator";
    return profile;
}

}  // namespace widelab
