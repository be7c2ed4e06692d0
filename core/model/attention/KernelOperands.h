// defines: KernelOperands, kernelOperands, kernelTakesBias, lastDimContiguous:
// what WideLab's own CPU attention kernels (BlockedAttention, AmxAttention)
// read: q, k and v as [B, G, T, A] views with a contiguous last dimension, an
// additive fp32 bias broadcast over heads, and an output laid out as
// [B, T, G, A]
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace widelab {

// q, k, v and the output hold `Element`s (fp32 or bf16); the bias is fp32.
template <class Element>
struct KernelOperands {
    const Element *q, *k, *v;
    const float* bias;  // null when there is none
    Element* out;       // [B, Tq, G, A], contiguous
    std::int64_t qStride[3], kStride[3], vStride[3];  // over batch, head and position; A is contiguous
    std::int64_t biasBatchStride, biasQueryStride;    // 0 where the bias broadcasts; keys are contiguous
    std::int64_t B, G, Tq, Tk, A;
    float scale;
};

// t itself where its last dimension is contiguous, else a contiguous copy.
inline torch::Tensor lastDimContiguous(const torch::Tensor& t) { return t.stride(-1) == 1 ? t : t.contiguous(); }

// Whether a kernel takes `bias` for B batch entries, Tq queries and Tk keys:
// none, or fp32 on the CPU broadcastable to [B, 1, Tq, Tk].
inline bool kernelTakesBias(const torch::Tensor& bias, std::int64_t B, std::int64_t Tq, std::int64_t Tk)
{
    return !bias.defined()
           || (bias.is_cpu() && bias.scalar_type() == torch::kFloat && bias.dim() == 4 && bias.size(1) == 1
               && (bias.size(0) == 1 || bias.size(0) == B) && (bias.size(2) == 1 || bias.size(2) == Tq)
               && bias.size(3) == Tk);
}

// The operands of q, k, v ([B, G, T, A], last dimensions contiguous), bias
// (expanded to [B, 1, Tq, Tk], keys contiguous, or undefined) and out
// ([B, Tq, G, A], contiguous).
template <class Element>
KernelOperands<Element> kernelOperands(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                       const torch::Tensor& bias, torch::Tensor& out, double scale)
{
    KernelOperands<Element> op{};
    op.q = q.data_ptr<Element>();
    op.k = k.data_ptr<Element>();
    op.v = v.data_ptr<Element>();
    op.bias = bias.defined() ? bias.data_ptr<float>() : nullptr;
    op.out = out.data_ptr<Element>();
    for (int d = 0; d < 3; ++d) {
        op.qStride[d] = q.stride(d);
        op.kStride[d] = k.stride(d);
        op.vStride[d] = v.stride(d);
    }
    op.biasBatchStride = bias.defined() ? bias.stride(0) : 0;
    op.biasQueryStride = bias.defined() ? bias.stride(2) : 0;
    op.B = q.size(0);
    op.G = q.size(1);
    op.Tq = q.size(2);
    op.Tk = k.size(2);
    op.A = q.size(3);
    op.scale = static_cast<float>(scale);
    return op;
}

}  // namespace widelab
