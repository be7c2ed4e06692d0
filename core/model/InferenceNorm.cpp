#include "InferenceNorm.h"

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

// What a pass over rows reads and writes besides its output: x's rows
// `xStride` apart, and where there is an addend (its rows `addendStride`
// apart), the sums x + addend written contiguously into `sum`, which are then
// normed in x's place.
struct NormRowsArgs {
    const float* x = nullptr;
    std::int64_t xStride = 0;
    const float* addend = nullptr;
    std::int64_t addendStride = 0;
    float* sum = nullptr;
    const float* weight = nullptr;
    const float* bias = nullptr;
    std::int64_t D = 0;
    float eps = 0.0f;
};

// Rows [first, last), normalised into out ([rows, D], contiguous). Each row
// (a kilobyte at width 256) stays in the first-level cache between its passes.
template <int L, class Out>
[[gnu::always_inline]] inline void normRows(const NormRowsArgs& a, Out* out, std::int64_t first, std::int64_t last)
{
    using Floats = vector::Floats<L>;
    const std::int64_t D = a.D, whole = D / L * L;
    for (std::int64_t row = first; row < last; ++row) {
        const float* in = a.x + row * a.xStride;
        if (a.addend) {
            const float* add = a.addend + row * a.addendStride;
            float* sum = a.sum + row * D;
            for (std::int64_t j = 0; j < whole; j += L)
                vector::storeFloats<L>(sum + j, vector::loadFloats<L>(in + j) + vector::loadFloats<L>(add + j));
            for (std::int64_t j = whole; j < D; ++j)
                sum[j] = in[j] + add[j];
            in = sum;
        }
        Out* to = out + row * D;
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
        const float scale = 1.0f / std::sqrt(square / static_cast<float>(D) + a.eps);
        for (std::int64_t j = 0; j < whole; j += L)
            vector::storeElements<L>(to + j, (vector::loadFloats<L>(in + j) - mean) * scale
                                                      * vector::loadFloats<L>(a.weight + j)
                                                  + vector::loadFloats<L>(a.bias + j));
        for (std::int64_t j = whole; j < D; ++j)
            to[j] = static_cast<Out>((in[j] - mean) * scale * a.weight[j] + a.bias[j]);
    }
}

template <class Out>
using NormRows = void (*)(const NormRowsArgs&, Out*, std::int64_t, std::int64_t);

#if WIDELAB_HAS_TARGET
template <class Out>
WIDELAB_TARGET("avx512f")
void normRowsAvx512(const NormRowsArgs& a, Out* out, std::int64_t first, std::int64_t last)
{
    normRows<16>(a, out, first, last);
}

// target("avx2") leaves FMA off; cpuRuns checks for both.
template <class Out>
WIDELAB_TARGET("avx2,fma")
void normRowsAvx2(const NormRowsArgs& a, Out* out, std::int64_t first, std::int64_t last)
{
    normRows<8>(a, out, first, last);
}
#endif

template <class Out>
void normRowsBaseline(const NormRowsArgs& a, Out* out, std::int64_t first, std::int64_t last)
{
    normRows<4>(a, out, first, last);
}

template <class Out>
NormRows<Out> normRowsBuiltFor(InstructionSet set, const char* caller)
{
    if (!cpuRuns(set))
        throw std::invalid_argument(std::string(caller) + ": this CPU lacks " + instructionSetName(set));
    switch (set) {
#if WIDELAB_HAS_TARGET
    case InstructionSet::Avx512: return normRowsAvx512<Out>;
    case InstructionSet::Avx2: return normRowsAvx2<Out>;
#endif
    default: return normRowsBaseline<Out>;
    }
}

bool fp32OnCpu(const torch::Tensor& t) { return t.defined() && t.is_cpu() && t.scalar_type() == torch::kFloat; }

bool widthsMatch(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias)
{
    const std::int64_t D = x.dim() > 0 ? x.size(-1) : 0;
    return x.dim() >= 1 && D > 0 && fp32OnCpu(x) && fp32OnCpu(weight) && fp32OnCpu(bias) && weight.dim() == 1
           && bias.dim() == 1 && weight.size(0) == D && bias.size(0) == D;
}

bool addendMatches(const torch::Tensor& h, const torch::Tensor& addend)
{
    return !addend.defined() || (fp32OnCpu(addend) && addend.sizes() == h.sizes());
}

// t as [rows, D] with its elements one apart: a view where it can be, else a copy.
torch::Tensor rowsOf(const torch::Tensor& t)
{
    const torch::Tensor rows = t.reshape({-1, t.size(-1)});
    return rows.stride(1) == 1 ? rows : rows.contiguous();
}

// Norms x's rows (adding the addend's first where there is one) into `out`,
// which has x's shape; `sum`, where there is an addend, receives x + addend.
template <class Out>
void normInto(const torch::Tensor& x_, const torch::Tensor& addend_, const torch::Tensor& sum,
              const torch::Tensor& weight_, const torch::Tensor& bias_, double eps, InstructionSet set,
              const char* caller, torch::Tensor& out)
{
    const NormRows<Out> normRowsOf = normRowsBuiltFor<Out>(set, caller);
    const torch::Tensor x = rowsOf(x_);
    const torch::Tensor addend = addend_.defined() ? rowsOf(addend_) : torch::Tensor();
    const torch::Tensor weight = weight_.contiguous(), bias = bias_.contiguous();
    NormRowsArgs a;
    a.x = x.data_ptr<float>();
    a.xStride = x.stride(0);
    if (addend.defined()) {
        a.addend = addend.data_ptr<float>();
        a.addendStride = addend.stride(0);
        a.sum = sum.data_ptr<float>();
    }
    a.weight = weight.data_ptr<float>();
    a.bias = bias.data_ptr<float>();
    a.D = x.size(1);
    a.eps = static_cast<float>(eps);
    Out* to = out.data_ptr<Out>();
    at::parallel_for(0, x.size(0), std::max<std::int64_t>(1, kElementsPerNormTask / a.D),
                     [&](std::int64_t first, std::int64_t last) { normRowsOf(a, to, first, last); });
}

}  // namespace

bool residualNormApplies(const torch::Tensor& h, const torch::Tensor& addend, const torch::Tensor& weight,
                         const torch::Tensor& bias)
{
    return fastPathEnabled(FastPath::ResidualNorm) && !torch::GradMode::is_enabled()
           && !autocastEnabled(c10::DeviceType::CPU) && widthsMatch(h, weight, bias) && addendMatches(h, addend);
}

NormedResidual residualNorm(const torch::Tensor& h, const torch::Tensor& addend, const torch::Tensor& weight,
                            const torch::Tensor& bias, double eps, InstructionSet set)
{
    if (!widthsMatch(h, weight, bias) || !addendMatches(h, addend))
        throw std::invalid_argument("residualNorm: needs fp32 h on the CPU, an fp32 addend of h's shape or none, "
                                    "and fp32 weight and bias of h's last dimension's width");
    NormedResidual r;
    r.sum = addend.defined() ? torch::empty(h.sizes(), h.options()) : h;
    r.normed = torch::empty(h.sizes(), h.options());
    normInto<float>(h, addend, r.sum, weight, bias, eps, set, "residualNorm", r.normed);
    return r;
}

bool normToBf16Applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias)
{
    return fastPathEnabled(FastPath::NormToBf16) && !torch::GradMode::is_enabled()
           && autocastEnabled(c10::DeviceType::CPU) && autocastType(x) == torch::kBFloat16
           && widthsMatch(x, weight, bias);
}

torch::Tensor normToBf16(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                         InstructionSet set)
{
    if (!widthsMatch(x, weight, bias))
        throw std::invalid_argument("normToBf16: needs fp32 x on the CPU and fp32 weight and bias of its last "
                                    "dimension's width");
    torch::Tensor out = torch::empty(x.sizes(), x.options().dtype(torch::kBFloat16));
    normInto<c10::BFloat16>(x, torch::Tensor(), torch::Tensor(), weight, bias, eps, set, "normToBf16", out);
    return out;
}

}  // namespace widelab
