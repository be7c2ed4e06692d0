#include "KernelAttention.h"

#include "model/BatchedMatmul.h"

#include <torch/torch.h>

#include <algorithm>

namespace widelab {
namespace {

// [B, G, n, ...] -> the same with entry c the sum of entries 0..c-1 (0 for the first).
torch::Tensor exclusivePrefixSum(const torch::Tensor& x)
{
    const std::int64_t n = x.size(2);
    if (n == 1)
        return torch::zeros_like(x);
    return torch::cat({torch::zeros_like(x.narrow(2, 0, 1)), x.narrow(2, 0, n - 1).cumsum(2)}, 2);
}

}  // namespace

torch::Tensor kernelAttention(const torch::Tensor& phiQ, const torch::Tensor& phiK, const torch::Tensor& v, bool causal,
                              KernelDenominator denominator, torch::Tensor* map)
{
    const std::int64_t B = phiQ.size(0), G = phiQ.size(1), T = phiQ.size(2), A = v.size(3);
    torch::Tensor numerator, normaliser;  // [B, G, T, A], [B, G, T, 1]
    if (!causal) {
        const torch::Tensor kv = batchedMatmul(phiK.transpose(-2, -1), v);  // [B, G, F, A]
        const torch::Tensor z = phiK.sum(2).unsqueeze(-1);                   // [B, G, F, 1]
        numerator = batchedMatmul(phiQ, kv);
        normaliser = batchedMatmul(phiQ, z);
    } else {
        // n blocks of C keys; the sequence zero-padded to n * C (zero features weigh nothing).
        const std::int64_t C = std::min(kKernelChunk, T);
        const std::int64_t n = (T + C - 1) / C;
        auto blocks = [&](const torch::Tensor& x) {  // [B, G, T, X] -> [B, G, n, C, X]
            const torch::Tensor padded =
                n * C == T ? x : torch::cat({x, torch::zeros({B, G, n * C - T, x.size(3)}, x.options())}, 2);
            return padded.reshape({B, G, n, C, x.size(3)});
        };
        const torch::Tensor q = blocks(phiQ), k = blocks(phiK), vb = blocks(v);
        // What the keys of earlier blocks contribute: [B, G, n, F, A] and [B, G, n, F, 1].
        const torch::Tensor before = exclusivePrefixSum(batchedMatmul(k.transpose(-2, -1), vb));
        const torch::Tensor beforeZ = exclusivePrefixSum(k.sum(3).unsqueeze(-1));
        // Within a block: the [C, C] weights, lower triangle (key j <= query i).
        const torch::Tensor inner = batchedMatmul(q, k.transpose(-2, -1)) * torch::ones({C, C}, q.options()).tril();
        numerator = (batchedMatmul(q, before) + batchedMatmul(inner, vb)).view({B, G, n * C, A}).narrow(2, 0, T);
        normaliser = (batchedMatmul(q, beforeZ) + inner.sum(-1, true)).view({B, G, n * C, 1}).narrow(2, 0, T);
    }
    normaliser = normaliser + denominator.eps;
    if (denominator.floor > 0.0)
        normaliser = normaliser.clamp_min(denominator.floor);
    if (map) {
        // The weights the computation is equivalent to: [B, G, T, T], for probes only.
        torch::Tensor weights = batchedMatmul(phiQ, phiK.transpose(-2, -1));
        if (causal)
            weights = weights * torch::ones({T, T}, weights.options()).tril();
        *map = weights / normaliser;
    }
    return numerator / normaliser;
}

double kernelMultiplyAddsPerToken(std::int64_t features, std::int64_t headDim, bool causal, std::int64_t T)
{
    const auto F = static_cast<double>(features), A = static_cast<double>(headDim);
    // phiK^T v and phiQ (.): F * A each; the normaliser phiQ . z: F.
    double products = 2.0 * F * A + F;
    if (causal)  // within a block of C: phiQ phiK^T (C * F) and the weights x v (C * A) per token
        products += static_cast<double>(std::min(kKernelChunk, T)) * (F + A);
    return products;
}

}  // namespace widelab
