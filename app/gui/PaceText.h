// defines: PaceText, describePace: a distributed run's processes in words, for
// the status bar: how many, and which one the others wait for
#pragma once

#include "vocab/Snapshot.h"

#include <QString>

namespace widelab {

struct PaceText {
    QString label;    // "2 processes, slowest rank 1 (12.5 ms)"; empty for one process
    QString details;  // one line a rank: its computing time a step and peak memory; the all-reduce wait
};

PaceText describePace(const WorldPace& world);

}  // namespace widelab
