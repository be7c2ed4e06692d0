// defines: sinkhornMechanism: Sparse Sinkhorn attention (Tay et al., 2020a):
// each block of queries attends to its own block and to a sorted block, a soft
// permutation of the blocks learned per head and balanced by Sinkhorn iterations
#include "Mechanisms.h"

#include "model/BatchedMatmul.h"
#include "model/Dropout.h"

#include <cmath>
#include <limits>

namespace widelab {
namespace {

struct SinkhornSettings {
    std::int64_t blockSize = 1;
    std::int64_t iterations = 0;
    double temperature = 1.0;
};

SinkhornSettings settingsOf(const ModelConfig& c)
{
    SinkhornSettings s;
    s.blockSize = c.attentionInteger("sinkhorn_block_size");
    s.iterations = c.attentionInteger("sinkhorn_iterations");
    s.temperature = c.attentionNumber("sinkhorn_temperature");
    return s;
}

std::int64_t blocksFor(std::int64_t T, std::int64_t b) { return (T + b - 1) / b; }

// B = batch, G = heads, T = sequence, A = head_dim, b = block size, N = blocks
// (the sequence padded to N b), Nmax = blocks at the longest sequence
class SinkhornImpl : public MechanismImpl {
public:
    SinkhornImpl(const MechanismShape& shape, const SinkhornSettings& settings_) : settings(settings_)
    {
        const std::int64_t maxBlocks = blocksFor(shape.positions, settings.blockSize);
        // The sorting network, per head: a block's key summary [A] -> a logit per block.
        sortWeight = register_parameter(
            "sort_weight", torch::randn({shape.heads, shape.headDim, maxBlocks}) / std::sqrt(double(shape.headDim)));
        sortBias = register_parameter("sort_bias", torch::zeros({shape.heads, maxBlocks}));
    }

    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        const std::int64_t B = in.q.size(0), G = in.q.size(1), T = in.q.size(2), A = in.q.size(3);
        const std::int64_t b = settings.blockSize, N = blocksFor(T, b), pad = N * b - T;
        // [B, N*b] true for real keys; the tail added to complete the last block is padding.
        torch::Tensor valid = in.keyValid.defined()
                                  ? in.keyValid
                                  : torch::ones({B, T}, torch::TensorOptions().dtype(torch::kBool).device(in.q.device()));
        if (pad > 0)
            valid = torch::cat({valid, torch::zeros({B, pad}, valid.options())}, 1);
        auto blocks = [&](const torch::Tensor& x) {  // [B, G, T, A] -> [B, G, N, b, A]
            return (pad > 0 ? torch::constant_pad_nd(x, {0, 0, 0, pad}) : x).reshape({B, G, N, b, A});
        };
        // Padded keys and values zeroed: they reach neither the sort nor the sorted blocks.
        const torch::Tensor keep = valid.to(in.q.scalar_type()).view({B, 1, N, b, 1});
        const torch::Tensor qb = blocks(in.q), kb = blocks(in.k) * keep, vb = blocks(in.v) * keep;

        // The soft permutation S [B, G, N(i), N(j)]: row i says which blocks block i reads.
        const torch::Tensor summary = kb.sum(3);  // [B, G, N, A]
        const torch::Tensor logits = torch::matmul(summary, sortWeight.narrow(2, 0, N).unsqueeze(0))
                                     + sortBias.narrow(1, 0, N).view({1, G, 1, N});
        const torch::Tensor S = sinkhorn(logits / settings.temperature);

        // Sorted block i = sum_j S[i, j] block j: [B, G, N, b, A].
        const torch::Tensor kSorted = torch::matmul(S, kb.reshape({B, G, N, b * A})).view({B, G, N, b, A});
        const torch::Tensor vSorted = torch::matmul(S, vb.reshape({B, G, N, b * A})).view({B, G, N, b, A});

        // One softmax over the b local keys (padded ones hidden) and the b sorted keys.
        const double scale = 1.0 / std::sqrt(static_cast<double>(A));
        const torch::Tensor qs = qb * scale;
        const torch::Tensor local = torch::matmul(qs, kb.transpose(-2, -1))  // [B, G, N, b, b]
                                        .masked_fill(valid.logical_not().view({B, 1, N, 1, b}),
                                                     -std::numeric_limits<double>::infinity());
        const torch::Tensor sorted = torch::matmul(qs, kSorted.transpose(-2, -1));  // [B, G, N, b, b]
        const torch::Tensor probs =
            applyDropout(torch::softmax(torch::cat({local, sorted}, -1), -1), in.dropout, in.dropout > 0.0);
        const torch::Tensor pLocal = probs.narrow(-1, 0, b), pSorted = probs.narrow(-1, b, b);
        const torch::Tensor context = torch::matmul(pLocal, vb) + torch::matmul(pSorted, vSorted);
        if (map)
            *map = impliedMap(pLocal, pSorted, S, valid, T);
        return context.view({B, G, N * b, A}).narrow(2, 0, T);
    }

    // The row-stochastic soft permutation: `iterations` rounds of row and column
    // normalisation in log space, then a row softmax (0 rounds: LRA's softmax sort).
    torch::Tensor sinkhorn(torch::Tensor logAlpha) const
    {
        for (std::int64_t i = 0; i < settings.iterations; ++i) {
            logAlpha = logAlpha - torch::logsumexp(logAlpha, {-1}, true);
            logAlpha = logAlpha - torch::logsumexp(logAlpha, {-2}, true);
        }
        return torch::softmax(logAlpha, -1);
    }

    // The [B, G, T, T] weights that mixing is equivalent to: a query in block n
    // puts pLocal on its own block's keys and pSorted[m] S[n, j] on key m of block j.
    static torch::Tensor impliedMap(const torch::Tensor& pLocal, const torch::Tensor& pSorted, const torch::Tensor& S,
                                    const torch::Tensor& valid, std::int64_t T)
    {
        const std::int64_t B = pLocal.size(0), G = pLocal.size(1), N = pLocal.size(2), b = pLocal.size(3);
        // [B, G, N(query block), b(query), N(key block), b(key)]
        const torch::Tensor eye = torch::eye(N, pLocal.options()).view({1, 1, N, 1, N, 1});
        torch::Tensor grid = pSorted.unsqueeze(4) * S.view({B, G, N, 1, N, 1}) + eye * pLocal.unsqueeze(4);
        grid = grid * valid.to(grid.scalar_type()).view({B, 1, 1, 1, N, b});
        return grid.reshape({B, G, N * b, N * b}).narrow(2, 0, T).narrow(3, 0, T);
    }

    SinkhornSettings settings;
    torch::Tensor sortWeight;  // [G, A, Nmax]
    torch::Tensor sortBias;    // [G, Nmax]
};

}  // namespace

const MechanismSpec& sinkhornMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "sinkhorn";
        s.title = "Sinkhorn (Tay et al., 2020a): block attention to a learned sorting of the blocks";
        s.map = MapKind::Implied;  // sorted keys are blends of blocks
        s.causal = false;          // a block's sorting row reads its whole block
        s.linearCost = false;      // sorting blends N blocks into each of N blocks: O(T^2 / b)
        s.keys = {
            integerKey("model.sinkhorn_block_size", 1, 65536, 50,
                       "Sinkhorn: positions per block (50: the Long Range Arena's block_size, which its ListOps "
                       "configuration leaves at the default; the Wide Attention paper uses those implementations)"),
            integerKey("model.sinkhorn_iterations", 0, 100, 0,
                       "Sinkhorn: rounds of row and column normalisation of the sorting matrix before its final "
                       "row softmax (0: the Long Range Arena's softmax sorting, used by the Wide Attention paper)"),
            numberKey("model.sinkhorn_temperature", 0.01, 100.0, 1.0,
                      "Sinkhorn: the sorting logits are divided by it (1: the Long Range Arena's)"),
        };
        s.make = [](const MechanismShape& shape, const ModelConfig& c) -> std::shared_ptr<MechanismImpl> {
            return std::make_shared<SinkhornImpl>(shape, settingsOf(c));
        };
        s.parameters = [](const MechanismShape& shape, const ModelConfig& c) {
            return shape.heads * (shape.headDim + 1) * blocksFor(shape.positions, settingsOf(c).blockSize);
        };
        // Per token and head, with N = ceil(T / b): scores against the b local and
        // b sorted keys and the probabilities times both (4 b A), blending its
        // block's key and value into the N sorted blocks (2 N A), and its block's
        // share of the sorting network (N A / b).
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig& c, std::int64_t T) {
            const double b = static_cast<double>(settingsOf(c).blockSize);
            const double N = static_cast<double>(blocksFor(T, settingsOf(c).blockSize));
            const double a = static_cast<double>(shape.headDim);
            return 2.0 * (4.0 * b * a + 2.0 * N * a + N * a / b) * static_cast<double>(shape.heads);
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
