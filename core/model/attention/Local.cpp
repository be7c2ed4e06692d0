// defines: localMechanism: softmax attention within non-overlapping blocks of
// model.local_block_size positions (Liu et al., 2018; the Long Range Arena's
// "local attention")
#include "Mechanisms.h"
#include "SparseMix.h"

#include <algorithm>
#include <cmath>

namespace widelab {
namespace {

class LocalImpl : public MechanismImpl {
public:
    explicit LocalImpl(std::int64_t block) : block_(block) {}

    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        // B = batch, G = heads, T = sequence, b = block, nb = blocks, Tp = nb*b
        const std::int64_t T = in.q.size(2), A = in.q.size(3);
        const std::int64_t b = std::min(block_, T), nb = (T + b - 1) / b, Tp = nb * b;
        const double scale = 1.0 / std::sqrt(static_cast<double>(A));
        const torch::Tensor qs = padPositions(in.q * scale, Tp), k = padPositions(in.k, Tp), v = padPositions(in.v, Tp);
        const auto longs = torch::TensorOptions().dtype(torch::kLong).device(in.q.device());
        // block n sees its own positions: [1, nb, b] keys, [1, nb, b, b] all allowed
        const torch::Tensor index = torch::arange(Tp, longs).view({1, nb, b});
        const torch::Tensor allowed = torch::ones({1, nb, b, b}, longs.dtype(torch::kBool));
        return mixSegments(in, Tp, {blockSegment(qs, k, v, index, allowed)}, {}, map);
    }

private:
    std::int64_t block_;
};

}  // namespace

const MechanismSpec& localMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "local";
        s.title = "local attention (Liu et al., 2018): softmax within non-overlapping blocks";
        s.map = MapKind::Pattern;
        s.causal = true;
        s.linearCost = true;
        s.keys = {integerKey("model.local_block_size", 1, 65536, 50,
                             "positions per block; each attends only within its block (50: the Long Range Arena's local attention)")};
        s.make = [](const MechanismShape&, const ModelConfig& c) {
            return std::make_shared<LocalImpl>(c.attentionInteger("local_block_size"));
        };
        s.warn = [](const ModelConfig& c, const std::function<void(const std::string&, std::string)>& report) {
            warnClsReach(c, c.attentionInteger("local_block_size"), "its block of model.local_block_size, in every layer", report);
        };
        s.parameters = [](const MechanismShape&, const ModelConfig&) { return std::int64_t{0}; };
        // q k^T and probabilities x v over one block: 2 * 2 * b * A per token and head.
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig& c, std::int64_t T) {
            const double b = static_cast<double>(std::min(c.attentionInteger("local_block_size"), T));
            return 2.0 * 2.0 * b * static_cast<double>(shape.heads * shape.headDim);
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
