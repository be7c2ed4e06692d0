#include "BatchedProduct.h"

#include "runtime/VectorMath.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace widelab {
namespace {

using vector::Floats;

// Rows of a tile. With two vectors of columns that is 12 accumulators, 12
// independent chains of FMAs (enough to cover their latency), and with the two
// vectors of b and a broadcast, 15 registers: within AVX2's and SSE's 16.
constexpr std::int64_t kTileRows = 6;
// A batch of fewer products than this many per thread is split into tasks of
// kRowsPerTask rows (16 tiles), so that every thread has work; each task then
// copies b again. Otherwise a task is a whole product.
constexpr std::int64_t kProductsPerThread = 4;
constexpr std::int64_t kRowsPerTask = 96;

struct Operand {
    const float* data;
    std::int64_t batch[2];  // strides over the two leading dimensions (the first 0 when there is one)
    std::int64_t row, column;
};

struct Product {
    Operand a, b;  // [U0, U1, N, K] and [U0, U1, K, M]
    Operand bias;  // [U0, U1, N, M] (strides 0 where it broadcasts), columns contiguous; data null when none
    bool softmax;  // the rows of the product (with the bias added) go through softmax
    float* out;    // [U0, U1, N, M], contiguous
    std::int64_t U1, N, K, M;
};

// Copies b's columns [j0, j0 + 2L) into a panel [K, 2L] (zeros past M): the
// tile then reads its two vectors of each row k from one place.
template <int L>
[[gnu::always_inline]] inline void packPanel(const float* b, std::int64_t row, std::int64_t column, std::int64_t K,
                                             std::int64_t M, std::int64_t j0, float* panel)
{
    constexpr std::int64_t W = 2 * L;
    const std::int64_t columns = std::min(W, M - j0);
    if (column == 1 && columns == W) {  // two vectors a row (a memcpy of a run-time length is a call)
        for (std::int64_t k = 0; k < K; ++k) {
            vector::storeFloats<L>(panel + k * W, vector::loadFloats<L>(b + k * row + j0));
            vector::storeFloats<L>(panel + k * W + L, vector::loadFloats<L>(b + k * row + j0 + L));
        }
        return;
    }
    if (column == 1) {
        for (std::int64_t k = 0; k < K; ++k) {
            std::memcpy(panel + k * W, b + k * row + j0, columns * sizeof(float));
            std::fill(panel + k * W + columns, panel + (k + 1) * W, 0.0f);
        }
        return;
    }
    // A transposed b (k^T, v^T): each column is contiguous along K.
    for (std::int64_t j = 0; j < W; ++j) {
        const float* from = b + (j0 + j) * column;
        for (std::int64_t k = 0; k < K; ++k)
            panel[k * W + j] = j < columns ? from[k * row] : 0.0f;
    }
}

// softmax over each of `rows` rows of M floats, `bias` (if any, `biasRow`
// apart) added first, in place: the rows a tile has just written, still in L1.
template <int L>
[[gnu::always_inline]] inline void softmaxRows(float* x, std::int64_t rows, std::int64_t M, const float* bias,
                                               std::int64_t biasRow)
{
    using V = Floats<L>;
    const std::int64_t whole = M / L * L;
    for (std::int64_t r = 0; r < rows; ++r, x += M) {
        const float* add = bias ? bias + r * biasRow : nullptr;
        // The row's last part vector padded with the lowest float, whose exp is 0.
        float tail[L];
        std::fill_n(tail, L, std::numeric_limits<float>::lowest());
        for (std::int64_t c = whole; c < M; ++c)
            tail[c - whole] = x[c] + (add ? add[c] : 0.0f);
        V top = vector::loadFloats<L>(tail);
        for (std::int64_t c = 0; c < whole; c += L) {
            V v = vector::loadFloats<L>(x + c);
            if (add)
                v += vector::loadFloats<L>(add + c);
            vector::storeFloats<L>(x + c, v);
            top = vector::larger(top, v);
        }
        const float largest = vector::largestLane(top);
        const V e = vector::expBounded<L>(vector::loadFloats<L>(tail) - largest);
        vector::storeFloats<L>(tail, e);
        V sum = e;
        for (std::int64_t c = 0; c < whole; c += L) {
            const V v = vector::expBounded<L>(vector::loadFloats<L>(x + c) - largest);
            vector::storeFloats<L>(x + c, v);
            sum += v;
        }
        const float inverse = 1.0f / vector::sumOfLanes<L>(sum);
        for (std::int64_t c = 0; c < whole; c += L)
            vector::storeFloats<L>(x + c, vector::loadFloats<L>(x + c) * inverse);
        for (std::int64_t c = whole; c < M; ++c)
            x[c] = tail[c - whole] * inverse;
    }
}

// One task: rows [i0, i1) of product u. b is copied into panels of 2L columns
// first; then each tile of rows, for each panel, keeps its 6 x 2L sums in
// registers over the whole of K: every k adds the panel's two vectors times
// each row's element of a, broadcast from a as it lies (`offset` reaches a tile
// row's element from the tile's pointer, which moves by `step` per k: along a
// row of a row-major a, down a column of a transposed one). With a softmax,
// the tile's rows take it as soon as all their panels are written.
template <int L>
[[gnu::always_inline]] inline void multiplyRows(const Product& p, std::int64_t u, std::int64_t i0, std::int64_t i1,
                                                std::vector<float>& scratch)
{
    using V = Floats<L>;
    constexpr std::int64_t W = 2 * L;
    const std::int64_t K = p.K, M = p.M, panels = (M + W - 1) / W;
    scratch.resize(panels * K * W);
    float* packed = scratch.data();  // [panels, K, W]
    const std::int64_t u0 = u / p.U1, u1 = u % p.U1;
    const float* a = p.a.data + u0 * p.a.batch[0] + u1 * p.a.batch[1];
    const float* b = p.b.data + u0 * p.b.batch[0] + u1 * p.b.batch[1];
    const float* bias = p.bias.data ? p.bias.data + u0 * p.bias.batch[0] + u1 * p.bias.batch[1] : nullptr;
    float* out = p.out + u * p.N * M;
    const std::int64_t step = p.a.column;
    for (std::int64_t panel = 0; panel < panels; ++panel)
        packPanel<L>(b, p.b.row, p.b.column, K, M, panel * W, packed + panel * K * W);

    for (std::int64_t i = i0; i < i1; i += kTileRows) {
        const std::int64_t rows = std::min(kTileRows, i1 - i);
        std::int64_t offset[kTileRows];
        for (std::int64_t r = 0; r < kTileRows; ++r)
            offset[r] = std::min(r, rows - 1) * p.a.row;  // missing rows repeat the last, unwritten
        for (std::int64_t j0 = 0; j0 < M; j0 += W) {
            const std::int64_t columns = std::min(W, M - j0);
            // Set and stored one element at a time (fully unrolled): an array
            // cleared as a whole stays in memory, and clearing it took a tenth of the kernel.
            V sums[kTileRows][2];
#pragma GCC unroll 6
            for (std::int64_t r = 0; r < kTileRows; ++r)
                sums[r][0] = sums[r][1] = V{};
            const float* from = a + i * p.a.row;
            const float* next = packed + j0 * K;
            for (std::int64_t k = 0; k < K; ++k, from += step, next += W) {
                const V left = vector::loadFloats<L>(next), right = vector::loadFloats<L>(next + L);
#pragma GCC unroll 6
                for (std::int64_t r = 0; r < kTileRows; ++r) {
                    const float x = from[offset[r]];
                    sums[r][0] += left * x;
                    sums[r][1] += right * x;
                }
            }
#pragma GCC unroll 6
            for (std::int64_t r = 0; r < kTileRows; ++r) {
                if (r >= rows)
                    break;
                float* to = out + (i + r) * M + j0;
                if (columns == W) {
                    vector::storeFloats<L>(to, sums[r][0]);
                    vector::storeFloats<L>(to + L, sums[r][1]);
                } else {
                    float tail[W];
                    vector::storeFloats<L>(tail, sums[r][0]);
                    vector::storeFloats<L>(tail + L, sums[r][1]);
                    std::memcpy(to, tail, columns * sizeof(float));
                }
            }
        }
        if (p.softmax)
            softmaxRows<L>(out + i * M, rows, M, bias ? bias + i * p.bias.row : nullptr, p.bias.row);
    }
}

using MultiplyRows = void (*)(const Product&, std::int64_t, std::int64_t, std::int64_t, std::vector<float>&);

#if WIDELAB_HAS_TARGET
WIDELAB_TARGET("avx512f")
void multiplyRowsAvx512(const Product& p, std::int64_t u, std::int64_t i0, std::int64_t i1, std::vector<float>& scratch)
{
    multiplyRows<16>(p, u, i0, i1, scratch);
}

WIDELAB_TARGET("avx2,fma")
void multiplyRowsAvx2(const Product& p, std::int64_t u, std::int64_t i0, std::int64_t i1, std::vector<float>& scratch)
{
    multiplyRows<8>(p, u, i0, i1, scratch);
}
#endif

void multiplyRowsBaseline(const Product& p, std::int64_t u, std::int64_t i0, std::int64_t i1,
                          std::vector<float>& scratch)
{
    multiplyRows<4>(p, u, i0, i1, scratch);
}

MultiplyRows multiplyRowsFor(InstructionSet set)
{
    if (!cpuRuns(set))
        throw std::invalid_argument(std::string("batchedProduct: this CPU lacks ") + instructionSetName(set));
    switch (set) {
#if WIDELAB_HAS_TARGET
    case InstructionSet::Avx512: return multiplyRowsAvx512;
    case InstructionSet::Avx2: return multiplyRowsAvx2;
#endif
    default: return multiplyRowsBaseline;
    }
}

// How many products a batch [..., N, K] holds: its leading sizes multiplied.
std::int64_t productsIn(const torch::Tensor& a)
{
    std::int64_t products = 1;
    for (std::int64_t d = 0; d + 2 < a.dim(); ++d)
        products *= a.size(d);
    return products;
}

// An operand whose rows or columns are contiguous (the tile reads either), as
// it is where it can be: a copy otherwise.
torch::Tensor readable(const torch::Tensor& t)
{
    return t.stride(-1) == 1 || t.stride(-2) == 1 ? t : t.contiguous();
}

Operand operandOf(const torch::Tensor& t)
{
    Operand o{};
    o.data = t.data_ptr<float>();
    o.batch[0] = t.dim() == 4 ? t.stride(0) : 0;
    o.batch[1] = t.stride(t.dim() - 3);
    o.row = t.stride(-2);
    o.column = t.stride(-1);
    return o;
}

// a b (softmax(a b + bias) with `softmax`) for the public functions below.
torch::Tensor multiply(const torch::Tensor& a_, const torch::Tensor& b_, const torch::Tensor& bias_, bool softmax,
                       InstructionSet set)
{
    const MultiplyRows multiplyRows = multiplyRowsFor(set);
    const torch::Tensor a = readable(a_), b = readable(b_);
    std::vector<std::int64_t> shape(a.sizes().begin(), a.sizes().end());
    shape.back() = b.size(-1);
    torch::Tensor out = torch::empty(shape, a.options());
    torch::Tensor bias;
    if (bias_.defined()) {
        bias = bias_.expand(shape);
        if (bias.stride(-1) != 1)
            bias = bias.contiguous();
    }

    Product p{};
    p.a = operandOf(a);
    p.b = operandOf(b);
    if (bias.defined())
        p.bias = operandOf(bias);
    p.softmax = softmax;
    p.out = out.data_ptr<float>();
    p.N = a.size(-2);
    p.K = a.size(-1);
    p.M = b.size(-1);
    p.U1 = a.size(a.dim() - 3);
    const std::int64_t U = productsIn(a);

    const std::int64_t rowsPerTask = batchedProductTakesWholeProducts(a) ? p.N : kRowsPerTask;
    const std::int64_t chunks = (p.N + rowsPerTask - 1) / rowsPerTask;
    at::parallel_for(0, U * chunks, 1, [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> scratch;
        for (std::int64_t task = begin; task < end; ++task) {
            const std::int64_t u = task / chunks, i0 = task % chunks * rowsPerTask;
            multiplyRows(p, u, i0, std::min(p.N, i0 + rowsPerTask), scratch);
        }
    });
    return out;
}

}  // namespace

bool batchedProductApplies(const torch::Tensor& a, const torch::Tensor& b)
{
    if (!a.is_cpu() || !b.is_cpu() || a.scalar_type() != torch::kFloat || b.scalar_type() != torch::kFloat
        || (a.dim() != 3 && a.dim() != 4) || b.dim() != a.dim() || a.size(-1) != b.size(-2) || a.numel() == 0
        || b.numel() == 0)
        return false;
    for (std::int64_t d = 0; d < a.dim() - 2; ++d)
        if (a.size(d) != b.size(d))
            return false;
    return true;
}

bool batchedProductTakesWholeProducts(const torch::Tensor& a)
{
    return productsIn(a) >= kProductsPerThread * at::get_num_threads();
}

torch::Tensor batchedProduct(const torch::Tensor& a, const torch::Tensor& b, InstructionSet set)
{
    return multiply(a, b, torch::Tensor(), false, set);
}

bool batchedSoftmaxProductApplies(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias)
{
    if (!batchedProductApplies(a, b))
        return false;
    if (!bias.defined())
        return true;
    std::vector<std::int64_t> shape(a.sizes().begin(), a.sizes().end());
    shape.back() = b.size(-1);
    return bias.is_cpu() && bias.scalar_type() == torch::kFloat && bias.dim() <= a.dim()
           && at::is_expandable_to(bias.sizes(), shape);
}

torch::Tensor batchedSoftmaxProduct(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                                    InstructionSet set)
{
    return multiply(a, b, bias, true, set);
}

}  // namespace widelab
