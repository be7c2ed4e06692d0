#include "Ablation.h"

namespace widelab {

std::string toString(AblationPart part)
{
    switch (part) {
    case AblationPart::Head: return "head";
    case AblationPart::Expert: return "expert";
    case AblationPart::Path: return "path";
    case AblationPart::Sublayer: return "sublayer";
    }
    return "head";
}

std::string toString(AblationMode mode)
{
    return mode == AblationMode::Mean ? "mean" : "zero";
}

torch::Tensor ablatedValue(const torch::Tensor& value, AblationMode mode, const torch::Tensor& weight)
{
    if (mode == AblationMode::Zero)
        return torch::zeros_like(value);
    const torch::Tensor w = weight.defined() ? weight.to(value.dtype()).view({-1, 1})
                                             : torch::ones({value.size(0), 1}, value.options());
    const torch::Tensor mean = (value * w).sum(0, true) / w.sum().clamp_min(1.0);  // [1, X]
    return mean.expand_as(value).clone();
}

}  // namespace widelab
