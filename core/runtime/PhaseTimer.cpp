#include "PhaseTimer.h"

namespace widelab {

std::atomic<bool> PhaseTimer::s_enabled{false};
std::atomic<Phase> PhaseTimer::s_current{Phase::Count};
PhaseTimer::SynchronizeFunction PhaseTimer::s_synchronize = nullptr;
std::array<double, static_cast<std::size_t>(Phase::Count)> PhaseTimer::s_seconds{};

const char* phaseName(Phase phase)
{
    switch (phase) {
    case Phase::Attention:
        return "attention";
    case Phase::FeedForward:
        return "ffn_experts";
    case Phase::Routing:
        return "routing_dispatch_combine";
    case Phase::Paths:
        return "paths_residual";
    case Phase::Backward:
        return "backward";
    case Phase::Optimizer:
        return "optimizer";
    case Phase::Measurement:
        return "measurement";
    case Phase::Count:
        break;
    }
    return "other";
}

}  // namespace widelab
