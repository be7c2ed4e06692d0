// defines: toModelState, toProbeCapture: the views' plain Qt data from the
// core's snapshots, live (a run read back from disk: MetricsLine.h)
#pragma once

#include "InsightHistory.h"

namespace widelab {

struct TrainingSnapshot;
struct ProbeResult;

ModelState toModelState(const TrainingSnapshot& snapshot);
ProbeCapture toProbeCapture(const ProbeResult& probe);

}  // namespace widelab
