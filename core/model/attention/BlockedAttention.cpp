#include "BlockedAttention.h"

#include "KernelOperands.h"

#include "runtime/TargetClones.h"
#include "runtime/VectorMath.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace widelab {
namespace {

// A task is a head's query rows, or a piece of them when there are too few
// heads for every thread to take this many tasks: a task packs its head's keys
// and values (packBlock) once for all its rows.
constexpr std::int64_t kTasksPerThread = 4;
// Fewer query rows than this (a decoding step's one) are left to the products:
// a tile of rows would be mostly repeats.
constexpr std::int64_t kMinimumQueries = 16;
// A row's weights are taken against a running maximum that is only raised (and
// the sums rescaled) when a block's score exceeds it by more than kHeadroom:
// weights stay under e^kHeadroom, and most blocks skip the rescaling.
constexpr float kHeadroom = 5.0f;

// q, k, v and the output hold `Element`s: fp32, or bf16 under the CPU's
// autocast, widened to fp32 as they are read and rounded to the nearest even
// bf16 as the output is written (as c10::BFloat16 rounds), so that the
// arithmetic between is the fp32 kernel's. The bias is always fp32.
template <class Element>
using Operands = KernelOperands<Element>;

std::int64_t roundUp(std::int64_t n, std::int64_t to) { return (n + to - 1) / to * to; }

// Asks for `count` rows of A elements, `stride` apart, to be brought to the cache.
template <class Element>
[[gnu::always_inline]] inline void prefetchRows(const Element* p, std::int64_t stride, std::int64_t count,
                                                std::int64_t A)
{
    for (std::int64_t i = 0; i < count; ++i)
        for (std::int64_t a = 0; a < A; a += 64 / sizeof(Element))
            __builtin_prefetch(p + i * stride + a);
}

// The kernel over vectors of kLanes floats (GCC's vector extension, so that one
// body builds for each instruction set): 16 fill one AVX-512 register, and 8
// one AVX2 register, as 16 would take two and a block's scores and sums would
// then outgrow AVX2's 16 registers; the baseline 4, one SSE register (15-20
// GFLOP/s on one thread where 16 lanes ran at 9-12).
template <std::int64_t kLanes, class Element>
struct Kernel {
    using Floats = vector::Floats<kLanes>;
    using Operands = widelab::Operands<Element>;

    static constexpr std::int64_t kRows = kLanes;  // query rows per tile, one in each lane of a vector
    static constexpr std::int64_t kKeys = kLanes;  // keys per block: a block's scores are kKeys vectors, in registers
    static_assert(kKeys == kRows);                 // a block's bias, rows by keys, is transposed as a square

    [[gnu::always_inline]] static Floats load(const float* p) { return vector::loadFloats<kLanes>(p); }
    [[gnu::always_inline]] static void store(float* p, Floats v) { vector::storeFloats<kLanes>(p, v); }
    // kLanes of the operands' elements, as floats, and back.
    [[gnu::always_inline]] static Floats loadElements(const Element* p) { return vector::loadElements<kLanes>(p); }
    [[gnu::always_inline]] static void storeElements(Element* p, Floats v) { vector::storeElements<kLanes>(p, v); }

    [[gnu::always_inline]] static void transpose(Floats (&m)[kLanes]) { vector::transpose<kLanes>(m); }

    // e^x for x <= kHeadroom (runtime/VectorMath.h).
    [[gnu::always_inline]] static Floats expBounded(Floats x) { return vector::expBounded<kLanes>(x); }

    // Copies rows [j0, j0 + kKeys) of A floats, `stride` apart (of which those
    // from T on do not exist), into a block [A' / kLanes, kKeys, kLanes]: the
    // rows cut into pieces of kLanes floats, zeros beyond T and A. Every element
    // of the block then lies at a fixed offset from the start of its piece of
    // kLanes dimensions.
    [[gnu::always_inline]] static void packBlock(const Element* rows, std::int64_t stride, std::int64_t j0,
                                                 std::int64_t T, std::int64_t A, float* block)
    {
        const std::int64_t paddedA = roundUp(A, kLanes);
        for (std::int64_t j = 0; j < kKeys; ++j) {
            float* to = block + j * kLanes;
            if (j0 + j >= T) {
                for (std::int64_t c = 0; c < paddedA; c += kLanes)
                    store(to + c * kKeys, Floats{});
                continue;
            }
            const Element* from = rows + (j0 + j) * stride;
            std::int64_t c = 0;
            for (; c + kLanes <= A; c += kLanes)
                store(to + c * kKeys, loadElements(from + c));
            if (c < A) {
                float piece[kLanes] = {};
                for (std::int64_t a = c; a < A; ++a)
                    piece[a - c] = vector::widen(from[a]);
                store(to + c * kKeys, load(piece));
            }
        }
    }

    // One task: query rows [row0, row1) of head g in batch entry b, in tiles of
    // kRows rows with a row in each lane, so that a block's softmax is all
    // lane-wise (maxima, exps and sums of whole vectors, nothing across lanes).
    // Scores: a tile's queries transposed ([A', kRows]) times each key's element
    // broadcast from memory; the context likewise kept transposed and added each
    // weight vector times a value's element. Keys and values are copied into
    // blocks (packBlock) as the first tile reaches them, so that the broadcasts
    // take fixed offsets from one pointer. Head dimensions are padded with zeros
    // to A', a whole number of vectors. Inlined into one function per instruction
    // set (below), with the helpers above.
    [[gnu::always_inline]] static void attendRows(const Operands& op, std::int64_t b, std::int64_t g, std::int64_t row0,
                                                  std::int64_t row1, std::vector<float>& scratch)
    {
        constexpr float inf = std::numeric_limits<float>::infinity();
        const std::int64_t A = op.A, paddedA = roundUp(A, kLanes), Tk = op.Tk, paddedTk = roundUp(Tk, kKeys);
        // Every piece a whole number of vectors, so that all stay aligned to a vector.
        scratch.resize(kLanes + 2 * paddedA * kRows + 2 * kKeys * kRows + paddedTk + 2 * paddedTk * paddedA);
        const std::uintptr_t start = (reinterpret_cast<std::uintptr_t>(scratch.data()) + sizeof(Floats) - 1)
                                     & ~std::uintptr_t{sizeof(Floats) - 1};
        float* queriesT = reinterpret_cast<float*>(start);
        float* contextT = queriesT + paddedA * kRows;  // [A', kRows]: the running weighted sums of values
        float* biasT = contextT + paddedA * kRows;     // [kKeys, kRows]: a short block's bias, where it differs by row
        float* weightsT = biasT + kKeys * kRows;       // [kKeys, kRows]: a block's weights
        float* keyBias = weightsT + kKeys * kRows;     // [Tk']: the bias where it is the same for every row; -inf beyond Tk
        float* keyBlocks = keyBias + paddedTk;         // [Tk' / kKeys] blocks from packBlock
        float* valueBlocks = keyBlocks + paddedTk * paddedA;

        const Element* k = op.k + b * op.kStride[0] + g * op.kStride[1];
        const Element* v = op.v + b * op.vStride[0] + g * op.vStride[1];
        const float* bias = op.bias ? op.bias + b * op.biasBatchStride : nullptr;
        const bool rowBias = bias && op.biasQueryStride != 0;
        for (std::int64_t j = 0; j < paddedTk; ++j)
            keyBias[j] = j >= Tk ? -inf : bias && !rowBias ? bias[j] : 0.0f;

        // The next task (as at::parallel_for hands them out): its queries' first
        // tile, and if it is another head, its keys and values, a few rows per
        // block over this whole task, are asked for ahead (their first reads
        // otherwise wait on memory).
        std::int64_t nextB = b, nextG = g, nextRow = row1;
        if (nextRow >= op.Tq) {
            nextRow = 0;
            nextG = (g + 1) % op.G;
            nextB = nextG == 0 ? b + 1 : b;
        }
        const bool nextHead = nextRow == 0 && nextB < op.B;
        const Element* nextK = nextHead ? op.k + nextB * op.kStride[0] + nextG * op.kStride[1] : nullptr;
        const Element* nextV = nextHead ? op.v + nextB * op.vStride[0] + nextG * op.vStride[1] : nullptr;
        const std::int64_t steps = (row1 - row0 + kRows - 1) / kRows * (paddedTk / kKeys);
        std::int64_t step = 0;

        for (std::int64_t i0 = row0; i0 < row1; i0 += kRows) {
            const std::int64_t rows = std::min(kRows, row1 - i0);
            const Element* queries[kRows];
            const float* biasRows[kRows];
            for (std::int64_t r = 0; r < kRows; ++r) {
                const std::int64_t i = i0 + std::min(r, rows - 1);  // missing rows repeat the last, unwritten
                queries[r] = op.q + b * op.qStride[0] + g * op.qStride[1] + i * op.qStride[2];
                biasRows[r] = rowBias ? bias + i * op.biasQueryStride : nullptr;
            }
            std::int64_t a0 = 0;
            for (; a0 + kLanes <= A; a0 += kLanes) {
                Floats m[kLanes];
                for (std::int64_t r = 0; r < kRows; ++r)
                    m[r] = loadElements(queries[r] + a0);
                transpose(m);
                for (std::int64_t a = 0; a < kLanes; ++a)
                    store(queriesT + (a0 + a) * kRows, m[a] * op.scale);
            }
            for (; a0 < paddedA; ++a0)
                for (std::int64_t r = 0; r < kRows; ++r)
                    queriesT[a0 * kRows + r] = a0 < A ? vector::widen(queries[r][a0]) * op.scale : 0.0f;
            // The next tile's queries are asked for while this one runs (their loads
            // waited on memory); after the last, the next task's first tile.
            if (i0 + kRows < row1)
                prefetchRows(queries[0] + kRows * op.qStride[2], op.qStride[2], std::min(kRows, row1 - i0 - kRows), A);
            else if (nextB < op.B)
                prefetchRows(op.q + nextB * op.qStride[0] + nextG * op.qStride[1] + nextRow * op.qStride[2], op.qStride[2],
                             std::min(kRows, op.Tq - nextRow), A);
            std::fill_n(contextT, paddedA * kRows, 0.0f);
            // The lowest float, not -inf: a block of -inf scores then leaves a row's sums at zero, not NaN.
            Floats maximum = Floats{} + std::numeric_limits<float>::lowest();
            Floats sum = {};

            for (std::int64_t j0 = 0; j0 < Tk; j0 += kKeys) {
                const float* keys = keyBlocks + j0 * paddedA;
                const float* values = valueBlocks + j0 * paddedA;
                if (nextHead) {
                    const std::int64_t from = step * Tk / steps, to = (step + 1) * Tk / steps;
                    prefetchRows(nextK + from * op.kStride[2], op.kStride[2], to - from, A);
                    prefetchRows(nextV + from * op.vStride[2], op.vStride[2], to - from, A);
                }
                ++step;
                if (i0 == row0) {  // the first tile packs each block as it comes to it
                    packBlock(k, op.kStride[2], j0, Tk, A, keyBlocks + j0 * paddedA);
                    packBlock(v, op.vStride[2], j0, Tk, A, valueBlocks + j0 * paddedA);
                }

                // Scores start from the bias (-inf beyond Tk), then take one vector FMA per key and dimension.
                Floats s[kKeys];
                if (rowBias && j0 + kKeys <= Tk) {
                    for (std::int64_t r = 0; r < kRows; ++r)
                        s[r] = load(biasRows[r] + j0);
                    transpose(s);
                } else if (rowBias) {
                    for (std::int64_t j = 0; j < kKeys; ++j)
                        for (std::int64_t r = 0; r < kRows; ++r)
                            biasT[j * kRows + r] = j0 + j < Tk ? biasRows[r][j0 + j] : -inf;
                    for (std::int64_t j = 0; j < kKeys; ++j)
                        s[j] = load(biasT + j * kRows);
                } else {
#pragma GCC unroll 16
                    for (std::int64_t j = 0; j < kKeys; ++j)
                        s[j] = Floats{} + keyBias[j0 + j];
                }
                for (std::int64_t c = 0; c < paddedA; c += kLanes) {
                    const float* piece = keys + c * kKeys;  // [kKeys, kLanes]
                    for (std::int64_t d = 0; d < kLanes; ++d) {
                        const Floats query = load(queriesT + (c + d) * kRows);
#pragma GCC unroll 16
                        for (std::int64_t j = 0; j < kKeys; ++j)
                            s[j] += query * piece[j * kLanes + d];
                    }
                }

                // Each row's largest score in the block, lane-wise; the running maximum
                // (and with it the sums) changes only past kHeadroom.
                Floats top[kKeys / 2];
#pragma GCC unroll 16
                for (std::int64_t j = 0; j < kKeys / 2; ++j)
                    top[j] = vector::larger(s[j], s[j + kKeys / 2]);
                for (std::int64_t n = kKeys / 4; n > 0; n /= 2)
#pragma GCC unroll 16
                    for (std::int64_t j = 0; j < n; ++j)
                        top[j] = vector::larger(top[j], top[j + n]);
                if (vector::largestLane(top[0] - maximum) > kHeadroom) {
                    const Floats updated = vector::larger(maximum, top[0]);
                    const Floats rescale = expBounded(maximum - updated);
                    sum *= rescale;
                    for (std::int64_t a = 0; a < paddedA; ++a)
                        store(contextT + a * kRows, load(contextT + a * kRows) * rescale);
                    maximum = updated;
                }
                // The block's weights replace its scores.
#pragma GCC unroll 16
                for (std::int64_t j = 0; j < kKeys; ++j)
                    s[j] = expBounded(s[j] - maximum);
                Floats weights[kKeys / 2];
#pragma GCC unroll 16
                for (std::int64_t j = 0; j < kKeys / 2; ++j)
                    weights[j] = s[j] + s[j + kKeys / 2];
                for (std::int64_t n = kKeys / 4; n > 0; n /= 2)
#pragma GCC unroll 16
                    for (std::int64_t j = 0; j < n; ++j)
                        weights[j] += weights[j + n];
                sum += weights[0];

                // contextT += weights x values, a piece of kLanes dimensions at a time:
                // kLanes independent chains of FMAs, each weight vector loaded once per
                // key from weightsT and a value's element broadcast from memory (the
                // sums and a weight take 17 of AVX-512's 32 registers, 9 of AVX2's 16).
                // The weights held in registers instead left only kLanes / 2 registers
                // for sums, and chains that short kept the FMAs waiting on each other.
#pragma GCC unroll 16
                for (std::int64_t j = 0; j < kKeys; ++j)
                    store(weightsT + j * kRows, s[j]);
                for (std::int64_t a = 0; a < paddedA; a += kLanes) {
                    const float* piece = values + a * kKeys;  // [kKeys, kLanes]
                    Floats c[kLanes];
#pragma GCC unroll 16
                    for (std::int64_t d = 0; d < kLanes; ++d)
                        c[d] = load(contextT + (a + d) * kRows);
                    for (std::int64_t j = 0; j < kKeys; ++j) {
                        const Floats weight = load(weightsT + j * kRows);
#pragma GCC unroll 16
                        for (std::int64_t d = 0; d < kLanes; ++d)
                            c[d] += weight * piece[j * kLanes + d];
                    }
#pragma GCC unroll 16
                    for (std::int64_t d = 0; d < kLanes; ++d)
                        store(contextT + (a + d) * kRows, c[d]);
                }
            }
            // The context, divided by the sums, transposed back to a row per query.
            const Floats inverse = 1.0f / sum;
            Element* out[kRows];
            for (std::int64_t r = 0; r < rows; ++r)
                out[r] = op.out + (((b * op.Tq) + i0 + r) * op.G + g) * A;
            for (a0 = 0; a0 < paddedA; a0 += kLanes) {
                Floats m[kLanes];
                for (std::int64_t a = 0; a < kLanes; ++a)
                    m[a] = load(contextT + (a0 + a) * kRows) * inverse;
                transpose(m);
                if (a0 + kLanes <= A)
                    for (std::int64_t r = 0; r < rows; ++r)
                        storeElements(out[r] + a0, m[r]);
                else
                    for (std::int64_t r = 0; r < rows; ++r) {
                        Element piece[kLanes];
                        storeElements(piece, m[r]);
                        std::memcpy(out[r] + a0, piece, (A - a0) * sizeof(Element));
                    }
            }
        }
    }
};

template <class Element>
using AttendRows = void (*)(const Operands<Element>&, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           std::vector<float>&);

#if WIDELAB_HAS_TARGET
template <class Element>
WIDELAB_TARGET("avx512f")
void attendRowsAvx512(const Operands<Element>& op, std::int64_t b, std::int64_t g, std::int64_t row0,
                      std::int64_t row1, std::vector<float>& scratch)
{
    Kernel<16, Element>::attendRows(op, b, g, row0, row1, scratch);
}

// FMA is a flag of its own, which target("avx2") leaves off: without it each
// product and sum would be two instructions (cpuRuns checks for both).
template <class Element>
WIDELAB_TARGET("avx2,fma")
void attendRowsAvx2(const Operands<Element>& op, std::int64_t b, std::int64_t g, std::int64_t row0,
                    std::int64_t row1, std::vector<float>& scratch)
{
    Kernel<8, Element>::attendRows(op, b, g, row0, row1, scratch);
}
#endif

template <class Element>
void attendRowsBaseline(const Operands<Element>& op, std::int64_t b, std::int64_t g, std::int64_t row0,
                        std::int64_t row1, std::vector<float>& scratch)
{
    Kernel<4, Element>::attendRows(op, b, g, row0, row1, scratch);
}

template <class Element>
AttendRows<Element> attendRowsFor(InstructionSet set)
{
    if (!cpuRuns(set))
        throw std::invalid_argument(std::string("blockedAttention: this CPU lacks ") + instructionSetName(set));
    switch (set) {
#if WIDELAB_HAS_TARGET
    case InstructionSet::Avx512: return attendRowsAvx512<Element>;
    case InstructionSet::Avx2: return attendRowsAvx2<Element>;
#endif
    default: return attendRowsBaseline<Element>;
    }
}

// The kernel over q, k and v of one element type (the output's too).
template <class Element>
torch::Tensor attendAll(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& bias, double scale, InstructionSet set)
{
    const AttendRows<Element> attend = attendRowsFor<Element>(set);
    const std::int64_t B = q.size(0), G = q.size(1), Tq = q.size(2), A = q.size(3);
    torch::Tensor out = torch::empty({B, Tq, G, A}, q.options());

    const Operands<Element> op = kernelOperands<Element>(q, k, v, bias, out, scale);

    // Each head's rows in as few pieces as keep every thread kTasksPerThread
    // tasks, each piece whole tiles of the widest build's rows (AVX-512's).
    const std::int64_t heads = B * G, tasksWanted = kTasksPerThread * at::get_num_threads();
    const std::int64_t pieces = std::max<std::int64_t>(1, (tasksWanted + heads - 1) / heads);
    const std::int64_t rowsPerTask = roundUp((Tq + pieces - 1) / pieces, Kernel<16, Element>::kRows);
    const std::int64_t chunks = (Tq + rowsPerTask - 1) / rowsPerTask;
    at::parallel_for(0, heads * chunks, 1, [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> scratch;
        for (std::int64_t task = begin; task < end; ++task) {
            const std::int64_t b = task / (G * chunks), g = task / chunks % G, chunk = task % chunks;
            const std::int64_t row0 = chunk * rowsPerTask;
            attend(op, b, g, row0, std::min(Tq, row0 + rowsPerTask), scratch);
        }
    });
    return out.permute({0, 2, 1, 3});
}

}  // namespace

bool blockedAttentionApplies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& bias)
{
    const torch::ScalarType type = q.scalar_type();
    if (type != torch::kFloat && type != torch::kBFloat16)
        return false;
    for (const torch::Tensor* t : {&q, &k, &v})
        if (!t->is_cpu() || t->scalar_type() != type || t->dim() != 4
            || (torch::GradMode::is_enabled() && t->requires_grad()))
            return false;
    const std::int64_t B = q.size(0), Tq = q.size(2), Tk = k.size(2);
    if (Tq < kMinimumQueries || Tk < 1 || k.sizes() != v.sizes() || k.size(0) != B || k.size(1) != q.size(1)
        || k.size(3) != q.size(3))
        return false;
    return kernelTakesBias(bias, B, Tq, Tk);
}

torch::Tensor blockedAttention(const torch::Tensor& q_, const torch::Tensor& k_, const torch::Tensor& v_,
                               const torch::Tensor& bias_, double scale, InstructionSet set)
{
    const torch::Tensor q = lastDimContiguous(q_), k = lastDimContiguous(k_), v = lastDimContiguous(v_);
    const torch::Tensor bias =
        bias_.defined() ? lastDimContiguous(bias_.expand({q.size(0), 1, q.size(2), k.size(2)})) : bias_;
    return q.scalar_type() == torch::kBFloat16 ? attendAll<c10::BFloat16>(q, k, v, bias, scale, set)
                                                : attendAll<float>(q, k, v, bias, scale, set);
}

}  // namespace widelab
