// defines: linearMechanism: linear attention (Katharopoulos et al., 2020), the
// softmax similarity replaced by phi(q).phi(k) with phi(x) = elu(x) + 1, so that
// attention costs O(T) in time and memory; causal by prefix sums
#include "KernelAttention.h"
#include "Mechanisms.h"

#include <torch/torch.h>

namespace widelab {
namespace {

// The paper's and the Long Range Arena's eps in the normaliser.
constexpr double kLinearEps = 1e-6;

class LinearImpl : public MechanismImpl {
public:
    torch::Tensor mix(const MixInput& in, torch::Tensor* map) override
    {
        // q, k, v: [B, G, T, A]; the features have F = A dimensions.
        const torch::Tensor phiQ = torch::elu(in.q) + 1.0;
        torch::Tensor phiK = torch::elu(in.k) + 1.0;
        if (in.keyValid.defined())  // padded keys weigh nothing: their feature rows are zero
            phiK = phiK.masked_fill(in.keyValid.logical_not().view({in.k.size(0), 1, in.k.size(2), 1}), 0.0);
        KernelDenominator denominator;
        denominator.eps = kLinearEps;
        // No probabilities are formed, so there is no attention dropout (as in the paper's and LRA's code).
        return kernelAttention(phiQ, phiK, in.v, in.causal, denominator, map);
    }
};

}  // namespace

const MechanismSpec& linearMechanism()
{
    static const MechanismSpec spec = [] {
        MechanismSpec s;
        s.name = "linear";
        s.title = "Linear Transformer (Katharopoulos et al., 2020): elu(x) + 1 features, linear in the sequence";
        s.map = MapKind::Implied;
        s.causal = true;
        s.linearCost = true;
        s.make = [](const MechanismShape&, const ModelConfig&) { return std::make_shared<LinearImpl>(); };
        s.parameters = [](const MechanismShape&, const ModelConfig&) { return std::int64_t{0}; };
        s.flopsPerToken = [](const MechanismShape& shape, const ModelConfig&, std::int64_t T) {
            return 2.0 * static_cast<double>(shape.heads)
                   * kernelMultiplyAddsPerToken(shape.headDim, shape.headDim, shape.causal, T);
        };
        return s;
    }();
    return spec;
}

}  // namespace widelab
