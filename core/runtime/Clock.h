// defines: steadySeconds, the monotonic clock in seconds that durations are
// measured with (never the wall clock, which may jump)
#pragma once

#include <chrono>

namespace widelab {

inline double steadySeconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace widelab
