// defines: scheduleOptions: a run's learning-rate schedule (train.*) over a span of steps
#pragma once

#include "RunConfig.h"
#include "Schedule.h"

namespace widelab {

// The schedule train.schedule names, with the run's peak rate, warmup and minimum
// ratio, decaying over `span` steps (the run's length, or a checkpoint's).
ScheduleOptions scheduleOptions(const TrainConfig& train, std::int64_t span);

}  // namespace widelab
