// defines: BlockTrace, ForwardTrace: what an inspecting forward pass records for the
// live views (attention probabilities, routing decisions, the logit lens, the
// residual stream's norm) and the parts it switches off (ablations), kept out of
// plain forward()
#pragma once

#include "Ablation.h"

#include <torch/types.h>

#include <string>

#include <vector>

namespace widelab {

struct BlockTrace {
    torch::Tensor attention;  // [B, n*H, T', T'] attention probabilities (path-major heads)
    torch::Tensor crossAttention;  // a decoder block's: [B, n*H, T, S] over the source tokens
    bool routed = false;      // this block made its own routing call (else reused its group's)
    torch::Tensor expert;     // [S, K] experts chosen by each real token (MoE only)
    torch::Tensor gates;      // [S, K]
    torch::Tensor kept;       // [S, K]
    torch::Tensor probs;      // [S, E] router probabilities (routing blocks only)
    torch::Tensor logits;     // [S, E] router logits, fp32 (routing blocks only)
    std::int64_t capacity = 0;
    // The residual stream after the block: the mean over real tokens of each
    // token's L2 norm over the width, a 0-d fp32 tensor (captureResidual).
    torch::Tensor residualNorm;
};

struct ForwardTrace {
    bool captureAttention = true;
    bool captureRouting = true;
    // Logit lens: the final LayerNorm and head applied to the residual stream after
    // every sublayer, as the model's output is ([B, classes] or [B, T, V]); the
    // last stage is the model's own output.
    bool captureLens = false;
    bool captureResidual = false;  // BlockTrace::residualNorm: one reduction per block
    std::vector<Ablation> ablations;  // parts switched off in this pass

    std::vector<BlockTrace> blocks;
    torch::Tensor tokenIndex;  // [S] flat [B*T'] positions of the routed (real) tokens
    // Logit lens: lens[2i] after block i's attention, lens[2i+1] after its FFN;
    // the last equals the model's logits.
    std::vector<torch::Tensor> lens;
};

}  // namespace widelab
