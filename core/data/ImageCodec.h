// defines: Image (8-bit pixels, row-major HWC), decodeImageFile / decodeImage (PNG through libpng, JPEG through
// libjpeg), writePng / writeJpeg / encodePng, fitImage (centre crop to a square, then resize), withChannels (grey <-> RGB),
// and whether this build has PNG and JPEG support
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

// H = height, W = width, C = channels (1 grey, 3 RGB): pixels[(y * W + x) * C + c].
struct Image {
    std::int64_t width = 0, height = 0, channels = 0;
    std::vector<std::uint8_t> pixels;
};

// The largest image a file may declare (each side), so that a damaged header is an error, not an allocation.
inline constexpr std::int64_t kMaxDecodedSide = 1 << 14;

bool hasPngSupport();   // built with libpng
bool hasJpegSupport();  // built with libjpeg

// Decodes a PNG or JPEG file (told apart by their first bytes, not the extension) into grey or RGB 8-bit pixels:
// palettes and 16-bit samples are reduced, alpha is dropped, grey+alpha becomes grey, CMYK JPEGs are refused.
// Throws DataError naming the file: missing or unreadable, neither PNG nor JPEG, corrupt or truncated, too large,
// or "built without PNG support" / "built without JPEG support".
Image decodeImageFile(const std::filesystem::path& file);
// The same for bytes in memory; `name` is what messages call them.
Image decodeImage(const std::vector<std::uint8_t>& bytes, const std::string& name);

// Write an image (1 or 3 channels) as PNG or JPEG (quality 1..100); DataError naming the file on failure.
void writePng(const Image& image, const std::filesystem::path& file);
void writeJpeg(const Image& image, const std::filesystem::path& file, int quality = 95);
// The same PNG as bytes in memory; `name` is what the error calls it.
std::vector<std::uint8_t> encodePng(const Image& image, const std::string& name);

// The largest centred square of the image, resized to side x side (bilinear, averaging over the source pixels a
// target pixel covers when shrinking). An image already side x side is returned unchanged.
Image fitImage(const Image& image, std::int64_t side);
// Grey -> RGB repeats the grey value; RGB -> grey is the ITU-R BT.601 luma. channels is 1 or 3.
Image withChannels(const Image& image, std::int64_t channels);

}  // namespace widelab
