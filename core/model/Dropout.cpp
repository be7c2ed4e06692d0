#include "Dropout.h"

#include "runtime/TargetClones.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <type_traits>

namespace widelab {
namespace {

// Elements per chunk: each chunk's mask comes from the seed and the chunk's
// index alone, so any split of chunks over threads gives the same mask.
constexpr std::int64_t kChunk = std::int64_t{1} << 14;

// The float loops below are built twice, for AVX2 and for the baseline, and the
// CPU picks at load time: with AVX2 the hash costs nothing next to the memory
// traffic (measured: 42 ms for 50M elements, as fast as a plain scaled copy).
#define WIDELAB_VECTOR_CLONES WIDELAB_TARGET_CLONES("avx2", "default")

// SplitMix64's output function: a bijective mix of 64 bits.
inline std::uint64_t mix64(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// MurmurHash3's finaliser, a bijective mix of 32 bits.
inline std::uint32_t mix32(std::uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

// Whether element `offset` of the chunk with `key` is kept: 16 bits of a hash
// of its position, compared with the drop threshold (p in units of 2^-16). The
// key enters by xor, not addition: with key + offset * phi, two chunks whose
// keys differed by a multiple of phi would share a shifted copy of one mask.
inline bool kept(std::uint32_t key, std::int64_t offset, std::uint32_t threshold)
{
    return (mix32(key ^ (static_cast<std::uint32_t>(offset) * 0x9e3779b9u)) >> 16) >= threshold;
}

struct MaskSpec {
    std::uint64_t seed = 0;
    std::uint32_t threshold = 0;
    double scale = 1.0;  // 1 / the keep probability
    std::uint32_t key(std::int64_t chunk) const
    {
        return static_cast<std::uint32_t>(mix64(seed ^ mix64(static_cast<std::uint64_t>(chunk))));
    }
};

MaskSpec maskSpec(double p)
{
    MaskSpec spec;
    spec.threshold = static_cast<std::uint32_t>(std::lround(p * 65536.0));
    spec.scale = spec.threshold >= 65536u ? 0.0 : 65536.0 / (65536.0 - spec.threshold);
    // One draw from the default CPU generator, under its lock: the value that
    // torch::empty({1}, kInt64).random_() draws (random64 modulo 2^63), read
    // without a tensor, so that no operator reads a value back in the step.
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    {
        const std::lock_guard<std::mutex> lock(generator.mutex());
        spec.seed = at::check_generator<at::CPUGeneratorImpl>(generator)->random64()
                    % (static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1);
    }
    return spec;
}

WIDELAB_VECTOR_CLONES void dropValues(const float* __restrict in, float* __restrict out, std::uint8_t* __restrict keep,
                                      std::int64_t count, std::uint32_t key, std::uint32_t threshold, double scale)
{
    const auto s = static_cast<float>(scale);
    for (std::int64_t i = 0; i < count; ++i) {
        const bool k = kept(key, i, threshold);
        keep[i] = k;
        out[i] = in[i] * (k ? s : 0.0f);  // no branch, so that it vectorises
    }
}

WIDELAB_VECTOR_CLONES void scaleValues(const float* __restrict in, const std::uint8_t* __restrict keep,
                                       float* __restrict out, std::int64_t count, double scale)
{
    const auto s = static_cast<float>(scale);
    for (std::int64_t i = 0; i < count; ++i)
        out[i] = in[i] * (keep[i] ? s : 0.0f);
}

// The same for the other floating types (overload resolution prefers the
// float functions above), computing in double for double, else in float.
template <typename T>
using Arithmetic = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
void dropValues(const T* in, T* out, std::uint8_t* keep, std::int64_t count, std::uint32_t key,
                std::uint32_t threshold, double scale)
{
    const auto s = static_cast<Arithmetic<T>>(scale);
    for (std::int64_t i = 0; i < count; ++i) {
        keep[i] = kept(key, i, threshold);
        out[i] = static_cast<T>(static_cast<Arithmetic<T>>(in[i]) * (keep[i] ? s : Arithmetic<T>(0)));
    }
}

template <typename T>
void scaleValues(const T* in, const std::uint8_t* keep, T* out, std::int64_t count, double scale)
{
    const auto s = static_cast<Arithmetic<T>>(scale);
    for (std::int64_t i = 0; i < count; ++i)
        out[i] = static_cast<T>(static_cast<Arithmetic<T>>(in[i]) * (keep[i] ? s : Arithmetic<T>(0)));
}

// out = in * scale where kept, else 0, and mask = kept, for contiguous `in`.
torch::Tensor applyNewMask(const torch::Tensor& in, const MaskSpec& spec, torch::Tensor& mask)
{
    torch::Tensor out = torch::empty_like(in);
    mask = torch::empty(in.sizes(), in.options().dtype(torch::kUInt8));
    const std::int64_t n = in.numel();
    std::uint8_t* keep = mask.data_ptr<std::uint8_t>();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, in.scalar_type(), "widelab_dropout", [&] {
        const scalar_t* source = in.data_ptr<scalar_t>();
        scalar_t* target = out.data_ptr<scalar_t>();
        at::parallel_for(0, (n + kChunk - 1) / kChunk, 1, [&](std::int64_t first, std::int64_t last) {
            for (std::int64_t chunk = first; chunk < last; ++chunk) {
                const std::int64_t begin = chunk * kChunk, count = std::min(kChunk, n - begin);
                dropValues(source + begin, target + begin, keep + begin, count, spec.key(chunk), spec.threshold,
                           spec.scale);
            }
        });
    });
    return out;
}

// in * scale where the mask keeps, else 0, for contiguous `in` and `mask`.
torch::Tensor applyMask(const torch::Tensor& in, const torch::Tensor& mask, double scale)
{
    torch::Tensor out = torch::empty_like(in);
    const std::uint8_t* keep = mask.data_ptr<std::uint8_t>();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, in.scalar_type(), "widelab_dropout_backward", [&] {
        const scalar_t* source = in.data_ptr<scalar_t>();
        scalar_t* target = out.data_ptr<scalar_t>();
        at::parallel_for(0, in.numel(), kChunk, [&](std::int64_t begin, std::int64_t end) {
            scaleValues(source + begin, keep + begin, target + begin, end - begin, scale);
        });
    });
    return out;
}

struct CpuDropout : torch::autograd::Function<CpuDropout> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, double p)
    {
        const MaskSpec spec = maskSpec(p);
        torch::Tensor mask;
        torch::Tensor out = applyNewMask(x.contiguous(), spec, mask);
        ctx->save_for_backward({mask});
        ctx->saved_data["scale"] = spec.scale;
        return out;
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list gradients)
    {
        const torch::Tensor mask = ctx->get_saved_variables()[0];
        const double scale = ctx->saved_data["scale"].toDouble();
        return {applyMask(gradients[0].contiguous(), mask, scale), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor applyDropout(const torch::Tensor& x, double p, bool training)
{
    if (!training || p <= 0.0)
        return x;
    const bool ownKernel = x.is_cpu() && x.layout() == torch::kStrided && at::isFloatingType(x.scalar_type());
    if (!ownKernel || p >= 1.0)
        return torch::dropout(x, p, true);
    return CpuDropout::apply(x, p);
}

}  // namespace widelab
