// defines: toModelState, toProbeCapture: the views' plain Qt data from the
// core's snapshots and probes (an image probe's picture included), live and
// read back from disk alike (RunRecord::add, after the core's reader for a line)
#pragma once

#include "insights/InsightHistory.h"

namespace widelab {

struct TrainingSnapshot;
struct ProbeResult;
struct ValidationInsights;

ModelState toModelState(const TrainingSnapshot& snapshot);
ProbeCapture toProbeCapture(const ProbeResult& probe);
ValidationInsight toValidationInsight(const ValidationInsights& insights);

}  // namespace widelab
