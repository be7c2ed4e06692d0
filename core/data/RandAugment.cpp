#include "RandAugment.h"

#include "ListOps.h"  // DataRandom

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace widelab {
namespace {

std::uint8_t toByte(double value) { return static_cast<std::uint8_t>(std::lround(std::clamp(value, 0.0, 255.0))); }

std::size_t at(const Image& image, std::int64_t x, std::int64_t y, std::int64_t c)
{
    return static_cast<std::size_t>((y * image.width + x) * image.channels + c);
}

// Each output pixel from its nearest source pixel; `source` maps the output's pixel centre, relative to the
// picture's centre (x right, y down), to the source's. Outside the picture: black.
template <class Map>
Image remap(const Image& image, Map source)
{
    const std::int64_t W = image.width, H = image.height, C = image.channels;
    const double cx = static_cast<double>(W) / 2.0, cy = static_cast<double>(H) / 2.0;
    Image out = image;
    for (std::int64_t y = 0; y < H; ++y) {
        for (std::int64_t x = 0; x < W; ++x) {
            const auto [sx, sy] = source(static_cast<double>(x) + 0.5 - cx, static_cast<double>(y) + 0.5 - cy);
            const auto ix = static_cast<std::int64_t>(std::floor(sx + cx));
            const auto iy = static_cast<std::int64_t>(std::floor(sy + cy));
            const bool inside = ix >= 0 && ix < W && iy >= 0 && iy < H;
            for (std::int64_t c = 0; c < C; ++c)
                out.pixels[at(out, x, y, c)] = inside ? image.pixels[at(image, ix, iy, c)] : std::uint8_t{0};
        }
    }
    return out;
}

// The picture + factor x (picture - other), pixel by pixel, as PIL's enhancers blend.
Image blend(const Image& image, const std::vector<double>& other, double factor)
{
    Image out = image;
    for (std::size_t i = 0; i < out.pixels.size(); ++i)
        out.pixels[i] = toByte(other[i] + factor * (static_cast<double>(image.pixels[i]) - other[i]));
    return out;
}

// Each pixel's grey value (ITU-R 601 weights, PIL's "L"), repeated over the channels.
std::vector<double> greyOf(const Image& image)
{
    std::vector<double> grey(image.pixels.size());
    for (std::size_t p = 0; p < grey.size(); p += static_cast<std::size_t>(image.channels)) {
        const double value = image.channels == 3
                                 ? 0.299 * image.pixels[p] + 0.587 * image.pixels[p + 1] + 0.114 * image.pixels[p + 2]
                                 : static_cast<double>(image.pixels[p]);
        std::fill_n(grey.begin() + static_cast<std::ptrdiff_t>(p), image.channels, value);
    }
    return grey;
}

// PIL's SMOOTH filter (3x3, centre 5, the rest 1, over 13) inside; the border as it is.
std::vector<double> smoothed(const Image& image)
{
    const std::int64_t W = image.width, H = image.height, C = image.channels;
    std::vector<double> out(image.pixels.begin(), image.pixels.end());
    for (std::int64_t y = 1; y + 1 < H; ++y)
        for (std::int64_t x = 1; x + 1 < W; ++x)
            for (std::int64_t c = 0; c < C; ++c) {
                double sum = 4.0 * image.pixels[at(image, x, y, c)];
                for (std::int64_t dy = -1; dy <= 1; ++dy)
                    for (std::int64_t dx = -1; dx <= 1; ++dx)
                        sum += image.pixels[at(image, x + dx, y + dy, c)];
                out[at(image, x, y, c)] = sum / 13.0;
            }
    return out;
}

// Every value of each channel through that channel's table.
template <class Table>
Image perChannel(const Image& image, Table table)
{
    Image out = image;
    for (std::int64_t c = 0; c < image.channels; ++c) {
        std::array<std::int64_t, 256> histogram{};
        for (std::size_t p = static_cast<std::size_t>(c); p < image.pixels.size(); p += static_cast<std::size_t>(image.channels))
            ++histogram[image.pixels[p]];
        const std::array<std::uint8_t, 256> lookup = table(histogram);
        for (std::size_t p = static_cast<std::size_t>(c); p < out.pixels.size(); p += static_cast<std::size_t>(image.channels))
            out.pixels[p] = lookup[image.pixels[p]];
    }
    return out;
}

std::array<std::uint8_t, 256> identityTable()
{
    std::array<std::uint8_t, 256> table{};
    for (int v = 0; v < 256; ++v)
        table[static_cast<std::size_t>(v)] = static_cast<std::uint8_t>(v);
    return table;
}

std::array<std::uint8_t, 256> autoContrastTable(const std::array<std::int64_t, 256>& histogram)
{
    int lo = 0, hi = 255;
    while (lo < 255 && histogram[static_cast<std::size_t>(lo)] == 0)
        ++lo;
    while (hi > 0 && histogram[static_cast<std::size_t>(hi)] == 0)
        --hi;
    std::array<std::uint8_t, 256> table = identityTable();
    if (hi > lo)
        for (int v = 0; v < 256; ++v)
            table[static_cast<std::size_t>(v)] = toByte((v - lo) * 255.0 / (hi - lo));
    return table;
}

// torchvision's equalize: the step is the count of all but the highest value present, over 255 (rounded down);
// value v becomes (the count below v + step / 2) / step, rounded down; a step of 0 changes nothing.
std::array<std::uint8_t, 256> equalizeTable(const std::array<std::int64_t, 256>& histogram)
{
    std::int64_t total = 0, highest = 0;
    for (const std::int64_t count : histogram) {
        total += count;
        if (count > 0)
            highest = count;
    }
    const std::int64_t step = (total - highest) / 255;
    std::array<std::uint8_t, 256> table = identityTable();
    if (step == 0)
        return table;
    std::int64_t below = step / 2;
    for (std::size_t v = 0; v < 256; ++v) {
        table[v] = static_cast<std::uint8_t>(std::min<std::int64_t>(below / step, 255));
        below += histogram[v];
    }
    return table;
}

}  // namespace

const std::vector<AugmentOpInfo>& augmentOps()
{
    static const std::vector<AugmentOpInfo> ops = {
        {AugmentOp::Identity, "identity", 0.0, false},
        {AugmentOp::ShearX, "shear_x", 0.3, true},
        {AugmentOp::ShearY, "shear_y", 0.3, true},
        {AugmentOp::TranslateX, "translate_x", 150.0 / 331.0, true},
        {AugmentOp::TranslateY, "translate_y", 150.0 / 331.0, true},
        {AugmentOp::Rotate, "rotate", 30.0, true},
        {AugmentOp::Brightness, "brightness", 0.9, true},
        {AugmentOp::Color, "color", 0.9, true},
        {AugmentOp::Contrast, "contrast", 0.9, true},
        {AugmentOp::Sharpness, "sharpness", 0.9, true},
        {AugmentOp::Posterize, "posterize", 4.0, false},
        {AugmentOp::Solarize, "solarize", 255.0, false},
        {AugmentOp::AutoContrast, "autocontrast", 0.0, false},
        {AugmentOp::Equalize, "equalize", 0.0, false},
    };
    return ops;
}

const AugmentOpInfo& augmentOpInfo(AugmentOp op) { return augmentOps().at(static_cast<std::size_t>(op)); }

double augmentOpAmount(AugmentOp op, int magnitude, std::int64_t side, bool negated)
{
    if (magnitude < 0 || magnitude > kMaxRandAugmentMagnitude)
        throw std::invalid_argument("RandAugment: magnitude " + std::to_string(magnitude) + " is not in 0.."
                                    + std::to_string(kMaxRandAugmentMagnitude));
    const AugmentOpInfo& info = augmentOpInfo(op);
    double strength = info.strongest * magnitude / kMaxRandAugmentMagnitude;
    if (negated && info.signedAmount)
        strength = -strength;
    switch (op) {
    case AugmentOp::TranslateX:
    case AugmentOp::TranslateY: return strength * static_cast<double>(side);
    case AugmentOp::Brightness:
    case AugmentOp::Color:
    case AugmentOp::Contrast:
    case AugmentOp::Sharpness: return 1.0 + strength;
    case AugmentOp::Posterize: return 8.0 - std::round(strength);
    case AugmentOp::Solarize: return 255.0 - strength;
    default: return strength;
    }
}

Image applyAugmentOp(const Image& image, AugmentOp op, double amount)
{
    using Point = std::pair<double, double>;
    switch (op) {
    case AugmentOp::Identity: return image;
    case AugmentOp::ShearX: return remap(image, [&](double x, double y) { return Point{x - amount * y, y}; });
    case AugmentOp::ShearY: return remap(image, [&](double x, double y) { return Point{x, y - amount * x}; });
    case AugmentOp::TranslateX: return remap(image, [&](double x, double y) { return Point{x - amount, y}; });
    case AugmentOp::TranslateY: return remap(image, [&](double x, double y) { return Point{x, y - amount}; });
    case AugmentOp::Rotate: {
        // Anticlockwise on the screen (y down): the source is the output turned back.
        const double angle = amount * std::numbers::pi / 180.0;
        const double cosine = std::cos(angle), sine = std::sin(angle);
        return remap(image, [&](double x, double y) { return Point{x * cosine - y * sine, x * sine + y * cosine}; });
    }
    case AugmentOp::Brightness: return blend(image, std::vector<double>(image.pixels.size(), 0.0), amount);
    case AugmentOp::Color: return blend(image, greyOf(image), amount);
    case AugmentOp::Contrast: {
        const std::vector<double> grey = greyOf(image);
        double mean = 0.0;
        for (const double value : grey)
            mean += value;
        mean /= static_cast<double>(std::max<std::size_t>(grey.size(), 1));
        return blend(image, std::vector<double>(grey.size(), mean), amount);
    }
    case AugmentOp::Sharpness: return blend(image, smoothed(image), amount);
    case AugmentOp::Posterize: {
        const int bits = std::clamp(static_cast<int>(std::lround(amount)), 0, 8);
        const auto keep = static_cast<std::uint8_t>(0xFF << (8 - bits));
        Image out = image;
        for (std::uint8_t& value : out.pixels)
            value = static_cast<std::uint8_t>(value & keep);
        return out;
    }
    case AugmentOp::Solarize: {
        Image out = image;
        for (std::uint8_t& value : out.pixels)
            if (value >= amount)
                value = static_cast<std::uint8_t>(255 - value);
        return out;
    }
    case AugmentOp::AutoContrast: return perChannel(image, autoContrastTable);
    case AugmentOp::Equalize: return perChannel(image, equalizeTable);
    }
    throw std::invalid_argument("applyAugmentOp: unknown operation");
}

std::vector<AugmentStep> drawRandAugment(int ops, int magnitude, std::int64_t side, DataRandom& random)
{
    std::vector<AugmentStep> steps;
    for (int i = 0; i < ops; ++i) {
        const AugmentOpInfo& info = augmentOps()[random.below(augmentOps().size())];
        const bool negated = info.signedAmount && random.below(2) == 1;
        steps.push_back({info.op, augmentOpAmount(info.op, magnitude, side, negated)});
    }
    return steps;
}

Image randAugment(const Image& image, int ops, int magnitude, DataRandom& random)
{
    Image out = image;
    for (const AugmentStep& step : drawRandAugment(ops, magnitude, image.width, random))
        out = applyAugmentOp(out, step.op, step.amount);
    return out;
}

}  // namespace widelab
