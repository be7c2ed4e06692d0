// defines: LambOptions, LambParamState and Lamb, the layer-wise adaptive large-batch optimizer
// (LAMB) as a torch::optim::Optimizer used exactly like torch::optim::AdamW
#pragma once

#include "GradientHealth.h"

#include <torch/optim/optimizer.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>

#include <tuple>
#include <vector>

namespace widelab {

// LAMB: You et al. 2019, "Large Batch Optimization for Deep Learning: Training BERT in 76 minutes",
// Algorithm 2 (the bias-corrected LAMB of the final version), with the scaling function phi the
// identity and each parameter tensor a "layer". For every parameter w with gradient g, at step
// t = 1, 2, ...:
//
//     m = b1 m + (1 - b1) g                   (state exp_avg, starts at 0)
//     v = b2 v + (1 - b2) g^2                 (state exp_avg_sq, starts at 0)
//     m_hat = m / (1 - b1^t),  v_hat = v / (1 - b2^t)     (m_hat = m, v_hat = v without bias_correction)
//     u = m_hat / (sqrt(v_hat) + eps) + wd * w
//     r = ||w|| / ||u||  when ||w|| > 0 and ||u|| > 0, else 1     (Frobenius norms over the whole tensor)
//     w = w - lr * r * u
//
// eps is added outside the square root, as in Adam. The trust ratio is not clipped (the paper's
// phi(z) = min(max(z, gamma_l), gamma_u) with no bounds); the fallback r = 1 for a zero norm is
// the one of the NVIDIA and TensorFlow reference implementations (a freshly zero-initialised bias
// moves at the Adam rate). Weight decay applies to every parameter of a group: give biases and
// LayerNorms a param group with weight_decay 0 to exempt them. The step never reads a tensor
// back to the host.
struct LambOptions : torch::optim::OptimizerCloneableOptions<LambOptions> {
    using betas_t = std::tuple<double, double>;  // (b1, b2); a macro argument cannot hold the comma
    LambOptions(double lr = 1e-3);
    TORCH_ARG(double, lr) = 1e-3;
    TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
    TORCH_ARG(double, eps) = 1e-6;
    TORCH_ARG(double, weight_decay) = 0.01;
    TORCH_ARG(bool, bias_correction) = true;

public:
    void serialize(torch::serialize::InputArchive& archive) override;
    void serialize(torch::serialize::OutputArchive& archive) const override;
    friend bool operator==(const LambOptions& lhs, const LambOptions& rhs);
    ~LambOptions() override = default;
    double get_lr() const override;
    void set_lr(const double lr) override;
};

struct LambParamState : torch::optim::OptimizerCloneableParamState<LambParamState> {
    TORCH_ARG(std::int64_t, step) = 0;
    TORCH_ARG(torch::Tensor, exp_avg);
    TORCH_ARG(torch::Tensor, exp_avg_sq);

public:
    void serialize(torch::serialize::InputArchive& archive) override;
    void serialize(torch::serialize::OutputArchive& archive) const override;
    friend bool operator==(const LambParamState& lhs, const LambParamState& rhs);
    ~LambParamState() override = default;
};

// Throws c10::Error (as AdamW does) for a negative lr, eps or weight decay, or a beta outside [0, 1).
// Parameters without a gradient are skipped; sparse gradients are refused.
// The key of a parameter's entry in Optimizer::state(): LibTorch 1.13 keys the map
// by the text of the TensorImpl address (what c10::guts::to_string printed), newer
// releases by the address itself. Written so that it compiles against both.
template <typename StateMap>
typename StateMap::key_type optimizerStateKey(const StateMap&, const torch::Tensor& parameter)
{
    using Key = typename StateMap::key_type;
    if constexpr (std::is_same_v<Key, std::string>) {
        std::ostringstream text;
        text << parameter.unsafeGetTensorImpl();
        return text.str();
    } else {
        return static_cast<Key>(parameter.unsafeGetTensorImpl());
    }
}

class Lamb : public torch::optim::Optimizer {
public:
    explicit Lamb(std::vector<torch::optim::OptimizerParamGroup> paramGroups, LambOptions defaults = {});
    explicit Lamb(std::vector<torch::Tensor> params, LambOptions defaults = {});

    torch::Tensor step(LossClosure closure = nullptr) override;
    void save(torch::serialize::OutputArchive& archive) const override;
    void load(torch::serialize::InputArchive& archive) override;

    // Parameters split over processes (expert parallelism): their trust ratio is
    // the whole tensor's, its squared norms summed over the ranks (one exchange
    // per such parameter and step).
    void shareNorms(ShardedNorms sharded) { m_sharded = std::move(sharded); }

private:
    ShardedNorms m_sharded;

    template <typename Self, typename Archive>
    static void serialize(Self& self, Archive& archive)
    {
        torch::optim::serialize<LambParamState, LambOptions>(archive, self);
    }
};

}  // namespace widelab
