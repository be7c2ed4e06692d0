// defines: longformerMechanism: a sliding window of model.longformer_window keys
// around each query, plus model.longformer_global_tokens global positions at the
// start (Beltagy et al., 2020), computed a block of queries at a time
#include "Mechanisms.h"
#include "SparseMix.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace widelab {
namespace {

class LongformerImpl : public MechanismImpl {
public:
    LongformerImpl(std::int64_t window, std::int64_t globals) : window_(window), globals_(globals) {}

    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        // B = batch, G = heads, T = sequence, w = window, g = global tokens,
        // Q = queries per block, nb = blocks, Tp = nb*Q, W = Q + w - 1 keys per block
        const std::int64_t T = in.q.size(2), A = in.q.size(3);
        const std::int64_t w = window_, right = w / 2, left = w - right, g = std::min(globals_, T);
        const std::int64_t Q = std::clamp<std::int64_t>(w / 2, 1, T), nb = (T + Q - 1) / Q, Tp = nb * Q;
        const std::int64_t W = Q + w - 1;
        const double scale = 1.0 / std::sqrt(static_cast<double>(A));
        const torch::Tensor qs = padPositions(in.q * scale, Tp), k = padPositions(in.k, Tp), v = padPositions(in.v, Tp);
        const auto longs = torch::TensorOptions().dtype(torch::kLong).device(in.q.device());

        // Block n's keys: n*Q - left + 1 ... n*Q + Q - 1 + right, [1, nb, W]
        const torch::Tensor start = torch::arange(nb, longs).view({1, nb, 1}) * Q - left + 1;
        const torch::Tensor index = start + torch::arange(W, longs).view({1, 1, W});
        // query i = n*Q + j sees key p when i - left < p <= i + right; global keys come from their own segment
        const torch::Tensor query = (torch::arange(Tp, longs)).view({1, nb, Q, 1});
        const torch::Tensor key = index.view({1, nb, 1, W});
        const torch::Tensor allowed = (key - query <= right) & (query - key < left) & (key >= g);  // [1, nb, Q, W]
        std::vector<KeySegment> segments = {blockSegment(qs, k, v, index, allowed)};
        std::vector<std::int64_t> globalQueries(static_cast<std::size_t>(g));
        std::iota(globalQueries.begin(), globalQueries.end(), std::int64_t{0});
        if (g > 0)
            segments.push_back(sharedSegment(qs, k, v, torch::arange(g, longs),
                                             torch::ones({1, Tp, g}, longs.dtype(torch::kBool))));
        return mixSegments(in, Tp, segments, globalQueries, map);
    }

private:
    std::int64_t window_, globals_;
};

}  // namespace

const MechanismSpec& longformerMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "longformer";
        s.title = "Longformer (Beltagy et al., 2020): sliding window plus global tokens";
        s.map = MapKind::Pattern;
        s.causal = true;
        s.linearCost = true;
        s.keys = {
            integerKey("model.longformer_window", 1, 65536, 512,
                       "keys in each query's sliding window, w - w/2 before it (itself included) and w/2 after "
                       "(512: the Wide Attention paper's Longformer)"),
            integerKey("model.longformer_global_tokens", 0, 65536, 0,
                       "the first N positions (1: the CLS token) see and are seen by every position "
                       "(0: the Wide Attention paper used the sliding window only)"),
        };
        s.make = [](const MechanismShape&, const ModelConfig& c) {
            return std::make_shared<LongformerImpl>(c.attentionInteger("longformer_window"),
                                                    c.attentionInteger("longformer_global_tokens"));
        };
        // Position 0 sees w/2 positions after it, and each layer's window adds as many.
        s.warn = [](const ModelConfig& c, const std::function<void(const std::string&, std::string)>& report) {
            if (c.attentionInteger("longformer_global_tokens") > 0)
                return;
            warnClsReach(c, 1 + c.layers * (c.attentionInteger("longformer_window") / 2),
                         "model.longformer_window / 2 further per layer; model.longformer_global_tokens 1 makes it "
                         "global",
                         report);
        };
        s.parameters = [](const MechanismShape&, const ModelConfig&) { return std::int64_t{0}; };
        // Per token: a block's Q + w - 1 window keys and the g global keys; the g
        // global queries' T keys each, spread over the T tokens, add g more.
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig& c, std::int64_t T) {
            const std::int64_t w = c.attentionInteger("longformer_window");
            const std::int64_t g = std::min(c.attentionInteger("longformer_global_tokens"), T);
            const std::int64_t Q = std::clamp<std::int64_t>(w / 2, 1, T);
            const double keys = static_cast<double>(Q + w - 1 + 2 * g);
            return 2.0 * 2.0 * keys * static_cast<double>(shape.heads * shape.headDim);
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
