// defines: test::snapshotWithInsights, a training snapshot with one of every
// insight, shared by the codec's tests and the app's (no torch header: the app's
// tests include none)
#pragma once

#include "train/Snapshot.h"

#include <cstdint>

namespace widelab::test {

// A training snapshot at `step` holding one of every insight, with hand-picked
// values: routing of block 1 (3 experts, 2 choices), LayerNorm gammas and betas
// of 2 blocks, both divergences, and the path weights of block 0's FFN (2 paths).
TrainingSnapshot snapshotWithInsights(std::int64_t step);

}  // namespace widelab::test
