// defines: HealthAlarms: the trainer's watch over routing and path weights,
// raising an alarm once when a problem starts and clearing it once when it ends
// (dead experts, collapse onto one expert, a growing router z-loss, a path whose
// weight falls towards zero); the alarms go to the log and to metrics.jsonl
#pragma once

#include "vocab/Snapshot.h"

#include <map>
#include <tuple>
#include <vector>

namespace widelab {

struct HealthAlarmOptions {
    // An expert that receives no token in one measured batch may be chance; one
    // that receives none in `deadAfter` measurements in a row is dead.
    int deadAfter = 3;
    // Collapse: one expert takes more than this share of a block's kept assignments.
    double collapseShare = 0.6;
    // The router z-loss is growing when it exceeds `zLossGrowth` times its lowest
    // value in this session (and by more than 1); it clears below the midpoint.
    double zLossGrowth = 2.0;
    // A learnable path weight falls towards zero when |alpha| drops below this
    // fraction of its starting value 1/sqrt(2n); it clears above twice that.
    double pathWeightFloor = 0.1;
};

class HealthAlarms {
public:
    explicit HealthAlarms(HealthAlarmOptions options = {}) : m_options(options) {}

    // The alarms raised ("warning") or cleared ("info") by this measurement.
    // Blocks, experts and paths are numbered from 1 in the texts (as the app's
    // views number them) and from 0 in the fields. `paths` only when learnable.
    std::vector<HealthEvent> update(const std::vector<RoutingStats>& routing, const std::vector<PathWeights>& paths,
                                    std::int64_t step);

private:
    // Raises or clears one alarm: true when its state changed.
    bool set(const std::tuple<std::string, std::int64_t, std::int64_t, std::string>& key, bool on);

    HealthAlarmOptions m_options;
    std::map<std::int64_t, std::vector<int>> m_idle;  // block -> measurements in a row without tokens, per expert
    std::map<std::int64_t, double> m_lowestZLoss;     // block -> lowest z-loss this session
    std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::string>, bool> m_raised;
};

}  // namespace widelab
