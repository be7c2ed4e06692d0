// defines: BlockTrace, ForwardTrace: what an inspecting forward pass records for the
// live views (attention probabilities, routing decisions), kept out of plain forward()
#pragma once

#include <torch/types.h>

#include <vector>

namespace widelab {

struct BlockTrace {
    torch::Tensor attention;  // [B, n*H, T', T'] attention probabilities (path-major heads)
    bool routed = false;      // this block made its own routing call (else reused its group's)
    torch::Tensor expert;     // [S, K] experts chosen by each real token (MoE only)
    torch::Tensor gates;      // [S, K]
    torch::Tensor kept;       // [S, K]
    torch::Tensor probs;      // [S, E] router probabilities (routing blocks only)
    std::int64_t capacity = 0;
};

struct ForwardTrace {
    bool captureAttention = true;
    bool captureRouting = true;
    std::vector<BlockTrace> blocks;
    torch::Tensor tokenIndex;  // [S] flat [B*T'] positions of the routed (real) tokens
};

}  // namespace widelab
