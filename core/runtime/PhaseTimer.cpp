#include "PhaseTimer.h"

#include <ATen/record_function.h>

namespace widelab {
namespace {

constexpr std::string_view kRangePrefix = "widelab::phase::";

// The ranges' names, made once: RecordFunction keeps the pointer it is given.
const std::array<std::string, static_cast<std::size_t>(Phase::Count)>& rangeNames()
{
    static const auto names = [] {
        std::array<std::string, static_cast<std::size_t>(Phase::Count)> made;
        for (std::size_t p = 0; p < made.size(); ++p)
            made[p] = std::string(kRangePrefix) + phaseName(static_cast<Phase>(p));
        return made;
    }();
    return names;
}

}  // namespace

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

std::optional<Phase> phaseOfScope(std::string_view rangeName)
{
    const auto& names = rangeNames();
    for (std::size_t p = 0; p < names.size(); ++p)
        if (rangeName == names[p])
            return static_cast<Phase>(p);
    return std::nullopt;
}

at::RecordFunction* PhaseScope::openRange(Phase phase)
{
    auto range = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (!range->isActive())
        return nullptr;
    range->before(rangeNames()[static_cast<std::size_t>(phase)].c_str(), c10::ArrayRef<const c10::IValue>{});
    return range.release();
}

void PhaseScope::CloseRange::operator()(at::RecordFunction* range) const
{
    delete range;  // its destructor ends the range
}

}  // namespace widelab
