// defines: FastPath, fastPathEnabled, disabledFastPaths: LibTorch 2.x's faster
// kernels that WideLab uses when the linked version has them, each of which
// WIDELAB_DISABLE can turn off to measure what it brings
#pragma once

#include <string>

namespace widelab {

enum class FastPath {
    FusedAttention,  // scaled_dot_product_attention when no attention maps are asked for, on the CPU
                     // only without dropout (model/attention/Full.cpp)
    FusedAdamW,      // the multi-tensor AdamW kernel (train/FusedAdamW.cpp)
};

// On unless the environment variable WIDELAB_DISABLE lists the path's name
// ("fused_attention", "fused_adamw"; comma-separated), read once per process.
// A path the linked LibTorch lacks is off whatever this says.
bool fastPathEnabled(FastPath path);

// The names WIDELAB_DISABLE turned off, comma-separated ("" when none), for the
// runtime summary.
std::string disabledFastPaths();

}  // namespace widelab
