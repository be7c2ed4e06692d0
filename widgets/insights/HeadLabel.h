// defines: widelab::headLabel, headShortLabel, attentionPaths: how a head is
// named wherever heads are listed, with its path in a multi-path model
#pragma once

#include <QString>

namespace widelab {

struct TrainingSnapshot;

// A multi-path model's attention runs its n paths of H heads as n*H heads,
// path-major (core/model/ForwardTrace.h): head = path * H + h. With `paths` > 1
// dividing `heads`: "path 2 · head 3"; otherwise "head 7". All 0-based in, 1-based out.
QString headLabel(int head, int heads, int paths);
// The same in few letters, for small maps: "p2 h3", "h7".
QString headShortLabel(int head, int heads, int paths);
// How many heads a path has: `heads` for a one-path model (or paths that do not divide it).
int headsPerPath(int heads, int paths);
// The attention paths of a model state (1 for a one-path model or no state).
int attentionPaths(const TrainingSnapshot* state);

}  // namespace widelab
