#include "NormToBf16.h"

#include "runtime/Autocast.h"
#include "runtime/FastPaths.h"
#include "runtime/VectorMath.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace widelab {
namespace {

// Rows a task takes at least (at::parallel_for's grain), about 32k elements at width 256.
constexpr std::int64_t kElementsPerNormTask = 32768;

// Rows [first, last) of x ([rows, D], rows `stride` apart), normalised into
// out ([rows, D], contiguous).
template <int L>
[[gnu::always_inline]] inline void normRows(const float* x, std::int64_t stride, const float* weight,
                                            const float* bias, std::int64_t D, float eps, c10::BFloat16* out,
                                            std::int64_t first, std::int64_t last)
{
    using Floats = vector::Floats<L>;
    const std::int64_t whole = D / L * L;
    for (std::int64_t row = first; row < last; ++row) {
        const float* in = x + row * stride;
        c10::BFloat16* to = out + row * D;
        Floats sums = {};
        for (std::int64_t j = 0; j < whole; j += L)
            sums += vector::loadFloats<L>(in + j);
        float sum = vector::sumOfLanes<L>(sums);
        for (std::int64_t j = whole; j < D; ++j)
            sum += in[j];
        const float mean = sum / static_cast<float>(D);
        Floats squares = {};
        for (std::int64_t j = 0; j < whole; j += L) {
            const Floats centred = vector::loadFloats<L>(in + j) - mean;
            squares += centred * centred;
        }
        float square = vector::sumOfLanes<L>(squares);
        for (std::int64_t j = whole; j < D; ++j)
            square += (in[j] - mean) * (in[j] - mean);
        const float scale = 1.0f / std::sqrt(square / static_cast<float>(D) + eps);
        for (std::int64_t j = 0; j < whole; j += L)
            vector::storeElements<L>(to + j, (vector::loadFloats<L>(in + j) - mean) * scale
                                                      * vector::loadFloats<L>(weight + j)
                                                  + vector::loadFloats<L>(bias + j));
        for (std::int64_t j = whole; j < D; ++j)
            to[j] = c10::BFloat16((in[j] - mean) * scale * weight[j] + bias[j]);
    }
}

using NormRows = void (*)(const float*, std::int64_t, const float*, const float*, std::int64_t, float, c10::BFloat16*,
                          std::int64_t, std::int64_t);

#if WIDELAB_HAS_TARGET
WIDELAB_TARGET("avx512f")
void normRowsAvx512(const float* x, std::int64_t stride, const float* weight, const float* bias, std::int64_t D,
                    float eps, c10::BFloat16* out, std::int64_t first, std::int64_t last)
{
    normRows<16>(x, stride, weight, bias, D, eps, out, first, last);
}

// target("avx2") leaves FMA off; cpuRuns checks for both.
WIDELAB_TARGET("avx2,fma")
void normRowsAvx2(const float* x, std::int64_t stride, const float* weight, const float* bias, std::int64_t D,
                  float eps, c10::BFloat16* out, std::int64_t first, std::int64_t last)
{
    normRows<8>(x, stride, weight, bias, D, eps, out, first, last);
}
#endif

void normRowsBaseline(const float* x, std::int64_t stride, const float* weight, const float* bias, std::int64_t D,
                      float eps, c10::BFloat16* out, std::int64_t first, std::int64_t last)
{
    normRows<4>(x, stride, weight, bias, D, eps, out, first, last);
}

NormRows normRowsBuiltFor(InstructionSet set)
{
    if (!cpuRuns(set))
        throw std::invalid_argument(std::string("normToBf16: this CPU lacks ") + instructionSetName(set));
    switch (set) {
#if WIDELAB_HAS_TARGET
    case InstructionSet::Avx512: return normRowsAvx512;
    case InstructionSet::Avx2: return normRowsAvx2;
#endif
    default: return normRowsBaseline;
    }
}

bool widthsMatch(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias)
{
    const std::int64_t D = x.dim() > 0 ? x.size(-1) : 0;
    return x.dim() >= 1 && D > 0 && x.is_cpu() && x.scalar_type() == torch::kFloat && weight.defined()
           && bias.defined() && weight.is_cpu() && bias.is_cpu() && weight.scalar_type() == torch::kFloat
           && bias.scalar_type() == torch::kFloat && weight.dim() == 1 && bias.dim() == 1 && weight.size(0) == D
           && bias.size(0) == D;
}

}  // namespace

bool normToBf16Applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias)
{
    return fastPathEnabled(FastPath::NormToBf16) && !torch::GradMode::is_enabled()
           && autocastEnabled(c10::DeviceType::CPU) && autocastType(x) == torch::kBFloat16
           && widthsMatch(x, weight, bias);
}

torch::Tensor normToBf16(const torch::Tensor& x_, const torch::Tensor& weight_, const torch::Tensor& bias_,
                         double eps, InstructionSet set)
{
    if (!widthsMatch(x_, weight_, bias_))
        throw std::invalid_argument("normToBf16: needs fp32 x on the CPU and fp32 weight and bias of its last "
                                    "dimension's width");
    const NormRows normRowsOf = normRowsBuiltFor(set);
    const std::int64_t D = x_.size(-1);
    const torch::Tensor x = x_.reshape({-1, D});
    const torch::Tensor rows = x.stride(1) == 1 ? x : x.contiguous();
    const torch::Tensor weight = weight_.contiguous(), bias = bias_.contiguous();
    torch::Tensor out = torch::empty(x_.sizes(), x_.options().dtype(torch::kBFloat16));
    const float* in = rows.data_ptr<float>();
    const std::int64_t stride = rows.stride(0);
    c10::BFloat16* to = out.data_ptr<c10::BFloat16>();
    const float epsilon = static_cast<float>(eps);
    at::parallel_for(0, rows.size(0), std::max<std::int64_t>(1, kElementsPerNormTask / D),
                     [&](std::int64_t first, std::int64_t last) {
                         normRowsOf(in, stride, weight.data_ptr<float>(), bias.data_ptr<float>(), D, epsilon, to,
                                    first, last);
                     });
    return out;
}

}  // namespace widelab
