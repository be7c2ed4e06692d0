// defines: AblationPart, AblationMode, Ablation, ablationPartName, ablatedValue:
// switching one part of the model off during an inspecting pass (a head, an
// expert, a path, or a block's whole sublayer), by zeros or by its mean
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace widelab {

enum class AblationPart { Head, Expert, Path, Sublayer };
enum class AblationMode {
    Zero,  // the part's output is replaced by zeros (a sublayer is skipped: the residual passes unchanged)
    Mean,  // by its mean over the real tokens of the batch (an expert: over the tokens it received)
};

// One part switched off. Heads are numbered 0 .. n*H-1, path-major (as the
// attention maps). Paths are 0 .. n-1 for the attention's paths and n .. 2n-1
// for the FFN's; what goes is the path's own term alpha_p * PathNorm_p(F_p) of
// the combiner (the extra "mean without path j" features are left as they are).
// A sublayer is 0 for attention, 1 for the FFN / MoE.
struct Ablation {
    AblationPart part = AblationPart::Head;
    AblationMode mode = AblationMode::Zero;
    std::int64_t block = 0;  // 0-based
    std::int64_t index = 0;
};

std::string toString(AblationPart part);  // "head", "expert", "path", "sublayer"
std::string toString(AblationMode mode);  // "zero", "mean"

// `value` [N, X] with the part switched off: zeros, or every row the mean of the
// rows whose `weight` ([N], 0/1, undefined: every row) is 1.
torch::Tensor ablatedValue(const torch::Tensor& value, AblationMode mode, const torch::Tensor& weight = {});

}  // namespace widelab
