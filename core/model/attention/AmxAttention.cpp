#include "AmxAttention.h"

#include "KernelOperands.h"

#include "runtime/VectorMath.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#if defined(__linux__) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define WIDELAB_HAS_AMX 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define WIDELAB_HAS_AMX 0
#endif

namespace widelab {

#if WIDELAB_HAS_AMX
// Named apart from the other kernels' helpers, which a unity build puts in the same file.
namespace amx {
namespace {

constexpr std::int64_t kTile = 16;        // rows of every tile; keys of a score tile; dimensions of an output tile
constexpr std::int64_t kDepth = 32;       // bf16 elements along a tile product's inner dimension (64 bytes)
constexpr std::int64_t kOutputTiles = 4;  // output tiles held at once: 64 dimensions a pass over the weights
constexpr std::int64_t kMaxKeys = 8192;   // a tile of rows keeps every key's score: 16 x 8192 floats, 512 KiB
constexpr std::int64_t kMaxHeadDim = 256;
constexpr std::int64_t kMinQueries = 16;  // fewer (a decoding step's one) are left to the products

// Linux: ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA (arch/x86/include/uapi/asm/prctl.h).
constexpr int kRequestPermission = 0x1023;
constexpr int kTileData = 18;

// The tile registers' shapes, as LDTILECFG reads them (palette 1): every tile
// used here is 16 rows of 64 bytes.
struct alignas(64) TileConfig {
    std::uint8_t palette = 1;
    std::uint8_t startRow = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t bytesPerRow[16] = {};
    std::uint8_t rows[16] = {};
};

// Tiles (GCC's tile intrinsics take their numbers as written, so they appear
// as numbers below): 0 a tile of scores [16 rows, 16 keys]; 1 the left operand
// (queries, or weights) [16 rows, 32 bf16]; 2 the right operand (keys or
// values, in pairs) [16 pairs, 32 bf16]; 3 to 6 output tiles [16 rows, 16
// dimensions]. Alternating two tiles of scores and of operands, so that a load
// need not wait for the product reading the tile before it, measured the same.
constexpr int kTilesUsed = 7;

std::int64_t roundUp(std::int64_t n, std::int64_t to) { return (n + to - 1) / to * to; }

using Operands = KernelOperands<c10::BFloat16>;

// A thread's working memory for one head, 64-byte aligned pieces.
struct Scratch {
    std::vector<std::uint8_t> bytes;
    c10::BFloat16 *keys, *values, *weights, *queries;
    float *scores, *outputs, *keyBias;

    void shape(std::int64_t paddedKeys16, std::int64_t paddedKeys32, std::int64_t A)
    {
        const std::int64_t pieces[] = {
            paddedKeys16 * A * 2,           // keys: [Tk16 / 16 blocks][A / 32][16 pairs][32]
            paddedKeys32 * A * 2,           // values: [Tk32 / 32 blocks][A / 16][16 pairs][32]
            kTile * paddedKeys32 * 2,       // weights: [16 rows][Tk32] bf16
            kTile * A * 2,                  // queries of a short tile: [16 rows][A] bf16, zeros past the last
            kTile * paddedKeys16 * 4,       // scores: [16 rows][Tk16] fp32
            kTile * kTile * kOutputTiles * 4,  // outputs: [16 rows][64] fp32
            paddedKeys16 * 4,               // keyBias: [Tk16] fp32
        };
        std::int64_t total = 64;
        for (const std::int64_t piece : pieces)
            total += roundUp(piece, 64);
        bytes.resize(static_cast<std::size_t>(total));
        std::uint8_t* at = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(bytes.data()) + 63)
                                                           & ~std::uintptr_t{63});
        auto take = [&](std::int64_t piece) {
            std::uint8_t* start = at;
            at += roundUp(piece, 64);
            return start;
        };
        keys = reinterpret_cast<c10::BFloat16*>(take(pieces[0]));
        values = reinterpret_cast<c10::BFloat16*>(take(pieces[1]));
        weights = reinterpret_cast<c10::BFloat16*>(take(pieces[2]));
        queries = reinterpret_cast<c10::BFloat16*>(take(pieces[3]));
        scores = reinterpret_cast<float*>(take(pieces[4]));
        outputs = reinterpret_cast<float*>(take(pieces[5]));
        keyBias = reinterpret_cast<float*>(take(pieces[6]));
    }
};

// A tile product's right operand holds its inner dimension in pairs: row p,
// column n holds elements 2p and 2p + 1 of column n side by side. The keys,
// as the right operand of q k^T, in blocks of 16 keys by 32 dimensions: block
// (j / 16, a / 32), pair a % 32 / 2, column j % 16. Taking each pair of a
// key's dimensions as one 32-bit element, a block is the transpose of its
// 16 keys' rows.
__attribute__((target("avx512f,avx512bw"))) void packKeys(const c10::BFloat16* k, std::int64_t stride,
                                                          std::int64_t Tk, std::int64_t A, c10::BFloat16* to)
{
    using Floats = vector::Floats<kTile>;
    const std::int64_t depthBlocks = A / kDepth;
    for (std::int64_t j0 = 0; j0 < Tk; j0 += kTile)
        for (std::int64_t d = 0; d < depthBlocks; ++d) {
            Floats rows[kTile];
            for (std::int64_t n = 0; n < kTile; ++n) {
                rows[n] = Floats{};
                if (j0 + n < Tk)
                    std::memcpy(&rows[n], k + (j0 + n) * stride + d * kDepth, sizeof(Floats));
            }
            vector::transpose<kTile>(rows);
            std::memcpy(static_cast<void*>(to + ((j0 / kTile) * depthBlocks + d) * (kTile * kDepth)), rows,
                        sizeof rows);
        }
}

// The values, as the right operand of weights x values, in blocks of 32 keys
// by 16 dimensions: block (j / 32, a / 16), pair j % 32 / 2, column a % 16:
// row p interleaves keys 2p and 2p + 1, dimension by dimension.
__attribute__((target("avx512f,avx512bw"))) void packValues(const c10::BFloat16* v, std::int64_t stride,
                                                            std::int64_t Tk, std::int64_t A, c10::BFloat16* to)
{
    typedef std::uint16_t Halves __attribute__((vector_size(kTile * 2)));
    const std::int64_t dimBlocks = A / kTile, paddedKeys32 = roundUp(Tk, kDepth);
    for (std::int64_t j = 0; j < paddedKeys32; j += 2)
        for (std::int64_t a = 0; a < dimBlocks; ++a) {
            Halves first = {}, second = {};
            if (j < Tk)
                std::memcpy(&first, v + j * stride + a * kTile, sizeof first);
            if (j + 1 < Tk)
                std::memcpy(&second, v + (j + 1) * stride + a * kTile, sizeof second);
            const auto pairs = [&]<std::size_t... e>(std::index_sequence<e...>) {
                return __builtin_shufflevector(first, second, (e / 2 + e % 2 * kTile)...);
            }(std::make_index_sequence<2 * kTile>{});
            std::memcpy(static_cast<void*>(to + ((j / kDepth) * dimBlocks + a) * (kTile * kDepth) + (j % kDepth / 2) * kDepth),
                        &pairs, sizeof pairs);
        }
}

__attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw"))) void zeroOutputs(std::int64_t count)
{
    _tile_zero(3);
    if (count > 1)
        _tile_zero(4);
    if (count > 2)
        _tile_zero(5);
    if (count > 3)
        _tile_zero(6);
}

// Output tile `index` (0 to 3) += left x right.
__attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw"))) void multiplyInto(std::int64_t index)
{
    switch (index) {
    case 0: _tile_dpbf16ps(3, 1, 2); break;
    case 1: _tile_dpbf16ps(4, 1, 2); break;
    case 2: _tile_dpbf16ps(5, 1, 2); break;
    default: _tile_dpbf16ps(6, 1, 2); break;
    }
}

__attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw"))) void storeOutputs(std::int64_t count, float* to)
{
    constexpr std::int64_t stride = kTile * kOutputTiles * 4;  // bytes per row of [16, 64] floats
    _tile_stored(3, to, stride);
    if (count > 1)
        _tile_stored(4, to + kTile, stride);
    if (count > 2)
        _tile_stored(5, to + 2 * kTile, stride);
    if (count > 3)
        _tile_stored(6, to + 3 * kTile, stride);
}

constexpr float kLog2e = 1.44269504088896341f;

// 2^t for t <= 0, -inf included, to 3.5e-6 of its value (bf16 keeps 2^-9):
// t = n + f with n the integer nearest t and |f| <= 1/2, 2^f by the degree-4
// polynomial through the five Chebyshev nodes of [-1/2, 1/2], times 2^n by
// VSCALEFPS; 0 below -126. t is first raised to -126, so that -inf gives no
// NaN and no lane leaves float's normal range (a result that underflows takes
// a microcode assist: a row's padding keys had made the kernel 1.3x slower).
// Eight instructions where expBounded takes fourteen.
__attribute__((target("avx512f"))) inline vector::Floats<kTile> exp2Weights(vector::Floats<kTile> t)
{
    // The zero-masked forms with every lane kept: GCC 12's plain ones start
    // from an undefined vector, which -Wmaybe-uninitialized reports.
    constexpr __mmask16 all = 0xffff;
    const __m512 x = _mm512_maskz_max_ps(all, t, _mm512_set1_ps(-126.0f));
    const __m512 n = _mm512_maskz_roundscale_ps(all, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_fmadd_ps(f, _mm512_set1_ps(0.009666368515387469f), _mm512_set1_ps(0.055921975842256264f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24022349038020335f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.693121045203427f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(t, _mm512_set1_ps(-126.0f), _CMP_GT_OQ), p, n);
}

// 16 weights rounded to bf16 by one instruction (AVX512-BF16's, to the
// nearest even; a weight is never NaN), where storeElements takes eight.
__attribute__((target("avx512f,avx512bf16"))) inline void storeWeights(c10::BFloat16* to, vector::Floats<kTile> weights)
{
    const __m256bh rounded = _mm512_cvtneps_pbh(weights);
    std::memcpy(static_cast<void*>(to), &rounded, sizeof rounded);
}

// Every query row of head g in batch entry b.
__attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512bf16"))) void attendHead(const Operands& op,
                                                                                          std::int64_t b,
                                                                                          std::int64_t g, Scratch& s)
{
    using Floats = vector::Floats<kTile>;
    constexpr float inf = std::numeric_limits<float>::infinity();
    const std::int64_t A = op.A, Tk = op.Tk, Tk16 = roundUp(Tk, kTile), Tk32 = roundUp(Tk, kDepth);
    const std::int64_t depthBlocks = A / kDepth, dimBlocks = A / kTile;
    packKeys(op.k + b * op.kStride[0] + g * op.kStride[1], op.kStride[2], Tk, A, s.keys);
    packValues(op.v + b * op.vStride[0] + g * op.vStride[1], op.vStride[2], Tk, A, s.values);

    const float* bias = op.bias ? op.bias + b * op.biasBatchStride : nullptr;
    const bool rowBias = bias && op.biasQueryStride != 0;
    for (std::int64_t j = 0; j < Tk16; ++j)
        s.keyBias[j] = j >= Tk ? -inf : bias && !rowBias ? bias[j] * kLog2e : 0.0f;
    const float scale2 = op.scale * kLog2e;
    // The weights past Tk16 (to Tk32) meet zero values, but must not be NaN's bits.
    for (std::int64_t r = 0; r < kTile; ++r)
        for (std::int64_t j = Tk16; j < Tk32; ++j)
            s.weights[r * Tk32 + j] = c10::BFloat16(0.0f);

    const c10::BFloat16* q = op.q + b * op.qStride[0] + g * op.qStride[1];
    for (std::int64_t i0 = 0; i0 < op.Tq; i0 += kTile) {
        const std::int64_t rows = std::min(kTile, op.Tq - i0);
        // A whole tile of queries is read where it lies; a short one from a copy padded with zeros.
        const c10::BFloat16* queries = q + i0 * op.qStride[2];
        std::int64_t queryStride = op.qStride[2];
        if (rows < kTile) {
            std::memset(static_cast<void*>(s.queries), 0, static_cast<std::size_t>(kTile * A * 2));
            for (std::int64_t r = 0; r < rows; ++r)
                std::memcpy(static_cast<void*>(s.queries + r * A), queries + r * op.qStride[2],
                            static_cast<std::size_t>(A * 2));
            queries = s.queries;
            queryStride = A;
        }

        // Scores: a tile of 16 keys at a time, summed over the head's dimensions 32 at a time.
        for (std::int64_t j0 = 0; j0 < Tk16; j0 += kTile) {
            _tile_zero(0);
            for (std::int64_t d = 0; d < depthBlocks; ++d) {
                _tile_loadd(1, queries + d * kDepth, queryStride * 2);
                _tile_loadd(2, s.keys + ((j0 / kTile) * depthBlocks + d) * (kTile * kDepth), 64);
                _tile_dpbf16ps(0, 1, 2);
            }
            _tile_stored(0, s.scores + j0, Tk16 * 4);
        }

        // Each row's softmax over all its keys in fp32, in base 2 (the scale and
        // the bias taken times log2 e); the weights kept in bf16 for the product
        // with the values. The rows past the last of a short tile are left as
        // an earlier tile wrote them: their outputs are never written.
        float inverse[kTile];
        for (std::int64_t r = 0; r < rows; ++r) {
            float* row = s.scores + r * Tk16;
            const float* biasRow = rowBias ? bias + (i0 + r) * op.biasQueryStride : nullptr;
            Floats maximum = Floats{} + std::numeric_limits<float>::lowest();
            for (std::int64_t j = 0; j < Tk16; j += kTile) {
                Floats x = vector::loadFloats<kTile>(row + j) * scale2 + vector::loadFloats<kTile>(s.keyBias + j);
                if (biasRow) {
                    float piece[kTile];
                    if (j + kTile <= Tk)
                        std::memcpy(piece, biasRow + j, sizeof piece);
                    else
                        for (std::int64_t e = 0; e < kTile; ++e)
                            piece[e] = j + e < Tk ? biasRow[j + e] : 0.0f;
                    x += vector::loadFloats<kTile>(piece) * kLog2e;
                }
                vector::storeFloats<kTile>(row + j, x);
                maximum = vector::larger(maximum, x);
            }
            const float top = vector::largestLane(maximum);
            Floats sum = {};
            for (std::int64_t j = 0; j < Tk16; j += kTile) {
                const Floats weight = exp2Weights(vector::loadFloats<kTile>(row + j) - top);
                sum += weight;
                storeWeights(s.weights + r * Tk32 + j, weight);
            }
            inverse[r] = 1.0f / vector::sumOfLanes<kTile>(sum);
        }

        // The weights times the values, 64 dimensions (four output tiles) a pass over the weights.
        for (std::int64_t a0 = 0; a0 < dimBlocks; a0 += kOutputTiles) {
            const std::int64_t count = std::min(kOutputTiles, dimBlocks - a0);
            zeroOutputs(count);
            for (std::int64_t j0 = 0; j0 < Tk32; j0 += kDepth) {
                _tile_loadd(1, s.weights + j0, Tk32 * 2);
                for (std::int64_t t = 0; t < count; ++t) {
                    _tile_loadd(2, s.values + ((j0 / kDepth) * dimBlocks + a0 + t) * (kTile * kDepth), 64);
                    multiplyInto(t);
                }
            }
            storeOutputs(count, s.outputs);
            for (std::int64_t r = 0; r < rows; ++r) {
                c10::BFloat16* out = op.out + ((b * op.Tq + i0 + r) * op.G + g) * A + a0 * kTile;
                for (std::int64_t t = 0; t < count; ++t)
                    vector::storeElements<kTile>(
                        out + t * kTile,
                        vector::loadFloats<kTile>(s.outputs + r * kTile * kOutputTiles + t * kTile) * inverse[r]);
            }
        }
    }
}

// The configuration lives in static memory: GCC's _tile_loadconfig tells the
// compiler it reads only a pointer's worth of its operand, so the stores that
// fill a local one may be left out.
__attribute__((target("amx-tile"))) void configureTiles()
{
    static const TileConfig config = [] {
        TileConfig c;
        for (int t = 0; t < kTilesUsed; ++t) {
            c.rows[t] = kTile;
            c.bytesPerRow[t] = 64;
        }
        return c;
    }();
    _tile_loadconfig(&config);
}

__attribute__((target("amx-tile"))) void releaseTiles() { _tile_release(); }

}  // namespace
}  // namespace amx

bool amxRuns()
{
    using namespace amx;
    static const bool runs = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
            return false;
        const bool tile = edx & (1u << 24), bf16 = edx & (1u << 22), avx512 = ebx & (1u << 16), bw = ebx & (1u << 30);
        if (!tile || !bf16 || !avx512 || !bw || !__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)
            || !(eax & (1u << 5)))  // AVX512-BF16's conversions
            return false;
        return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
    }();
    return runs;
}

bool amxAttentionApplies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                         const torch::Tensor& bias)
{
    using namespace amx;
    for (const torch::Tensor* t : {&q, &k, &v})
        if (!t->is_cpu() || t->scalar_type() != torch::kBFloat16 || t->dim() != 4
            || (torch::GradMode::is_enabled() && t->requires_grad()))
            return false;
    const std::int64_t B = q.size(0), Tq = q.size(2), Tk = k.size(2), A = q.size(3);
    if (Tq < kMinQueries || Tk < kMinQueries || Tk > kMaxKeys || A % kDepth != 0 || A > kMaxHeadDim
        || k.sizes() != v.sizes() || k.size(0) != B || k.size(1) != q.size(1) || k.size(3) != A)
        return false;
    return kernelTakesBias(bias, B, Tq, Tk) && amxRuns();
}

torch::Tensor amxAttention(const torch::Tensor& q_, const torch::Tensor& k_, const torch::Tensor& v_,
                           const torch::Tensor& bias_, double scale)
{
    using namespace amx;
    if (!amxAttentionApplies(q_, k_, v_, bias_))
        throw std::invalid_argument("amxAttention: needs AMX and bf16 q, k, v with a head dimension of a "
                                    "whole number of 32 (amxAttentionApplies)");
    const torch::Tensor q = lastDimContiguous(q_), k = lastDimContiguous(k_), v = lastDimContiguous(v_);
    const std::int64_t B = q.size(0), G = q.size(1), Tq = q.size(2), A = q.size(3), Tk = k.size(2);
    const torch::Tensor bias = bias_.defined() ? lastDimContiguous(bias_.expand({B, 1, Tq, Tk})) : bias_;
    torch::Tensor out = torch::empty({B, Tq, G, A}, q.options());

    const Operands op = kernelOperands<c10::BFloat16>(q, k, v, bias, out, scale);

    // A task is a head: its keys and values are packed once for all its rows.
    at::parallel_for(0, B * G, 1, [&](std::int64_t begin, std::int64_t end) {
        Scratch scratch;
        scratch.shape(roundUp(Tk, kTile), roundUp(Tk, kDepth), A);
        configureTiles();
        for (std::int64_t task = begin; task < end; ++task)
            attendHead(op, task / G, task % G, scratch);
        releaseTiles();
    });
    return out.permute({0, 2, 1, 3});
}

#else

bool amxRuns() { return false; }

bool amxAttentionApplies(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)
{
    return false;
}

torch::Tensor amxAttention(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                           double)
{
    throw std::invalid_argument("amxAttention: this build has no AMX kernel");
}

#endif

}  // namespace widelab
