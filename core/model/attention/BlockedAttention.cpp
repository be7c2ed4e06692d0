#include "BlockedAttention.h"

#include "runtime/TargetClones.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

// The kernel's helpers pass 64-byte vectors by value; they are inlined into the
// clones and never cross a call, so the ABI GCC warns about is never used.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace widelab {
namespace {

// Sixteen floats: one AVX-512 register, two AVX2 ones, four SSE ones. GCC's
// vector extension, so that one body builds for each instruction set.
constexpr std::int64_t kLanes = 16;
typedef float Floats __attribute__((vector_size(kLanes * sizeof(float))));
typedef std::int32_t Ints __attribute__((vector_size(kLanes * sizeof(std::int32_t))));

constexpr std::int64_t kRows = 4;                     // query rows that share each key's loads
constexpr std::int64_t kKeys = 64;                    // keys per block: kRows x kKeys scores in registers
constexpr std::int64_t kKeyVectors = kKeys / kLanes;  // vectors across a block's keys
constexpr std::int64_t kRowsPerTask = 128;            // query rows per task (tasks also split batch and heads)
// Fewer query rows than this (a decoding step's one) are left to the products,
// for which packing the keys and values would cost more than it saves.
constexpr std::int64_t kMinimumQueries = 16;

[[gnu::always_inline]] inline Floats load(const float* p)
{
    Floats v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

[[gnu::always_inline]] inline void store(float* p, Floats v) { std::memcpy(p, &v, sizeof v); }

[[gnu::always_inline]] inline Floats larger(Floats a, Floats b) { return a > b ? a : b; }

// The largest lane, in four steps of halving (a lane-by-lane loop made a chain
// of sixteen dependent maxima per row and block).
[[gnu::always_inline]] inline float largest(Floats v)
{
    v = larger(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
    v = larger(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
    v = larger(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
    v = larger(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
    return v[0];
}

[[gnu::always_inline]] inline float total(Floats v)
{
    float s = 0.0f;
    for (int i = 0; i < kLanes; ++i)
        s += v[i];
    return s;
}

// exp(x) for x <= 0, to within 2 ulp; 0 below -87 (exp underflows float there)
// and for -inf. x = n ln 2 + r with |r| <= ln 2 / 2, exp(r) by Taylor's series
// to r^7 (truncation under 6e-9), 2^n put into the exponent's bits.
[[gnu::always_inline]] inline Floats expNonPositive(Floats x)
{
    const Floats floor = Floats{} - 87.0f;
    const Ints under = x < floor;
    x = x < floor ? floor : x;
    // Rounded to nearest: t <= 0, and conversion truncates towards zero.
    const Ints n = __builtin_convertvector(x * 1.44269504088896341f - 0.5f, Ints);
    const Floats nf = __builtin_convertvector(n, Floats);
    // ln 2 in two parts, the first with few enough bits that nf times it is exact.
    const Floats r = (x - nf * 0.693145751953125f) - nf * 1.42860682030941723e-6f;
    Floats p = r * (1.0f / 5040.0f) + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const Floats twoToN = std::bit_cast<Floats>((n + 127) << 23);
    return under ? Floats{} : p * twoToN;
}

struct Operands {
    const float *q, *k, *v, *bias;  // bias: null when there is none
    float* out;                     // [B, Tq, G, A], contiguous
    std::int64_t qStride[3], kStride[3], vStride[3];  // over batch, head and position; A is contiguous
    std::int64_t biasBatchStride, biasQueryStride;    // 0 where the bias broadcasts; keys are contiguous
    std::int64_t G, Tq, Tk, A;
    float scale;
};

std::int64_t roundUp(std::int64_t n, std::int64_t to) { return (n + to - 1) / to * to; }

// One task: query rows [row0, row1) of head g in batch entry b. Keys are packed
// transposed ([A, Tk'], a block's keys side by side for each dimension) and
// values padded to whole vectors ([Tk', A']), zeros beyond Tk and A. Inlined
// into one function per instruction set (below), with the helpers above.
[[gnu::always_inline]] inline void attendRows(const Operands& op, std::int64_t b, std::int64_t g, std::int64_t row0,
                                              std::int64_t row1, std::vector<float>& scratch)
{
    const std::int64_t A = op.A, paddedA = roundUp(A, kLanes), Tk = op.Tk, paddedTk = roundUp(Tk, kKeys);
    scratch.assign(A * paddedTk + paddedTk * paddedA + kRows * A + kRows * paddedA + kRows * kKeys, 0.0f);
    float* keysT = scratch.data();
    float* values = keysT + A * paddedTk;
    float* queries = values + paddedTk * paddedA;  // [kRows, A], scaled
    float* context = queries + kRows * A;          // [kRows, A'], the running weighted sums
    float* scores = context + kRows * paddedA;     // [kRows, kKeys], then the block's weights

    const float* k = op.k + b * op.kStride[0] + g * op.kStride[1];
    const float* v = op.v + b * op.vStride[0] + g * op.vStride[1];
    for (std::int64_t j = 0; j < Tk; ++j) {
        const float* key = k + j * op.kStride[2];
        for (std::int64_t a = 0; a < A; ++a)
            keysT[a * paddedTk + j] = key[a];
        std::memcpy(values + j * paddedA, v + j * op.vStride[2], A * sizeof(float));
    }

    for (std::int64_t i0 = row0; i0 < row1; i0 += kRows) {
        const std::int64_t rows = std::min(kRows, row1 - i0);
        const float* bias[kRows];
        for (std::int64_t r = 0; r < kRows; ++r) {
            const std::int64_t i = i0 + std::min(r, rows - 1);  // missing rows repeat the last, unwritten
            const float* query = op.q + b * op.qStride[0] + g * op.qStride[1] + i * op.qStride[2];
            for (std::int64_t a = 0; a < A; ++a)
                queries[r * A + a] = query[a] * op.scale;
            bias[r] = op.bias ? op.bias + b * op.biasBatchStride + i * op.biasQueryStride : nullptr;
        }
        float maximum[kRows], rescale[kRows];
        Floats sum[kRows] = {};  // per lane; added across lanes once, at the end
        std::fill_n(maximum, kRows, -std::numeric_limits<float>::infinity());
        std::fill_n(context, kRows * paddedA, 0.0f);

        for (std::int64_t j0 = 0; j0 < Tk; j0 += kKeys) {
            const std::int64_t keys = std::min(kKeys, Tk - j0);
            // Scores of kRows queries against the block's keys: each key vector loaded once for all rows.
            Floats s[kRows][kKeyVectors] = {};
            for (std::int64_t a = 0; a < A; ++a) {
                const float* keyRow = keysT + a * paddedTk + j0;
                Floats kv[kKeyVectors];
                for (std::int64_t c = 0; c < kKeyVectors; ++c)
                    kv[c] = load(keyRow + c * kLanes);
                for (std::int64_t r = 0; r < kRows; ++r) {
                    const float qa = queries[r * A + a];
                    for (std::int64_t c = 0; c < kKeyVectors; ++c)
                        s[r][c] += qa * kv[c];
                }
            }
            for (std::int64_t r = 0; r < kRows; ++r) {
                float* row = scores + r * kKeys;
                for (std::int64_t c = 0; c < kKeyVectors; ++c)
                    store(row + c * kLanes, s[r][c]);
                if (bias[r]) {
                    if (keys == kKeys)
                        for (std::int64_t c = 0; c < kKeyVectors; ++c)
                            store(row + c * kLanes, load(row + c * kLanes) + load(bias[r] + j0 + c * kLanes));
                    else
                        for (std::int64_t j = 0; j < keys; ++j)
                            row[j] += bias[r][j0 + j];
                }
                std::fill(row + keys, row + kKeys, -std::numeric_limits<float>::infinity());  // beyond Tk

                Floats top = load(row);
                for (std::int64_t c = 1; c < kKeyVectors; ++c)
                    top = larger(top, load(row + c * kLanes));
                const float updated = std::max(maximum[r], largest(top));
                rescale[r] = std::exp(maximum[r] - updated);  // 0 at the first block (-inf)
                maximum[r] = updated;
                Floats weights = {};
                for (std::int64_t c = 0; c < kKeyVectors; ++c) {
                    const Floats w = expNonPositive(load(row + c * kLanes) - updated);
                    store(row + c * kLanes, w);
                    weights += w;
                }
                sum[r] = sum[r] * rescale[r] + weights;
            }
            // context = context * rescale + weights x values, one vector of A at a time.
            for (std::int64_t a = 0; a < paddedA; a += kLanes) {
                Floats acc[kRows];
                for (std::int64_t r = 0; r < kRows; ++r)
                    acc[r] = load(context + r * paddedA + a) * rescale[r];
                for (std::int64_t j = 0; j < keys; ++j) {
                    const Floats value = load(values + (j0 + j) * paddedA + a);
                    for (std::int64_t r = 0; r < kRows; ++r)
                        acc[r] += scores[r * kKeys + j] * value;
                }
                for (std::int64_t r = 0; r < kRows; ++r)
                    store(context + r * paddedA + a, acc[r]);
            }
        }
        for (std::int64_t r = 0; r < rows; ++r) {
            float* out = op.out + (((b * op.Tq) + i0 + r) * op.G + g) * A;
            const float inverse = 1.0f / total(sum[r]);
            for (std::int64_t a = 0; a < A; ++a)
                out[a] = context[r * paddedA + a] * inverse;
        }
    }
}

using AttendRows = void (*)(const Operands&, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           std::vector<float>&);

#if WIDELAB_HAS_TARGET
WIDELAB_TARGET("avx512f")
void attendRowsAvx512(const Operands& op, std::int64_t b, std::int64_t g, std::int64_t row0, std::int64_t row1,
                      std::vector<float>& scratch)
{
    attendRows(op, b, g, row0, row1, scratch);
}

WIDELAB_TARGET("avx2")
void attendRowsAvx2(const Operands& op, std::int64_t b, std::int64_t g, std::int64_t row0, std::int64_t row1,
                    std::vector<float>& scratch)
{
    attendRows(op, b, g, row0, row1, scratch);
}
#endif

void attendRowsBaseline(const Operands& op, std::int64_t b, std::int64_t g, std::int64_t row0, std::int64_t row1,
                        std::vector<float>& scratch)
{
    attendRows(op, b, g, row0, row1, scratch);
}

AttendRows attendRowsFor(InstructionSet set)
{
    if (!cpuRuns(set))
        throw std::invalid_argument(std::string("blockedAttention: this CPU lacks ") + instructionSetName(set));
    switch (set) {
#if WIDELAB_HAS_TARGET
    case InstructionSet::Avx512: return attendRowsAvx512;
    case InstructionSet::Avx2: return attendRowsAvx2;
#endif
    default: return attendRowsBaseline;
    }
}

}  // namespace

bool blockedAttentionApplies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& bias)
{
    for (const torch::Tensor* t : {&q, &k, &v})
        if (!t->is_cpu() || t->scalar_type() != torch::kFloat || t->dim() != 4
            || (torch::GradMode::is_enabled() && t->requires_grad()))
            return false;
    const std::int64_t B = q.size(0), Tq = q.size(2), Tk = k.size(2);
    if (Tq < kMinimumQueries || Tk < 1 || k.sizes() != v.sizes() || k.size(0) != B || k.size(1) != q.size(1)
        || k.size(3) != q.size(3))
        return false;
    if (!bias.defined())
        return true;
    return bias.is_cpu() && bias.scalar_type() == torch::kFloat && bias.dim() == 4 && bias.size(1) == 1
           && (bias.size(0) == 1 || bias.size(0) == B) && (bias.size(2) == 1 || bias.size(2) == Tq)
           && bias.size(3) == Tk;
}

torch::Tensor blockedAttention(const torch::Tensor& q_, const torch::Tensor& k_, const torch::Tensor& v_,
                               const torch::Tensor& bias_, double scale, InstructionSet set)
{
    const AttendRows attend = attendRowsFor(set);
    auto lastContiguous = [](const torch::Tensor& t) { return t.stride(-1) == 1 ? t : t.contiguous(); };
    const torch::Tensor q = lastContiguous(q_), k = lastContiguous(k_), v = lastContiguous(v_);
    const std::int64_t B = q.size(0), G = q.size(1), Tq = q.size(2), A = q.size(3), Tk = k.size(2);
    const torch::Tensor bias = bias_.defined() ? lastContiguous(bias_.expand({B, 1, Tq, Tk})) : bias_;
    torch::Tensor out = torch::empty({B, Tq, G, A}, q.options());

    Operands op{};
    op.q = q.data_ptr<float>();
    op.k = k.data_ptr<float>();
    op.v = v.data_ptr<float>();
    op.bias = bias.defined() ? bias.data_ptr<float>() : nullptr;
    op.out = out.data_ptr<float>();
    for (int d = 0; d < 3; ++d) {
        op.qStride[d] = q.stride(d);
        op.kStride[d] = k.stride(d);
        op.vStride[d] = v.stride(d);
    }
    op.biasBatchStride = bias.defined() ? bias.stride(0) : 0;
    op.biasQueryStride = bias.defined() ? bias.stride(2) : 0;
    op.G = G;
    op.Tq = Tq;
    op.Tk = Tk;
    op.A = A;
    op.scale = static_cast<float>(scale);

    const std::int64_t chunks = (Tq + kRowsPerTask - 1) / kRowsPerTask;
    at::parallel_for(0, B * G * chunks, 1, [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> scratch;
        for (std::int64_t task = begin; task < end; ++task) {
            const std::int64_t b = task / (G * chunks), g = task / chunks % G, chunk = task % chunks;
            const std::int64_t row0 = chunk * kRowsPerTask;
            attend(op, b, g, row0, std::min(Tq, row0 + kRowsPerTask), scratch);
        }
    });
    return out.permute({0, 2, 1, 3});
}

}  // namespace widelab
