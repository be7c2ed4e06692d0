// defines: FastPath, fastPathEnabled, disabledFastPaths: LibTorch 2.x's faster
// kernels that WideLab uses when the linked version has them, each of which
// WIDELAB_DISABLE can turn off to measure what it brings
#pragma once

#include <string>

namespace widelab {

enum class FastPath {
    FusedAttention,  // scaled_dot_product_attention when no attention maps are asked for, on the CPU
                     // only without dropout and where WideLab's own kernels do not run
                     // (model/attention/Full.cpp)
    FusedAdamW,      // the multi-tensor AdamW kernel (train/FusedAdamW.cpp)
    GradientOverlap, // distributed runs: gradient buckets sent while backward goes on, not after it
                     // (dist/GradientSync.cpp)
    GroupedExperts,  // a mixture's experts multiplying only their kept pairs, sorted by expert: an mm
                     // per expert on the CPU, grouped products on a GPU (model/GroupedExperts.cpp)
    BlockedAttention,  // WideLab's own CPU attention for inference, fp32 and bf16, before LibTorch's
                       // fused kernel (model/attention/BlockedAttention.cpp)
    AmxAttention,  // the same in bf16 on the CPU's AMX tiles, where the CPU has them
                   // (model/attention/AmxAttention.cpp)
    FusedRouting,  // a mixture's routing decisions (top-k, slots, counts) in one CUDA kernel of
                   // WideLab's own, on a GPU, where the build compiled it (model/FusedRouting.cpp),
                   // and the pairs' order for the grouped products in another (model/GroupPlan.cpp)
    BatchedProduct,  // WideLab's own batched products on the CPU, fp32: attention's per-head products
                     // with their gradients, the softmax taken in the scores' tiles
                     // (model/BatchedProduct.cpp, model/BatchedMatmul.cpp)
    FusedActivation,  // a feed-forward layer's first bias and activation in one pass over its product,
                      // on the CPU in fp32 and bf16, for inference (model/BiasActivation.cpp)
    NormToBf16,  // under the CPU's autocast, in inference, a LayerNorm that feeds bf16 products
                 // written in bf16 in the pass that computes it (model/InferenceNorm.cpp)
    ResidualNorm,  // in inference on the CPU in fp32, a block's LayerNorms by WideLab's own kernel,
                   // each adding the sublayer before it to the residual stream in the same pass
                   // (model/InferenceNorm.cpp, model/BlockStack.cpp)
    FusedExpertRows,  // a mixture's grouped dispatch and combine each one pass, forward and backward:
                      // CUDA kernels of WideLab's own on a GPU (model/ExpertRows.cpp)
    ClsRowOnly,  // a classifier read at its CLS token computes, in inference, only that token's row
                 // in its last block, whose keys and values still come from every token
                 // (model/BlockStack.cpp)
    OneDnnProducts,  // projections' and dense feed-forward layers' products in inference on the CPU in
                     // fp32 by oneDNN's matmul, bias and activation in its tiles, where the build found
                     // oneDNN (model/InferenceProduct.cpp)
};

// On unless the environment variable WIDELAB_DISABLE lists the path's name
// (FastPaths.cpp's table names each; comma-separated), read once per process.
// A path the linked LibTorch lacks is off whatever this says.
bool fastPathEnabled(FastPath path);

// Whether training or inference attention takes LibTorch 2.x's fused kernel
// (scaled_dot_product_attention) where no maps are asked for and, in inference
// on the CPU, WideLab's own kernels do not apply: with a 2.x LibTorch and the
// path on, on a GPU always, on the CPU only without dropout.
// There the CPU's flash kernel takes no dropout, and LibTorch's fallback with
// dropout (its math path) trained at 0.73-0.82x of the 1.13 build, where
// WideLab's own softmax ran at 1.06-1.26x (docs/performance.md). What
// model/attention/Full.cpp runs and what the memory estimate counts.
bool fusedAttentionRuns(bool onCpu, double dropout);

// The names WIDELAB_DISABLE turned off, comma-separated ("" when none), for the
// runtime summary.
std::string disabledFastPaths();

}  // namespace widelab
