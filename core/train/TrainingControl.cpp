#include "TrainingControl.h"

#include <utility>

namespace widelab {

void TrainingControl::reset()
{
    m_stop.store(false);
    m_paused.store(false);
    m_checkpoint.store(false);
    std::lock_guard lock(m_mutex);
    m_probes.clear();
}

void TrainingControl::requestStop()
{
    m_stop.store(true);
    std::lock_guard lock(m_mutex);
    m_wake.notify_all();
}

void TrainingControl::setPaused(bool paused)
{
    m_paused.store(paused);
    std::lock_guard lock(m_mutex);
    m_wake.notify_all();
}

void TrainingControl::requestCheckpoint()
{
    m_checkpoint.store(true);
    std::lock_guard lock(m_mutex);
    m_wake.notify_all();
}

void TrainingControl::requestProbe(std::string text, bool keep)
{
    std::lock_guard lock(m_mutex);
    m_probes.push_back({std::move(text), keep});
    m_wake.notify_all();
}

bool TrainingControl::stopRequested() const
{
    return m_stop.load() || (m_externalStop != nullptr && m_externalStop->load());
}

std::vector<TrainingControl::ProbeRequest> TrainingControl::takeProbeRequests()
{
    std::lock_guard lock(m_mutex);
    return std::exchange(m_probes, {});
}

bool TrainingControl::hasRequests() const
{
    if (m_checkpoint.load())
        return true;
    std::lock_guard lock(m_mutex);
    return !m_probes.empty();
}

void TrainingControl::waitWhilePaused(std::chrono::milliseconds poll)
{
    std::unique_lock lock(m_mutex);
    m_wake.wait_for(lock, poll, [&] {
        return !m_paused.load() || stopRequested() || m_checkpoint.load() || !m_probes.empty();
    });
}

}  // namespace widelab
