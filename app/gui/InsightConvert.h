// defines: toModelState, toProbeCapture (from the core's snapshots, live) and
// modelStateFromJson, probeCaptureFromJson (from metrics.jsonl lines, for a run
// read back from disk): the views' plain Qt data from the core's
#pragma once

#include "InsightHistory.h"

class QJsonObject;

namespace widelab {

struct TrainingSnapshot;
struct ProbeResult;

ModelState toModelState(const TrainingSnapshot& snapshot);
ProbeCapture toProbeCapture(const ProbeResult& probe);

// A "train" line (docs/run-directory.md) and a "probe" line; missing fields stay empty.
ModelState modelStateFromJson(const QJsonObject& line);
ProbeCapture probeCaptureFromJson(const QJsonObject& line);

}  // namespace widelab
