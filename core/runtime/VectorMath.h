// defines: Floats, Ints, loadFloats, storeFloats, loadElements, storeElements, transpose, widen, larger, largestLane,
// sumOfLanes, expBounded: vectors of L floats (GCC's vector extension) for WideLab's own
// CPU kernels, one body built for each instruction set (TargetClones.h), and
// e^x on them
#pragma once

#include <c10/util/BFloat16.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

// The helpers here, and the kernels that include this header, take and
// return vectors by value; they are inlined into each kernel's builds and
// never cross a call, so the ABI change GCC warns of (a vector wider than the
// baseline's registers) is never used. The warning names this header's lines
// too, so it is silenced here, before them, for the includer as well.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace widelab::vector {

// GCC ignores vector_size on an alias template; on a member typedef it holds.
template <int L>
struct Lanes {
    typedef float Floats __attribute__((vector_size(L * sizeof(float))));
    typedef std::int32_t Ints __attribute__((vector_size(L * sizeof(std::int32_t))));
    typedef std::uint32_t Words __attribute__((vector_size(L * sizeof(std::uint32_t))));
    typedef std::uint16_t Halves __attribute__((vector_size(L * sizeof(std::uint16_t))));
};
template <int L>
using Floats = typename Lanes<L>::Floats;
template <int L>
using Ints = typename Lanes<L>::Ints;
static_assert(sizeof(Floats<16>) == 16 * sizeof(float));

template <int L>
[[gnu::always_inline]] inline Floats<L> loadFloats(const float* p)
{
    Floats<L> v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <int L>
[[gnu::always_inline]] inline void storeFloats(float* p, Floats<L> v)
{
    std::memcpy(p, &v, sizeof v);
}

// L elements as floats: fp32 as they are, bf16 widened (a bfloat16 is a
// float's upper half, so widening is exact).
template <int L>
[[gnu::always_inline]] inline Floats<L> loadElements(const float* p)
{
    return loadFloats<L>(p);
}

template <int L>
[[gnu::always_inline]] inline Floats<L> loadElements(const c10::BFloat16* p)
{
    typename Lanes<L>::Halves halves;
    std::memcpy(&halves, p, sizeof halves);
    const typename Lanes<L>::Words words = __builtin_convertvector(halves, typename Lanes<L>::Words) << 16;
    Floats<L> v;
    std::memcpy(&v, &words, sizeof v);
    return v;
}

// L floats stored as elements: fp32 as they are, bf16 rounded to the nearest,
// ties to even, as c10::BFloat16 rounds (a NaN stays a NaN: 0x7fc0).
template <int L>
[[gnu::always_inline]] inline void storeElements(float* p, Floats<L> v)
{
    storeFloats<L>(p, v);
}

template <int L>
[[gnu::always_inline]] inline void storeElements(c10::BFloat16* p, Floats<L> v)
{
    using Words = typename Lanes<L>::Words;
    Words words;
    std::memcpy(&words, &v, sizeof words);
    const Words rounded = (words + 0x7fffu + ((words >> 16) & 1u)) >> 16;
    const Words kept = v == v ? rounded : Words{} + 0x7fc0u;
    const typename Lanes<L>::Halves halves = __builtin_convertvector(kept, typename Lanes<L>::Halves);
    std::memcpy(p, &halves, sizeof halves);
}

// Transposes an L x L block held as L vectors of L floats (or of any 32-bit
// elements, as their bits). Each round interleaves rows i and i + L / 2, which
// moves an element's index (row, then column, 2 log2(L) bits) one bit to the
// left, rotating; after log2(L) rounds (four for 16 lanes, three for 8), row
// and column have swapped.
template <int L>
[[gnu::always_inline]] inline void transpose(Floats<L> (&m)[L])
{
    constexpr int half = L / 2;
    for (int round = 0; round < std::countr_zero(unsigned{L}); ++round) {
        Floats<L> t[L];
        // Lane e of the pair takes lane e / 2 of row i and of row i + half in
        // turn, from their low halves, then from their high ones.
        [&]<std::size_t... e>(std::index_sequence<e...>) {
            for (int i = 0; i < half; ++i) {
                t[2 * i] = __builtin_shufflevector(m[i], m[i + half], (e / 2 + e % 2 * L)...);
                t[2 * i + 1] = __builtin_shufflevector(m[i], m[i + half], (half + e / 2 + e % 2 * L)...);
            }
        }(std::make_index_sequence<L>{});
        for (int i = 0; i < L; ++i)
            m[i] = t[i];
    }
}

// One element as a float.
[[gnu::always_inline]] inline float widen(float x) { return x; }
[[gnu::always_inline]] inline float widen(c10::BFloat16 x) { return static_cast<float>(x); }

template <class Vector>
[[gnu::always_inline]] inline Vector larger(Vector a, Vector b)
{
    return a > b ? a : b;
}

// A vector's largest lane: the larger of its halves, lane-wise, until one lane
// is left (four steps for 16 lanes, three for 8).
template <class Vector>
[[gnu::always_inline]] inline float largestLane(Vector v)
{
    constexpr std::size_t n = sizeof(Vector) / sizeof(float);
    if constexpr (n == 1)
        return v[0];
    else
        return [&]<std::size_t... i>(std::index_sequence<i...>) {
            return largestLane(
                larger(__builtin_shufflevector(v, v, i...), __builtin_shufflevector(v, v, (n / 2 + i)...)));
        }(std::make_index_sequence<n / 2>{});
}

template <int L>
[[gnu::always_inline]] inline float sumOfLanes(Floats<L> v)
{
    float sum = 0.0f;
    for (int i = 0; i < L; ++i)
        sum += v[i];
    return sum;
}

// e^x for x <= 5, to within 2 ulp (1.7 measured); 0 below -86 (and for -inf),
// where it would leave float's normal range. x = n ln 2 + r with n the integer
// nearest x log2 e (adding 1.5 * 2^23 rounds the fraction off and leaves n in
// the low bits) and |r| <= ln 2 / 2, taken with ln 2 in two parts, the first
// with few enough bits that n times it is exact; e^r by a degree-5 minimax
// polynomial (relative error 7.5e-8), times 2^n by adding n to its exponent.
template <int L>
[[gnu::always_inline]] inline Floats<L> expBounded(Floats<L> x)
{
    const Ints<L> under = x < -86.0f;
    const Floats<L> shifted = x * 1.44269504088896341f + 12582912.0f;
    const Floats<L> n = shifted - 12582912.0f;
    const Floats<L> r = (x - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
    Floats<L> p = r * 8.2976550803634720e-3f + 4.1915381991695870e-2f;
    p = p * r + 1.6667574728755044e-1f;
    p = p * r + 4.9998894851221964e-1f;
    p = p * r + 9.9999969199151670e-1f;
    p = p * r + 1.0000000716546822f;
    // The bits of 1.5 * 2^23 above n shift out.
    const Ints<L> scaled = std::bit_cast<Ints<L>>(p) + (std::bit_cast<Ints<L>>(shifted) << 23);
    return std::bit_cast<Floats<L>>(under ? Ints<L>{} : scaled);
}

}  // namespace widelab::vector
