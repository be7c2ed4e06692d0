// defines: sparseMechanism: the Sparse Transformer's factorised patterns (Child et
// al., 2019), strided or fixed (model.sparse_pattern), merged into one head
#include "Mechanisms.h"
#include "SparseMix.h"

#include <algorithm>
#include <cmath>

namespace widelab {
namespace {

class SparseImpl : public MechanismImpl {
public:
    SparseImpl(bool strided, std::int64_t block, std::int64_t summary)
        : strided_(strided), block_(block), summary_(summary)
    {
    }

    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        // B = batch, G = heads, T = sequence, l = block (and stride), c = summary
        // positions per block, nb = blocks, Tp = nb*l
        const std::int64_t T = in.q.size(2), A = in.q.size(3);
        const std::int64_t l = block_, nb = (T + l - 1) / l, Tp = nb * l;
        const double scale = 1.0 / std::sqrt(static_cast<double>(A));
        const torch::Tensor qs = padPositions(in.q * scale, Tp), k = padPositions(in.k, Tp), v = padPositions(in.v, Tp);
        const auto longs = torch::TensorOptions().dtype(torch::kLong).device(in.q.device());
        const auto bools = longs.dtype(torch::kBool);
        const torch::Tensor queryBlock = torch::arange(Tp, longs).div(l, "floor");  // [Tp]
        std::vector<KeySegment> segments;
        if (strided_) {
            // |i - j| < l: block n sees blocks n - 1, n, n + 1, [1, nb, 3l]
            const torch::Tensor index =
                (torch::arange(nb, longs).view({1, nb, 1}) - 1) * l + torch::arange(3 * l, longs).view({1, 1, 3 * l});
            const torch::Tensor query = torch::arange(Tp, longs).view({1, nb, l, 1});
            const torch::Tensor allowed = (index.view({1, nb, 1, 3 * l}) - query).abs() < l;  // [1, nb, l, 3l]
            segments.push_back(blockSegment(qs, k, v, index, allowed));
            // (i - j) divisible by l: the query's column, less itself (in the band already), [1, Tp, nb]
            const torch::Tensor other = torch::arange(nb, longs).view({1, 1, nb}) != queryBlock.view({1, Tp, 1});
            segments.push_back(columnSegment(qs, k, v, l, other));
        } else {
            // The query's own block, [1, nb, l]
            const torch::Tensor index = torch::arange(Tp, longs).view({1, nb, l});
            segments.push_back(blockSegment(qs, k, v, index, torch::ones({1, nb, l, l}, bools)));
            // The summary positions j mod l >= l - c of the other blocks, [S]: the
            // last c of each block, ascending, those before T; counted here, so
            // that no operator's size depends on data (masked_select would wait
            // for the device).
            const std::int64_t c = std::min(summary_, l);
            std::int64_t S = 0;
            for (std::int64_t n = 0; n < nb; ++n)
                S += std::clamp<std::int64_t>(T - (n * l + l - c), 0, c);
            const torch::Tensor summary = (torch::arange(nb, longs).view({nb, 1}) * l
                                           + torch::arange(l - c, l, longs).view({1, c}))
                                              .reshape({-1})
                                              .narrow(0, 0, S);
            const torch::Tensor other = summary.div(l, "floor").view({1, 1, -1}) != queryBlock.view({1, Tp, 1});
            if (summary.size(0) > 0)
                segments.push_back(sharedSegment(qs, k, v, summary, other));
        }
        return mixSegments(in, Tp, segments, {}, map);
    }

private:
    bool strided_;
    std::int64_t block_, summary_;
};

}  // namespace

const MechanismSpec& sparseMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "sparse";
        s.title = "Sparse Transformer (Child et al., 2019): strided or fixed factorised patterns";
        s.map = MapKind::Pattern;
        s.causal = true;
        s.linearCost = false;
        s.keys = {
            choiceKey("model.sparse_pattern", {"fixed", "strided"},
                      "fixed: own block plus the blocks' summary positions; strided: the previous l positions plus "
                      "every l-th (fixed: the Long Range Arena's default, Child et al.'s text pattern)"),
            integerKey("model.sparse_block_size", 1, 65536, 128,
                       "l: block length of the fixed pattern and stride of the strided one "
                       "(128: the Long Range Arena's fixed pattern)"),
            integerKey("model.sparse_summary", 1, 65536, 32,
                       "c: the last c positions of each block summarise it in the fixed pattern "
                       "(32: the Long Range Arena's fixed pattern)"),
        };
        s.make = [](const MechanismShape&, const ModelConfig& c) {
            return std::make_shared<SparseImpl>(c.attentionText("sparse_pattern") == "strided",
                                                c.attentionInteger("sparse_block_size"),
                                                c.attentionInteger("sparse_summary"));
        };
        s.parameters = [](const MechanismShape&, const ModelConfig&) { return std::int64_t{0}; };
        // Keys per query: fixed l + c * ceil(T / l), strided 3l + ceil(T / l).
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig& c, std::int64_t T) {
            const auto l = static_cast<double>(c.attentionInteger("sparse_block_size"));
            const double blocks = std::ceil(static_cast<double>(T) / l);
            const double keys = c.attentionText("sparse_pattern") == "strided"
                                    ? 3.0 * l + blocks
                                    : l + static_cast<double>(c.attentionInteger("sparse_summary")) * blocks;
            return 2.0 * 2.0 * keys * static_cast<double>(shape.heads * shape.headDim);
        };
        s.validate = [](const ModelConfig& c, const std::function<void(const std::string&, std::string)>& report) {
            if (c.attentionText("sparse_pattern") == "fixed"
                && c.attentionInteger("sparse_summary") > c.attentionInteger("sparse_block_size"))
                report("sparse_summary", "must not exceed model.sparse_block_size ("
                                             + std::to_string(c.attentionInteger("sparse_block_size")) + ")");
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
