// defines: MixInput, MechanismImpl (the pluggable mixing step of attention)
//
// Attention in WideLab is projections (q, k, v in, one output projection out,
// core/model/Attention.h) around a mixing step that turns q, k and v into a
// context per head. The projections are shared by every mechanism; the mixing
// step is the mechanism, a MechanismImpl made by its MechanismSpec
// (MechanismSpec.h, which says the rest without torch).
#pragma once

#include "MechanismSpec.h"

#include <torch/nn/module.h>

#include <cstdint>

namespace widelab {

// What one mechanism mixes. B = batch, G = the heads this mechanism owns (of
// every path), T = sequence (CLS first when used), A = head_dim.
struct MixInput {
    torch::Tensor q, k, v;   // [B, G, T, A]
    torch::Tensor keyValid;  // [B, T] bool, true for real tokens; undefined when all are real
    torch::Tensor bias;      // fp32 additive mask broadcastable to [B, 1, T, T]: -1e9 where a query may
                             // not look (padding keys; future keys when causal); undefined when none
    bool causal = false;     // a language model: query i sees keys j <= i only
    double dropout = 0.0;    // on attention probabilities, where the mechanism has them (0 in evaluation)
};

class MechanismImpl : public torch::nn::Module {
public:
    // The context [B, G, T, A]. When `map` is given (inspection of a probe) it
    // receives the [B, G, T, T] map that mapKind(spec) describes: row = query.
    virtual torch::Tensor mix(const MixInput& in, torch::Tensor* map) = 0;
    // Before every training step (0-based `step`): schedules such as the
    // Performer's feature redraw. Not called in evaluation.
    virtual void beginStep(std::int64_t step) { (void)step; }
};

}  // namespace widelab
