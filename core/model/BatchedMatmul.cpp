#include "BatchedMatmul.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <vector>

namespace widelab {
namespace {

bool loopOverBatch(const torch::Tensor& a)
{
#if TORCH_VERSION_MAJOR < 2
    // Inference only, for now: in training steps the loop measured slower than
    // bmm (docs/performance.md), its autograd graph being G nodes per product.
    return a.is_cpu() && !torch::GradMode::is_enabled();
#else
    (void)a;
    return false;
#endif
}

}  // namespace

torch::Tensor batchedMatmul(const torch::Tensor& a, const torch::Tensor& b)
{
    if (!loopOverBatch(a) || a.dim() < 3)
        return torch::matmul(a, b);
    // Flatten the leading dimensions: [G, N, K] x [G, K, M] -> [G, N, M].
    const std::int64_t N = a.size(-2), K = a.size(-1), M = b.size(-1);
    // unbind, not a3[g]: its backward stacks the G gradients once, where G
    // separate selects would each write a zero-filled gradient of all of a3.
    const std::vector<torch::Tensor> as = a.reshape({-1, N, K}).unbind(0);
    const std::vector<torch::Tensor> bs = b.reshape({-1, K, M}).unbind(0);
    std::vector<torch::Tensor> products;
    products.reserve(as.size());
    for (std::size_t g = 0; g < as.size(); ++g)
        products.push_back(torch::mm(as[g], bs[g]));
    std::vector<std::int64_t> shape(a.sizes().begin(), a.sizes().end());
    shape.back() = M;
    return torch::stack(products).view(shape);
}

torch::Tensor batchedAddMatmul(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b)
{
    if (!loopOverBatch(a))
        return torch::baddbmm(bias, a, b);
    return batchedMatmul(a, b) + bias;
}

}  // namespace widelab
