#include "OperatorCount.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
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

// Per thread: one entry per operator running, true once it has called another.
thread_local std::vector<bool> t_calledAnother;

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction&)
{
    if (!t_calledAnother.empty())
        t_calledAnother.back() = true;
    t_calledAnother.push_back(false);
    return nullptr;
}

void onEnd(const at::RecordFunction& fn, at::ObserverContext*)
{
    if (t_calledAnother.empty())  // began before the counter did
        return;
    const bool innermost = !t_calledAnother.back();
    t_calledAnother.pop_back();
    OperatorCounter::State* state = g_active.load(std::memory_order_acquire);
    if (state == nullptr)
        return;
    const std::lock_guard lock(state->mutex);
    OperatorTally& tally = state->tally;
    ++tally.operators;
    if (innermost)
        ++tally.innermostByPhase[static_cast<std::size_t>(PhaseTimer::current())][fn.name()];
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

OperatorCounter::OperatorCounter() : m_state(std::make_unique<State>())
{
    if (g_active.load(std::memory_order_acquire) != nullptr)
        throw std::logic_error("OperatorCounter: another counter is counting");
    t_calledAnother.clear();
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
