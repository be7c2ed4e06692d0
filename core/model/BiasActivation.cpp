#include "BiasActivation.h"

#include "runtime/Autocast.h"
#include "runtime/FastPaths.h"
#include "runtime/VectorMath.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace widelab {
namespace {

// Elements a task takes at least (at::parallel_for's grain).
constexpr std::int64_t kElementsPerTask = 32768;

// act(z) on a vector of L floats.
template <int L, Activation kActivation>
[[gnu::always_inline]] inline vector::Floats<L> activatedLanes(vector::Floats<L> z)
{
    using Floats = vector::Floats<L>;
    if constexpr (kActivation == Activation::Relu) {
        return z < 0.0f ? Floats{} : z;  // NaN stays NaN, as torch::relu leaves it
    } else if constexpr (kActivation == Activation::Silu) {
        // z sigmoid(z), with e^-|z| (at most 1) for either sign.
        const Floats e = vector::expBounded<L>(z < 0.0f ? z : -z);
        const Floats sigmoid = (z < 0.0f ? e : Floats{} + 1.0f) / (1.0f + e);
        return z * sigmoid;
    } else {
        // z (1 + erf(u)) / 2, u = z / sqrt 2. For u >= 0, erf(u) = 1 - q with
        // q = t (a1 + t (a2 + ... + t a5)) e^(-u^2), t = 1 / (1 + p u); erf is
        // odd, so 1 + erf(u) is 2 - q there and q(|u|) below zero.
        const Floats u = z * 0.70710678118654752f;
        const Floats magnitude = u < 0.0f ? -u : u;
        const Floats t = 1.0f / (1.0f + 0.3275911f * magnitude);
        Floats poly = t * 1.061405429f - 1.453152027f;
        poly = poly * t + 1.421413741f;
        poly = poly * t - 0.284496736f;
        poly = poly * t + 0.254829592f;
        const Floats q = poly * t * vector::expBounded<L>(-(magnitude * magnitude));
        return 0.5f * z * (u < 0.0f ? q : 2.0f - q);
    }
}

// Rows [first, last) of the product's rows of M (the U products' in turn),
// each taking bias row row / rowsPerBias, then the activation, in place. The
// elements are fp32, or bf16 widened as they are read and rounded once as
// they are written.
template <int L, Activation kActivation, class Element>
[[gnu::always_inline]] inline void activateRowsOf(Element* data, const Element* bias, std::int64_t rowsPerBias,
                                                  std::int64_t M, std::int64_t first, std::int64_t last)
{
    for (std::int64_t row = first; row < last; ++row) {
        Element* to = data + row * M;
        const Element* add = bias + row / rowsPerBias * M;
        std::int64_t j = 0;
        for (; j + L <= M; j += L)
            vector::storeElements<L>(to + j, activatedLanes<L, kActivation>(vector::loadElements<L>(to + j)
                                                                             + vector::loadElements<L>(add + j)));
        if (j < M) {
            Element piece[L] = {}, pieceBias[L] = {};
            std::memcpy(piece, to + j, (M - j) * sizeof(Element));
            std::memcpy(pieceBias, add + j, (M - j) * sizeof(Element));
            const vector::Floats<L> out = activatedLanes<L, kActivation>(vector::loadElements<L>(piece)
                                                                         + vector::loadElements<L>(pieceBias));
            vector::storeElements<L>(piece, out);
            std::memcpy(to + j, piece, (M - j) * sizeof(Element));
        }
    }
}

template <int L, class Element>
[[gnu::always_inline]] inline void activateRowsFor(Element* data, const Element* bias, std::int64_t rowsPerBias,
                                                   std::int64_t M, std::int64_t first, std::int64_t last,
                                                   Activation activation)
{
    switch (activation) {
    case Activation::Relu: return activateRowsOf<L, Activation::Relu>(data, bias, rowsPerBias, M, first, last);
    case Activation::Silu: return activateRowsOf<L, Activation::Silu>(data, bias, rowsPerBias, M, first, last);
    case Activation::Gelu: break;
    }
    activateRowsOf<L, Activation::Gelu>(data, bias, rowsPerBias, M, first, last);
}

template <class Element>
using ActivateRows = void (*)(Element*, const Element*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                              Activation);

#if WIDELAB_HAS_TARGET
template <class Element>
WIDELAB_TARGET("avx512f")
void activateRowsAvx512(Element* data, const Element* bias, std::int64_t rowsPerBias, std::int64_t M,
                        std::int64_t first, std::int64_t last, Activation activation)
{
    activateRowsFor<16>(data, bias, rowsPerBias, M, first, last, activation);
}

// target("avx2") leaves FMA off; cpuRuns checks for both.
template <class Element>
WIDELAB_TARGET("avx2,fma")
void activateRowsAvx2(Element* data, const Element* bias, std::int64_t rowsPerBias, std::int64_t M,
                      std::int64_t first, std::int64_t last, Activation activation)
{
    activateRowsFor<8>(data, bias, rowsPerBias, M, first, last, activation);
}
#endif

template <class Element>
void activateRowsBaseline(Element* data, const Element* bias, std::int64_t rowsPerBias, std::int64_t M,
                          std::int64_t first, std::int64_t last, Activation activation)
{
    activateRowsFor<4>(data, bias, rowsPerBias, M, first, last, activation);
}

template <class Element>
ActivateRows<Element> activateRowsBuiltFor(InstructionSet set)
{
    if (!cpuRuns(set))
        throw std::invalid_argument(std::string("biasActivation: this CPU lacks ") + instructionSetName(set));
    switch (set) {
#if WIDELAB_HAS_TARGET
    case InstructionSet::Avx512: return activateRowsAvx512<Element>;
    case InstructionSet::Avx2: return activateRowsAvx2<Element>;
#endif
    default: return activateRowsBaseline<Element>;
    }
}

// The pass over a product and bias of one element type.
template <class Element>
void activateAll(const torch::Tensor& product, const torch::Tensor& bias, std::int64_t rowsPerBias,
                 Activation activation, InstructionSet set)
{
    const ActivateRows<Element> activateRows = activateRowsBuiltFor<Element>(set);
    const std::int64_t M = product.size(-1), rows = product.numel() / std::max<std::int64_t>(M, 1);
    Element* data = product.data_ptr<Element>();
    const Element* add = bias.data_ptr<Element>();
    at::parallel_for(0, rows, std::max<std::int64_t>(1, kElementsPerTask / std::max<std::int64_t>(M, 1)),
                     [&](std::int64_t first, std::int64_t last) {
                         activateRows(data, add, rowsPerBias, M, first, last, activation);
                     });
}

}  // namespace

bool biasActivationApplies(const torch::Tensor& x, const torch::Tensor& bias)
{
    // The product's type: x's, or under the CPU's autocast bf16, as is the
    // bias then (autocast's copy of the weight).
    const torch::ScalarType type = autocastType(x);
    return fastPathEnabled(FastPath::FusedActivation) && !torch::GradMode::is_enabled() && x.is_cpu()
           && bias.is_cpu() && (type == torch::kFloat || type == torch::kBFloat16)
           && (x.scalar_type() == torch::kFloat || x.scalar_type() == type) && bias.scalar_type() == type
           && bias.is_contiguous();
}

torch::Tensor biasActivation(torch::Tensor product, const torch::Tensor& bias, Activation activation,
                             InstructionSet set)
{
    const std::int64_t dims = product.dim();
    const std::int64_t U = dims == 3 ? product.size(0) : 1, M = dims >= 2 ? product.size(-1) : 0;
    const bool shapes = (dims == 2 || dims == 3)
                        && (bias.sizes() == torch::IntArrayRef{M}
                            || (dims == 3 && bias.sizes() == torch::IntArrayRef{U, M}));
    const torch::ScalarType type = product.scalar_type();
    if (!shapes || !product.is_contiguous() || !bias.is_contiguous() || !product.is_cpu() || !bias.is_cpu()
        || (type != torch::kFloat && type != torch::kBFloat16) || bias.scalar_type() != type)
        throw std::invalid_argument("biasActivation: needs a contiguous fp32 or bf16 CPU product [N, M] or "
                                    "[U, N, M] and a bias [M] or [U, M] of its type");
    // A bias of one row serves every product: read as U rows, each the same.
    const std::int64_t N = product.size(-2), rowsPerBias = bias.dim() == 1 ? U * N : N;
    if (type == torch::kBFloat16)
        activateAll<c10::BFloat16>(product, bias, rowsPerBias, activation, set);
    else
        activateAll<float>(product, bias, rowsPerBias, activation, set);
    return product;
}

}  // namespace widelab
