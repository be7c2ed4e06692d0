// defines: test::snapshotWithInsights, test::imageProbe: a training snapshot with
// one of every insight and the probe of an image model, shared by the codec's tests and the app's (no torch header: the app's
// tests include none)
#pragma once

#include "vocab/Snapshot.h"

#include <cstdint>

namespace widelab::test {

// A training snapshot at `step` holding one of every insight, with hand-picked
// values: routing of block 1 (3 experts, 2 choices), LayerNorm gammas and betas
// of 2 blocks, both divergences, and the path weights of block 0's FFN (2 paths).
TrainingSnapshot snapshotWithInsights(std::int64_t step);

// The probe of an image model with a CLS token, at `step`: "validation:3", a
// 4 x 4 RGB picture whose pixel (x, y) is (40 x, 40 y, 200) in 2 x 2 patches of
// 2 x 2 pixels; tokens CLS r0c0 r0c1 r1c0 r1c1; one layer of one head in which
// CLS gives the patches 0.1, 0.2, 0.3, 0.4 (and itself nothing); one block
// routing CLS to expert 0 and the patches to 1, 0, dropped, 2; two classes, the
// true one 1.
ProbeResult imageProbe(std::int64_t step);

}  // namespace widelab::test
