// defines: bigbirdMechanism: blocks of model.bigbird_block_size; each block sees
// its neighbours (window), the first and last block (global) and
// model.bigbird_random_blocks random blocks per head (Zaheer et al., 2020, the
// blocked form of the Long Range Arena)
#include "Mechanisms.h"
#include "SparseMix.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace widelab {
namespace {

std::int64_t blocksOf(std::int64_t T, std::int64_t b) { return (T + b - 1) / b; }

class BigBirdImpl : public MechanismImpl {
public:
    BigBirdImpl(const MechanismShape& shape, std::int64_t block, std::int64_t randomBlocks) : block_(block)
    {
        // [G, nb, r]: per head and query block, r distinct key blocks outside its
        // window and the global blocks, -1 where fewer exist; drawn once from
        // LibTorch's default generator, kept by checkpoints.
        const std::int64_t G = shape.heads, nb = blocksOf(shape.positions, block), r = randomBlocks;
        torch::Tensor drawn = torch::full({G, nb, r}, -1, torch::kLong);
        for (std::int64_t h = 0; h < G; ++h) {
            for (std::int64_t n = 1; n + 1 < nb; ++n) {
                std::vector<std::int64_t> candidates;
                for (std::int64_t m = 1; m + 1 < nb; ++m)
                    if (std::abs(m - n) > 1)
                        candidates.push_back(m);
                const torch::Tensor order = torch::randperm(static_cast<std::int64_t>(candidates.size()), torch::kLong);
                for (std::int64_t i = 0; i < std::min<std::int64_t>(r, order.size(0)); ++i)
                    drawn[h][n][i] = candidates[static_cast<std::size_t>(order[i].item<std::int64_t>())];
            }
        }
        randomBlocks_ = register_buffer("random_blocks", drawn);
    }

    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        // B = batch, G = heads, T = sequence, b = block, nb = blocks, Tp = nb*b,
        // K = 5 + r key blocks per query block (window 3, global 2, random r)
        const std::int64_t G = in.q.size(1), T = in.q.size(2), A = in.q.size(3);
        const std::int64_t b = block_, nb = blocksOf(T, b), Tp = nb * b;
        const double scale = 1.0 / std::sqrt(static_cast<double>(A));
        const torch::Tensor qs = padPositions(in.q * scale, Tp), k = padPositions(in.k, Tp), v = padPositions(in.v, Tp);
        const auto longs = torch::TensorOptions().dtype(torch::kLong).device(in.q.device());

        const torch::Tensor n = torch::arange(nb, longs).view({nb, 1});
        // [nb, 5]: n - 1, n, n + 1, 0, nb - 1
        const torch::Tensor fixed = torch::cat({n - 1, n, n + 1, torch::zeros_like(n), torch::full_like(n, nb - 1)}, 1);
        // [G, nb, r]: the drawn blocks of this sequence's query blocks; those past its last block are none
        torch::Tensor random = randomBlocks_.to(in.q.device());
        if (random.size(1) < nb)
            random = torch::constant_pad_nd(random, {0, 0, 0, nb - random.size(1)}, -1);
        random = random.narrow(1, 0, nb);
        random = random.masked_fill(random >= nb, -1);
        torch::Tensor blocks = torch::cat({fixed.unsqueeze(0).expand({G, nb, 5}), random}, 2);  // [G, nb, K]
        const std::int64_t K = blocks.size(2);
        // A block listed twice counts once; one out of range not at all.
        const torch::Tensor earlier = torch::ones({K, K}, longs.dtype(torch::kBool)).tril(-1);
        const torch::Tensor repeated = ((blocks.unsqueeze(-1) == blocks.unsqueeze(-2)) & earlier).any(-1);
        blocks = blocks.masked_fill(repeated | (blocks < 0) | (blocks >= nb), -1);
        // [G, nb, K*b] key positions (-1: none)
        const torch::Tensor offsets = torch::arange(b, longs).view({1, 1, 1, b});
        const torch::Tensor index =
            torch::where(blocks.unsqueeze(-1) >= 0, blocks.unsqueeze(-1) * b + offsets, torch::full({1}, -1, longs))
                .reshape({G, nb, K * b});
        const torch::Tensor allowed = torch::ones({1, nb, b, K * b}, longs.dtype(torch::kBool));

        // The first and last blocks' queries see everything.
        std::vector<std::int64_t> globalQueries;
        for (std::int64_t i = 0; i < T; ++i)
            if (i < b || i >= (nb - 1) * b)
                globalQueries.push_back(i);
        return mixSegments(in, Tp, {blockSegment(qs, k, v, index, allowed)}, globalQueries, map);
    }

private:
    std::int64_t block_;
    torch::Tensor randomBlocks_;
};

}  // namespace

const MechanismSpec& bigbirdMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "bigbird";
        s.title = "BigBird (Zaheer et al., 2020): window, global and random blocks";
        s.map = MapKind::Pattern;
        s.causal = true;
        s.linearCost = true;
        s.keys = {
            integerKey("model.bigbird_block_size", 1, 65536, 64,
                       "positions per block (64: the Long Range Arena's BigBird)"),
            integerKey("model.bigbird_random_blocks", 0, 64, 3,
                       "random key blocks per query block and head (3: the Long Range Arena's BigBird)"),
        };
        s.make = [](const MechanismShape& shape, const ModelConfig& c) {
            return std::make_shared<BigBirdImpl>(shape, c.attentionInteger("bigbird_block_size"),
                                                 c.attentionInteger("bigbird_random_blocks"));
        };
        s.parameters = [](const MechanismShape&, const ModelConfig&) { return std::int64_t{0}; };
        // Per token: (5 + r) blocks of b keys; the two global blocks' 2b queries
        // see all T keys, 2b more per token.
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig& c, std::int64_t T) {
            const double b = static_cast<double>(c.attentionInteger("bigbird_block_size"));
            const double r = static_cast<double>(c.attentionInteger("bigbird_random_blocks"));
            const double keys = std::min((7.0 + r) * b, 2.0 * static_cast<double>(T));
            return 2.0 * 2.0 * keys * static_cast<double>(shape.heads * shape.headDim);
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
