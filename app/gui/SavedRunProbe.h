// defines: probeSavedRun: what a finished run's model does with a text, for the
// views of a run that is not training (read from its newest checkpoint)
#pragma once

#include "vocab/Snapshot.h"

#include <QString>

#include <optional>

namespace widelab {

// Loads the newest checkpoint of the run in `directory` and inspects `text`
// with it (the capture's step is the checkpoint's). With keep, the text joins
// the run's probes in config.json and the capture its metrics.jsonl, when no
// trainer holds the run (core/run/RunDirectory.h keepProbe). Slow (reads
// the checkpoint): call it off the GUI thread. On failure: nullopt and *error
// says why, in words for the user.
std::optional<ProbeResult> probeSavedRun(const QString& directory, const QString& text, bool keep, QString* error);

}  // namespace widelab
