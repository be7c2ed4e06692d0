#include "SparseMix.h"

#include "model/Dropout.h"

#include <limits>

namespace widelab {

torch::Tensor padPositions(const torch::Tensor& x, std::int64_t Tp)
{
    const std::int64_t T = x.size(2);
    return Tp == T ? x : torch::constant_pad_nd(x, {0, 0, 0, Tp - T});
}

KeySegment blockSegment(const torch::Tensor& qs, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& index, const torch::Tensor& allowed)
{
    const std::int64_t B = qs.size(0), G = qs.size(1), Tp = qs.size(2), A = qs.size(3);
    const std::int64_t Gi = index.size(0), nb = index.size(1), W = index.size(2), Q = Tp / nb;
    const torch::Tensor inRange = (index >= 0) & (index < Tp);  // [Gi, nb, W]
    const torch::Tensor at = index.clamp(0, Tp - 1);
    torch::Tensor kg, vg;  // [B, G, nb, W, A]: the keys and values of each block
    if (Gi == 1) {
        kg = k.index_select(2, at.flatten()).view({B, G, nb, W, A});
        vg = v.index_select(2, at.flatten()).view({B, G, nb, W, A});
    } else {
        const torch::Tensor perHead = at.view({1, G, nb * W, 1}).expand({B, G, nb * W, A});
        kg = k.gather(2, perHead).view({B, G, nb, W, A});
        vg = v.gather(2, perHead).view({B, G, nb, W, A});
    }
    KeySegment s;
    // [B, G, nb, Q, A] x [B, G, nb, A, W] -> [B, G, nb, Q, W]
    s.scores = torch::matmul(qs.view({B, G, nb, Q, A}), kg.transpose(-2, -1)).view({B, G, Tp, W});
    s.keys = at.view({Gi, nb, 1, W}).expand({Gi, nb, Q, W}).reshape({Gi, Tp, W});
    s.allowed = (allowed & inRange.view({Gi, nb, 1, W})).reshape({-1, Tp, W});
    s.apply = [vg, B, G, nb, Q, W, Tp, A](const torch::Tensor& probs) {
        return torch::matmul(probs.view({B, G, nb, Q, W}), vg).view({B, G, Tp, A});
    };
    return s;
}

KeySegment sharedSegment(const torch::Tensor& qs, const torch::Tensor& k, const torch::Tensor& v,
                         const torch::Tensor& positions, const torch::Tensor& allowed)
{
    const std::int64_t Tp = qs.size(2), S = positions.size(0);
    const torch::Tensor kg = k.index_select(2, positions);  // [B, G, S, A]
    const torch::Tensor vg = v.index_select(2, positions);
    KeySegment s;
    s.scores = torch::matmul(qs, kg.transpose(-2, -1));  // [B, G, Tp, S]
    s.keys = positions.view({1, 1, S}).expand({1, Tp, S});
    s.allowed = allowed;
    s.apply = [vg](const torch::Tensor& probs) { return torch::matmul(probs, vg); };
    return s;
}

KeySegment columnSegment(const torch::Tensor& qs, const torch::Tensor& k, const torch::Tensor& v, std::int64_t l,
                         const torch::Tensor& allowed)
{
    const std::int64_t B = qs.size(0), G = qs.size(1), Tp = qs.size(2), A = qs.size(3), nb = Tp / l;
    // [B, G, nb, l, A] -> [B, G, l, nb, A]: column r holds positions r, l + r, 2l + r, ...
    const torch::Tensor qc = qs.view({B, G, nb, l, A}).transpose(2, 3);
    const torch::Tensor kc = k.view({B, G, nb, l, A}).transpose(2, 3);
    const torch::Tensor vc = v.view({B, G, nb, l, A}).transpose(2, 3);
    KeySegment s;
    // [B, G, l, nb(query), nb(key)] -> [B, G, nb, l, nb] -> [B, G, Tp, nb]
    s.scores = torch::matmul(qc, kc.transpose(-2, -1)).permute({0, 1, 3, 2, 4}).reshape({B, G, Tp, nb});
    const auto longs = torch::TensorOptions().dtype(torch::kLong).device(qs.device());
    const torch::Tensor column = torch::arange(l, longs).view({1, l, 1}) + l * torch::arange(nb, longs).view({1, 1, nb});
    s.keys = column.expand({nb, l, nb}).reshape({1, Tp, nb});
    s.allowed = allowed;
    s.apply = [vc, B, G, nb, l, Tp, A](const torch::Tensor& probs) {
        const torch::Tensor byColumn = probs.view({B, G, nb, l, nb}).permute({0, 1, 3, 2, 4});
        return torch::matmul(byColumn, vc).transpose(2, 3).reshape({B, G, Tp, A});
    };
    return s;
}

namespace {

// softmax over the keys `see` allows; rows that see nothing are all zero and
// flagged in `none` [.., 1].
torch::Tensor restrictedSoftmax(const torch::Tensor& scores, const torch::Tensor& see, torch::Tensor& none)
{
    none = see.any(-1, true).logical_not();
    const torch::Tensor masked =
        scores.masked_fill(see.logical_not(), -std::numeric_limits<double>::infinity()).masked_fill(none, 0.0);
    return torch::softmax(masked, -1).masked_fill(none, 0.0);
}

}  // namespace

torch::Tensor mixSegments(const MixInput& in, std::int64_t Tp, const std::vector<KeySegment>& segments,
                          const std::vector<std::int64_t>& globalQueries, torch::Tensor* map)
{
    const torch::Tensor& v = in.v;
    const std::int64_t B = v.size(0), G = v.size(1), T = v.size(2), A = v.size(3);
    const auto longs = torch::TensorOptions().dtype(torch::kLong).device(v.device());
    const auto bools = torch::TensorOptions().dtype(torch::kBool).device(v.device());
    // [B, Tp]: true for a real key
    const torch::Tensor real = in.keyValid.defined() ? in.keyValid.to(torch::kBool) : torch::ones({B, T}, bools);
    const torch::Tensor valid = Tp == T ? real : torch::cat({real, torch::zeros({B, Tp - T}, bools)}, 1);
    const torch::Tensor queryAt = torch::arange(Tp, longs).view({1, Tp, 1});

    std::vector<torch::Tensor> scores, sees;
    for (const KeySegment& s : segments) {
        const std::int64_t Gi = s.keys.size(0), W = s.keys.size(2);
        // [B, Gi, Tp, W]: the key is real and the pattern allows it (and it is not later)
        torch::Tensor see = valid.index_select(1, s.keys.flatten()).view({B, Gi, Tp, W}) & s.allowed.unsqueeze(0);
        if (in.causal)
            see = see & (s.keys <= queryAt).unsqueeze(0);
        sees.push_back(see.expand({B, G, Tp, W}));
        scores.push_back(s.scores);
    }
    torch::Tensor none;  // [B, G, Tp, 1]
    const torch::Tensor probs = restrictedSoftmax(torch::cat(scores, -1), torch::cat(sees, -1), none);
    const torch::Tensor dropped = applyDropout(probs, in.dropout, in.dropout > 0.0);

    torch::Tensor context;  // [B, G, Tp, A]
    std::int64_t offset = 0;
    for (const KeySegment& s : segments) {
        const std::int64_t W = s.keys.size(2);
        const torch::Tensor part = s.apply(dropped.narrow(-1, offset, W));
        context = context.defined() ? context + part : part;
        offset += W;
    }
    // A query that sees no real key takes position 0's value.
    const torch::Tensor fallback = none.narrow(2, 0, T).to(v.scalar_type());  // [B, G, T, 1]
    context = context.narrow(2, 0, T) + fallback * v.narrow(2, 0, 1);

    torch::Tensor globalProbs;  // [B, G, S, T]
    torch::Tensor globalAt;     // [S]
    if (!globalQueries.empty()) {
        // Global queries see every (real, earlier when causal) key.
        globalAt = torch::tensor(globalQueries, torch::kLong).to(v.device());
        const std::int64_t S = globalAt.size(0);
        const double scale = 1.0 / std::sqrt(static_cast<double>(A));
        const torch::Tensor qg = in.q.index_select(2, globalAt) * scale;           // [B, G, S, A]
        torch::Tensor see = real.view({B, 1, 1, T}).expand({B, 1, S, T});
        if (in.causal)
            see = see & (torch::arange(T, longs).view({1, 1, 1, T}) <= globalAt.view({1, 1, S, 1}));
        torch::Tensor noneGlobal;
        globalProbs = restrictedSoftmax(torch::matmul(qg, in.k.transpose(-2, -1)), see.expand({B, G, S, T}), noneGlobal);
        const torch::Tensor rows = torch::matmul(applyDropout(globalProbs, in.dropout, in.dropout > 0.0), v) +
                                   noneGlobal.to(v.scalar_type()) * v.narrow(2, 0, 1);
        context = context.index_copy(2, globalAt, rows);
        if (map)
            globalProbs = globalProbs + noneGlobal.to(globalProbs.scalar_type()) *
                                            (torch::arange(T, longs) == 0).to(globalProbs.scalar_type());
    }

    if (map) {
        torch::NoGradGuard noGrad;
        torch::Tensor m = torch::zeros({B, G, Tp, Tp}, probs.options());
        offset = 0;
        for (const KeySegment& s : segments) {
            const std::int64_t W = s.keys.size(2);
            m.scatter_add_(-1, s.keys.unsqueeze(0).expand({B, G, Tp, W}), probs.narrow(-1, offset, W));
            offset += W;
        }
        m = m.narrow(2, 0, T).narrow(3, 0, T).clone();
        m.narrow(3, 0, 1).add_(fallback.to(m.scalar_type()));
        if (globalProbs.defined())
            m.index_copy_(2, globalAt, globalProbs.detach());
        *map = m;
    }
    return context;
}

}  // namespace widelab
