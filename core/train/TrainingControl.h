// defines: TrainingControl: what another thread (a window, a signal handler) asks of
// a training run while it runs: stop, pause, save a checkpoint now, probe a text
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

namespace widelab {

// Every method is thread-safe. The trainer reads the requests between steps, so
// a request takes effect within one step (or one evaluation batch, for a stop).
class TrainingControl {
public:
    TrainingControl() = default;
    // Also stops when `externalStop` becomes true: a flag a signal handler may set,
    // which cannot call requestStop() (not async-signal-safe).
    explicit TrainingControl(const std::atomic<bool>* externalStop) : m_externalStop(externalStop) {}

    // Clears every request, for the next run (call only while no run uses it).
    void reset();
    void requestStop();
    void setPaused(bool paused);
    void requestCheckpoint();
    // Inspects `text` at the next step boundary; with keep, the run also keeps
    // the text among its probes (config.json's train.probes) and inspects it
    // with the others from then on.
    void requestProbe(std::string text, bool keep = false);

    bool stopRequested() const;
    bool paused() const { return m_paused.load(); }

    // The trainer's side.
    bool takeCheckpointRequest() { return m_checkpoint.exchange(false); }
    struct ProbeRequest {
        std::string text;
        bool keep = false;
    };
    std::vector<ProbeRequest> takeProbeRequests();
    bool hasRequests() const;
    // Blocks while paused, until resumed, stopped, or a request arrives (or
    // `poll` passes, so an external stop flag is seen).
    void waitWhilePaused(std::chrono::milliseconds poll = std::chrono::milliseconds(100));

private:
    const std::atomic<bool>* m_externalStop = nullptr;
    std::atomic<bool> m_stop{false};
    std::atomic<bool> m_paused{false};
    std::atomic<bool> m_checkpoint{false};
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::vector<ProbeRequest> m_probes;  // guarded by m_mutex
};

}  // namespace widelab
