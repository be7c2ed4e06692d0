// defines: linformerMechanism: Linformer (Wang et al., 2020): keys and values
// projected along the sequence to k positions, then softmax attention over them
#include "Mechanisms.h"

#include "model/BatchedMatmul.h"
#include "model/Dropout.h"

#include <cmath>

namespace widelab {
namespace {

// B = batch, G = heads, T = sequence, A = head_dim, P = positions, k = projected length
class LinformerImpl : public MechanismImpl {
public:
    LinformerImpl(std::int64_t positions, std::int64_t k)
    {
        // One [P, k] projection for keys and values and every head (LRA's single
        // low-rank kernel); LeCun-normal over the sequence (fan-in P), as LRA's.
        projection = register_parameter("projection", torch::randn({positions, k}) / std::sqrt(double(positions)));
    }

    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        const torch::Tensor &q = in.q, &k = in.k, &v = in.v;
        const std::int64_t B = q.size(0), T = q.size(2), A = q.size(3);
        // E: [T, k], or [B, 1, T, k] with padded rows zeroed so that no padded key
        // or value reaches the projections.
        torch::Tensor E = projection.narrow(0, 0, T);
        if (in.keyValid.defined())
            E = E.unsqueeze(0) * in.keyValid.to(q.scalar_type()).view({B, 1, T, 1});
        const torch::Tensor Et = E.transpose(-2, -1);                 // [.., k, T]
        const torch::Tensor kProj = torch::matmul(Et, k);             // [B, G, k, A]
        const torch::Tensor vProj = torch::matmul(Et, v);             // [B, G, k, A]
        const double scale = 1.0 / std::sqrt(static_cast<double>(A));
        const torch::Tensor probs =  // [B, G, T, k]
            applyDropout(batchedSoftmax(q * scale, kProj.transpose(-2, -1), torch::Tensor()), in.dropout, in.dropout > 0.0);
        if (map)  // context = probs (E^T v) = (probs E^T) v: the implied [B, G, T, T] weights
            *map = torch::matmul(probs, Et);
        return batchedMatmul(probs, vProj);
    }

    torch::Tensor projection;  // [P, k]
};

std::int64_t projected(const ModelConfig& c) { return c.attentionInteger("linformer_k"); }

}  // namespace

const MechanismSpec& linformerMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "linformer";
        s.title = "Linformer (Wang et al., 2020): keys and values projected to k positions";
        s.map = MapKind::Implied;
        s.causal = false;  // every projected key mixes the whole sequence
        s.linearCost = true;
        s.keys = {integerKey("model.linformer_k", 1, 65536, 16,
                             "Linformer: the length keys and values are projected to (16: the Long Range Arena's "
                             "low_rank_features, used by the Wide Attention paper)")};
        s.make = [](const MechanismShape& shape, const ModelConfig& c) -> std::shared_ptr<MechanismImpl> {
            return std::make_shared<LinformerImpl>(shape.positions, projected(c));
        };
        s.parameters = [](const MechanismShape& shape, const ModelConfig& c) { return shape.positions * projected(c); };
        // Per token and head: projecting its key and value (2 k A), scores against
        // the k projected keys (k A), the probabilities times the k values (k A).
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig& c, std::int64_t) {
            return 2.0 * 4.0 * static_cast<double>(projected(c)) * static_cast<double>(shape.heads * shape.headDim);
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
