#include "Init.h"

#include <cmath>

namespace widelab {

void xavierUniformStacked(const torch::Tensor& weights)
{
    torch::NoGradGuard noGrad;
    const auto fanOut = static_cast<double>(weights.size(-2));
    const auto fanIn = static_cast<double>(weights.size(-1));
    const double bound = std::sqrt(6.0 / (fanIn + fanOut));
    weights.uniform_(-bound, bound);
}

}  // namespace widelab
