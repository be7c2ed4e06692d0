#include "OperatorCount.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>
#include <mutex>
#include <stdexcept>

namespace widelab {

struct OperatorCounter::State {
    at::CallbackHandle handle = 0;
    std::mutex mutex;  // the forward thread and autograd's threads take turns, but may overlap
    OperatorTally tally;
};

namespace {

// The one counter counting, set and cleared by its thread, read by autograd's.
std::atomic<OperatorCounter::State*> g_active{nullptr};

// Per thread: one entry per operator running: whether it has called another,
// and whether it is counted as synchronising (the outermost such).
struct Running {
    bool calledAnother = false;
    bool synchronising = false;
    bool cpuReader = false;  // readsOnTheHostOnlyOnTheCpu
};
thread_local std::vector<Running> t_running;
thread_local int t_synchronisingOpen = 0;  // counted synchronising operators running (0 or 1)
thread_local int t_cpuReadersOpen = 0;

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& fn)
{
    if (!t_running.empty())
        t_running.back().calledAnother = true;
    const char* name = fn.name();
    const bool synchronising = t_synchronisingOpen == 0 && t_cpuReadersOpen == 0 && synchronisesWithTheDevice(name);
    const bool cpuReader = readsOnTheHostOnlyOnTheCpu(name);
    t_synchronisingOpen += synchronising ? 1 : 0;
    t_cpuReadersOpen += cpuReader ? 1 : 0;
    t_running.push_back({false, synchronising, cpuReader});
    return nullptr;
}

void onEnd(const at::RecordFunction& fn, at::ObserverContext*)
{
    if (t_running.empty())  // began before the counter did
        return;
    const Running ended = t_running.back();
    t_running.pop_back();
    t_synchronisingOpen -= ended.synchronising ? 1 : 0;
    t_cpuReadersOpen -= ended.cpuReader ? 1 : 0;
    OperatorCounter::State* state = g_active.load(std::memory_order_acquire);
    if (state == nullptr)
        return;
    const std::lock_guard lock(state->mutex);
    OperatorTally& tally = state->tally;
    ++tally.operators;
    ++tally.byName[fn.name()];
    const auto phase = static_cast<std::size_t>(PhaseTimer::current());
    if (!ended.calledAnother)
        ++tally.innermostByPhase[phase][fn.name()];
    if (ended.synchronising)
        ++tally.synchronisingByPhase[phase][fn.name()];
}

std::int64_t total(const std::map<std::string, std::int64_t>& counts)
{
    std::int64_t sum = 0;
    for (const auto& entry : counts)
        sum += entry.second;
    return sum;
}

std::vector<std::pair<std::string, std::int64_t>> ranked(const std::map<std::string, std::int64_t>& counts,
                                                         std::size_t count)
{
    std::vector<std::pair<std::string, std::int64_t>> ranked(counts.begin(), counts.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    ranked.resize(std::min(count, ranked.size()));
    return ranked;
}

}  // namespace

std::int64_t OperatorTally::innermost() const
{
    std::int64_t sum = 0;
    for (const auto& counts : innermostByPhase)
        sum += total(counts);
    return sum;
}

std::int64_t OperatorTally::innermost(Phase phase) const
{
    return total(innermostByPhase.at(static_cast<std::size_t>(phase)));
}

std::map<std::string, std::int64_t> OperatorTally::innermostByName() const
{
    std::map<std::string, std::int64_t> merged;
    for (const auto& counts : innermostByPhase)
        for (const auto& [name, count] : counts)
            merged[name] += count;
    return merged;
}

std::vector<std::pair<std::string, std::int64_t>> OperatorTally::mostFrequent(std::size_t count) const
{
    return ranked(innermostByName(), count);
}

std::vector<std::pair<std::string, std::int64_t>> OperatorTally::mostFrequent(std::size_t count, Phase phase) const
{
    return ranked(innermostByPhase.at(static_cast<std::size_t>(phase)), count);
}

std::map<std::string, std::int64_t> OperatorTally::synchronisingInStep() const
{
    std::map<std::string, std::int64_t> merged;
    for (std::size_t p = 0; p < synchronisingByPhase.size(); ++p)
        if (p != static_cast<std::size_t>(Phase::Measurement))
            for (const auto& [name, count] : synchronisingByPhase[p])
                merged[name] += count;
    return merged;
}

bool synchronisesWithTheDevice(const char* name)
{
    static const char* const kNames[] = {
        "aten::item",          "aten::_local_scalar_dense", "aten::is_nonzero",     "aten::equal",
        "aten::allclose",      "aten::nonzero",             "aten::argwhere",       "aten::masked_select",
        "aten::unique",        "aten::_unique",             "aten::_unique2",       "aten::unique_dim",
        "aten::unique_consecutive", "aten::unique_dim_consecutive", "aten::bincount",
    };
    return std::any_of(std::begin(kNames), std::end(kNames), [name](const char* n) { return std::strcmp(n, name) == 0; });
}

bool readsOnTheHostOnlyOnTheCpu(const char* name)
{
    return std::strcmp(name, "aten::_fused_adamw_") == 0 || std::strcmp(name, "aten::_fused_adam_") == 0;
}

OperatorCounter::OperatorCounter() : m_state(std::make_unique<State>())
{
    if (g_active.load(std::memory_order_acquire) != nullptr)
        throw std::logic_error("OperatorCounter: another counter is counting");
    t_running.clear();
    t_synchronisingOpen = 0;
    t_cpuReadersOpen = 0;
    m_state->handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&onStart, &onEnd).scopes({at::RecordScope::FUNCTION}));
    g_active.store(m_state.get(), std::memory_order_release);  // last: nothing to undo if registering threw
}

// On the thread that made it: its callback is that thread's (removeCallback
// finds no other thread's), and autograd's threads have finished with it once
// the backward passes it counted have returned.
OperatorCounter::~OperatorCounter()
{
    at::removeCallback(m_state->handle);
    g_active.store(nullptr, std::memory_order_release);
}

OperatorTally OperatorCounter::tally() const
{
    const std::lock_guard lock(m_state->mutex);
    return m_state->tally;
}

}  // namespace widelab
