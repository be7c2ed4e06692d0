// defines: KeySegment, blockSegment, sharedSegment, columnSegment, mixSegments: the
// machinery of the windowed mechanisms (local, longformer, bigbird, sparse).
//
// A windowed mechanism lets each query see a few keys. The keys are cut into
// segments, each computed in the layout that suits it (a block of queries
// against its gathered keys; every query against the same few keys; the
// columns of a strided pattern), each segment giving per query its scores and
// the key position of each. One softmax runs over the segments joined, so a
// query's weights are exactly those of softmax attention restricted to the
// keys the pattern allows. No [T, T] tensor exists unless the map is asked for.
//
// B = batch, G = heads, T = sequence, Tp = T padded to whole blocks, A = head_dim,
// W = keys a segment gives each query, nb = blocks, Q = queries per block.
#pragma once

#include "AttentionMechanism.h"

#include <functional>
#include <vector>

namespace widelab {

struct KeySegment {
    torch::Tensor scores;   // [B, G, Tp, W] scaled q.k of each query with each of its keys
    torch::Tensor keys;     // [1|G, Tp, W] long: the position of each key, in [0, Tp)
    torch::Tensor allowed;  // [1|G, Tp, W] bool: the pattern (out-of-range and repeated keys false);
                            // padding and causality are applied by mixSegments
    std::function<torch::Tensor(const torch::Tensor&)> apply;  // probs [B, G, Tp, W] -> [B, G, Tp, A]
};

// Queries in blocks of Q; block n sees the keys at positions index[., n, :].
// qs (scaled), k, v: [B, G, Tp, A]; index: [1|G, nb, W] (any value; out of
// [0, Tp) is not allowed); allowed: [1|G, nb, Q, W] bool.
KeySegment blockSegment(const torch::Tensor& qs, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& index, const torch::Tensor& allowed);
// Every query against the same keys: positions [S] (inside [0, Tp)); allowed [1, Tp, S].
KeySegment sharedSegment(const torch::Tensor& qs, const torch::Tensor& k, const torch::Tensor& v,
                         const torch::Tensor& positions, const torch::Tensor& allowed);
// Query n*l + r against the keys m*l + r, m in [0, nb), Tp = nb*l; allowed [1, Tp, nb].
KeySegment columnSegment(const torch::Tensor& qs, const torch::Tensor& k, const torch::Tensor& v, std::int64_t l,
                         const torch::Tensor& allowed);

// Pads [B, G, T, A] with zero positions to Tp.
torch::Tensor padPositions(const torch::Tensor& x, std::int64_t Tp);

// The context [B, G, T, A] of softmax attention over the segments' keys, less
// padded keys (in.keyValid) and, when in.causal, later keys. `globalQueries`
// (positions, may be empty) see every key instead. A query that sees no real
// key (a padded query among padding) takes the value of position 0, so every
// row is a distribution. With `map`: the [B, G, T, T] weights (zero outside
// the pattern). in.q, k, v: [B, G, T, A]; padded: q scaled, k, v at Tp.
torch::Tensor mixSegments(const MixInput& in, std::int64_t Tp, const std::vector<KeySegment>& segments,
                          const std::vector<std::int64_t>& globalQueries, torch::Tensor* map);

}  // namespace widelab
