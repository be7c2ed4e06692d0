// defines: toProbeCapture: the views' plain Qt data from the core's probes (an
// image probe's picture included), live and read back from disk alike
// (RunRecord::add, after the core's reader for a line)
#pragma once

#include "insights/InsightHistory.h"

namespace widelab {

struct ProbeResult;

ProbeCapture toProbeCapture(const ProbeResult& probe);

}  // namespace widelab
