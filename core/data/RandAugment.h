// defines: AugmentOp, augmentOps, augmentOpAmount, applyAugmentOp, AugmentStep, drawRandAugment, randAugment:
// RandAugment (Cubuk et al. 2020), the third augmentation of WideNet's vision recipe, on 8-bit pictures
#pragma once

#include "ImageCodec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

class DataRandom;

// The fourteen operations RandAugment picks from, with torchvision's list and ranges.
enum class AugmentOp {
    Identity,
    ShearX,        // x' = x + amount * (y - centre); amount a shear factor
    ShearY,        // y' = y + amount * (x - centre)
    TranslateX,    // by amount pixels (right when positive)
    TranslateY,    // by amount pixels (down when positive)
    Rotate,        // by amount degrees, anticlockwise, about the centre
    Brightness,    // pixels x amount (a factor; 1: unchanged)
    Color,         // saturation: the grey picture + amount x (picture - grey)
    Contrast,      // the picture's mean grey + amount x (picture - mean)
    Sharpness,     // the smoothed picture + amount x (picture - smoothed); the border kept
    Posterize,     // keeps the amount high bits of each value
    Solarize,      // values at or above amount become 255 - value
    AutoContrast,  // each channel stretched from its [min, max] to [0, 255]
    Equalize,      // each channel's histogram equalised (as torchvision's)
};

// One row per operation, in AugmentOp's order: its name, its strength at the
// strongest magnitude, and whether RandAugment draws its sign.
struct AugmentOpInfo {
    AugmentOp op;
    const char* name;   // "shear_x", as the docs and tests name it
    double strongest;   // shear 0.3; translation 150/331 of the side; rotation 30 degrees; brightness, colour,
                        // contrast and sharpness 0.9 (a factor of 1 +- 0.9); posterize 4 bits off; solarize's
                        // threshold 255 lower; 0: no strength (identity, autocontrast, equalize)
    bool signedAmount;  // drawn with a random sign
};
const std::vector<AugmentOpInfo>& augmentOps();
const AugmentOpInfo& augmentOpInfo(AugmentOp op);

// The strongest magnitude: RandAugment's integer scale 0..30 (torchvision's 31
// bins), on which each operation's strength grows linearly from none to its
// `strongest` (posterize: 8 - round(magnitude / 7.5) bits kept).
inline constexpr int kMaxRandAugmentMagnitude = 30;

// The amount applyAugmentOp takes for `op` at `magnitude` (0..30) on a picture
// of `side` pixels, the strength taken the other way when `negated` (signed
// operations only): a shear factor, pixels, degrees, a factor 1 +- strength, the
// bits kept, solarize's threshold. std::invalid_argument for a magnitude outside
// 0..30.
double augmentOpAmount(AugmentOp op, int magnitude, std::int64_t side, bool negated = false);

// One operation with its amount (the meaning above). Geometric operations map
// each output pixel back to its nearest source pixel; what falls outside is
// black. Values are rounded and clamped to 0..255.
Image applyAugmentOp(const Image& image, AugmentOp op, double amount);

struct AugmentStep {
    AugmentOp op = AugmentOp::Identity;
    double amount = 0.0;
};

// RandAugment's draw: `ops` operations, each picked uniformly (repeats allowed),
// each signed operation negated with probability 1/2, at `magnitude`. Draws
// from `random` in order: per operation its index, then its sign when signed.
std::vector<AugmentStep> drawRandAugment(int ops, int magnitude, std::int64_t side, DataRandom& random);

// drawRandAugment's steps applied in order; ops 0 returns the picture.
Image randAugment(const Image& image, int ops, int magnitude, DataRandom& random);

}  // namespace widelab
