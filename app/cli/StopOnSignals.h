// defines: StopOnSignals: while it lives, Ctrl-C and SIGTERM set a flag that a
// trainer or a study runner reads between steps (then saves a checkpoint and
// stops); a second Ctrl-C falls back to the default (terminate)
#pragma once

#include <atomic>
#include <csignal>

namespace widelab {

class StopOnSignals {
public:
    StopOnSignals();   // clears the flag
    ~StopOnSignals();  // restores the handlers it replaced
    StopOnSignals(const StopOnSignals&) = delete;
    StopOnSignals& operator=(const StopOnSignals&) = delete;

    // The flag (one per process: a signal handler can only reach a global).
    static const std::atomic<bool>& flag();

private:
    struct sigaction m_int {}, m_term {};
};

}  // namespace widelab
