#include "BatchedMatmul.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <vector>

namespace widelab {
namespace {

bool loopOverBatch(const torch::Tensor& a)
{
#if TORCH_VERSION_MAJOR < 2
    return a.is_cpu();
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
    const torch::Tensor a3 = a.reshape({-1, N, K}), b3 = b.reshape({-1, K, M});
    std::vector<torch::Tensor> products;
    products.reserve(static_cast<std::size_t>(a3.size(0)));
    for (std::int64_t g = 0; g < a3.size(0); ++g)
        products.push_back(torch::mm(a3[g], b3[g]));
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
