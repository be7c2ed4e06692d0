#include "ImageCodec.h"

#include "Tokenizer.h"  // DataError

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#ifdef WIDELAB_HAVE_PNG
#include <png.h>
#endif
#ifdef WIDELAB_HAVE_JPEG
#include <csetjmp>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <jerror.h>
#endif

namespace widelab {
namespace {

bool isPng(const std::vector<std::uint8_t>& b)
{
    static const std::uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    return b.size() >= 8 && std::equal(signature, signature + 8, b.begin());
}

bool isJpeg(const std::vector<std::uint8_t>& b) { return b.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff; }

void checkSides(std::int64_t width, std::int64_t height, const std::string& name)
{
    if (width < 1 || height < 1 || width > kMaxDecodedSide || height > kMaxDecodedSide)
        throw DataError(name + ": image of " + std::to_string(width) + "x" + std::to_string(height)
                        + " pixels; WideLab reads images of 1 to " + std::to_string(kMaxDecodedSide) + " pixels a side");
}

void checkWritable(const Image& image, const std::filesystem::path& file)
{
    if ((image.channels != 1 && image.channels != 3) || image.width < 1 || image.height < 1
        || static_cast<std::int64_t>(image.pixels.size()) != image.width * image.height * image.channels)
        throw DataError(file.string() + ": cannot write an image of " + std::to_string(image.width) + "x"
                        + std::to_string(image.height) + "x" + std::to_string(image.channels) + " with "
                        + std::to_string(image.pixels.size()) + " bytes");
}

#ifdef WIDELAB_HAVE_PNG
Image decodePng(const std::vector<std::uint8_t>& bytes, const std::string& name)
{
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
        throw DataError(name + ": corrupt PNG (" + png.message + ")");
    const bool colour = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
    Image image;
    image.width = png.width;
    image.height = png.height;
    image.channels = colour ? 3 : 1;
    try {
        checkSides(image.width, image.height, name);
    } catch (...) {
        png_image_free(&png);
        throw;
    }
    png.format = colour ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    // Zeros: an alpha channel is composited onto black.
    image.pixels.assign(static_cast<std::size_t>(image.width * image.height * image.channels), 0);
    if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr))
        throw DataError(name + ": corrupt PNG (" + png.message + ")");
    return image;
}
#endif

#ifdef WIDELAB_HAVE_JPEG
struct JpegError {
    jpeg_error_mgr manager;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

void jpegFail(j_common_ptr info)
{
    auto* error = reinterpret_cast<JpegError*>(info->err);
    (*info->err->format_message)(info, error->message);
    std::longjmp(error->jump, 1);
}

// Warnings (a few bytes of junk) do not stop decoding; the end of the data before
// the end of the image does: libjpeg would fill the rest with grey, and the run
// would train on a picture that is not the file's.
void jpegWarning(j_common_ptr info, int level)
{
    if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF)
        jpegFail(info);
}

// Decodes into `image`; returns an error text, empty on success. No C++ object with a destructor lives
// between setjmp and longjmp in this function.
std::string decodeJpegInto(const std::vector<std::uint8_t>& bytes, Image& image)
{
    jpeg_decompress_struct info;
    JpegError error;
    info.err = jpeg_std_error(&error.manager);
    error.manager.error_exit = jpegFail;
    error.manager.emit_message = jpegWarning;
    error.message[0] = '\0';
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&info);
        return error.message;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(&info, TRUE);
    if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&info);
        return "CMYK JPEG is not supported; save it as RGB";
    }
    const bool grey = info.num_components == 1;
    info.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
    if (info.image_width < 1 || info.image_height < 1 || info.image_width > kMaxDecodedSide
        || info.image_height > kMaxDecodedSide) {
        std::snprintf(error.message, sizeof error.message, "image of %ux%u pixels; WideLab reads 1 to %lld a side",
                      info.image_width, info.image_height, static_cast<long long>(kMaxDecodedSide));
        jpeg_destroy_decompress(&info);
        return error.message;
    }
    jpeg_start_decompress(&info);
    image.width = info.output_width;
    image.height = info.output_height;
    image.channels = info.output_components;
    image.pixels.resize(static_cast<std::size_t>(image.width * image.height * image.channels));
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = image.pixels.data()
                       + static_cast<std::size_t>(info.output_scanline) * static_cast<std::size_t>(image.width * image.channels);
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    return {};
}
#endif

}  // namespace

bool hasPngSupport()
{
#ifdef WIDELAB_HAVE_PNG
    return true;
#else
    return false;
#endif
}

bool hasJpegSupport()
{
#ifdef WIDELAB_HAVE_JPEG
    return true;
#else
    return false;
#endif
}

Image decodeImage(const std::vector<std::uint8_t>& bytes, const std::string& name)
{
    if (isPng(bytes)) {
#ifdef WIDELAB_HAVE_PNG
        return decodePng(bytes, name);
#else
        throw DataError(name + ": a PNG image, but WideLab was built without PNG support (libpng)");
#endif
    }
    if (isJpeg(bytes)) {
#ifdef WIDELAB_HAVE_JPEG
        Image image;
        const std::string error = decodeJpegInto(bytes, image);
        if (!error.empty())
            throw DataError(name + ": corrupt JPEG (" + error + ")");
        return image;
#else
        throw DataError(name + ": a JPEG image, but WideLab was built without JPEG support (libjpeg)");
#endif
    }
    throw DataError(name + (bytes.empty() ? ": empty file, not an image" : ": neither a PNG nor a JPEG image"));
}

Image decodeImageFile(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw DataError(file.string() + ": cannot open the image");
    const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    return decodeImage(bytes, file.string());
}

void writePng(const Image& image, const std::filesystem::path& file)
{
    const std::vector<std::uint8_t> bytes = encodePng(image, file.string());
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush())
        throw DataError(file.string() + ": cannot write the PNG");
}

std::vector<std::uint8_t> encodePng(const Image& image, const std::string& name)
{
    checkWritable(image, name);
#ifdef WIDELAB_HAVE_PNG
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    png.width = static_cast<png_uint_32>(image.width);
    png.height = static_cast<png_uint_32>(image.height);
    png.format = image.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    // Asked once for the size (no buffer), then written into a buffer of that size.
    png_alloc_size_t size = 0;
    if (!png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), 0, nullptr))
        throw DataError(name + ": cannot encode the PNG (" + png.message + ")");
    std::vector<std::uint8_t> bytes(size);
    if (!png_image_write_to_memory(&png, bytes.data(), &size, 0, image.pixels.data(), 0, nullptr))
        throw DataError(name + ": cannot encode the PNG (" + png.message + ")");
    bytes.resize(size);
    return bytes;
#else
    throw DataError(name + ": WideLab was built without PNG support (libpng)");
#endif
}

void writeJpeg(const Image& image, const std::filesystem::path& file, int quality)
{
    checkWritable(image, file);
#ifdef WIDELAB_HAVE_JPEG
    std::FILE* out = std::fopen(file.string().c_str(), "wb");
    if (!out)
        throw DataError(file.string() + ": cannot write the JPEG");
    jpeg_compress_struct info;
    jpeg_error_mgr error;
    info.err = jpeg_std_error(&error);  // a failure here exits: only well-formed images reach it (checked above)
    jpeg_create_compress(&info);
    jpeg_stdio_dest(&info, out);
    info.image_width = static_cast<JDIMENSION>(image.width);
    info.image_height = static_cast<JDIMENSION>(image.height);
    info.input_components = static_cast<int>(image.channels);
    info.in_color_space = image.channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, std::clamp(quality, 1, 100), TRUE);
    jpeg_start_compress(&info, TRUE);
    const auto stride = static_cast<std::size_t>(image.width * image.channels);
    while (info.next_scanline < info.image_height) {
        auto* row = const_cast<JSAMPLE*>(image.pixels.data() + info.next_scanline * stride);
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    const bool closed = std::fclose(out) == 0;
    if (!closed)
        throw DataError(file.string() + ": cannot write the JPEG");
#else
    (void)quality;
    throw DataError(file.string() + ": WideLab was built without JPEG support (libjpeg)");
#endif
}

Image fitImage(const Image& image, std::int64_t side)
{
    if (image.width == side && image.height == side)
        return image;
    const std::int64_t square = std::min(image.width, image.height);
    const std::int64_t left = (image.width - square) / 2, top = (image.height - square) / 2;
    const std::int64_t C = image.channels;
    Image out;
    out.width = out.height = side;
    out.channels = C;
    out.pixels.resize(static_cast<std::size_t>(side * side * C));
    const double scale = static_cast<double>(square) / static_cast<double>(side);  // source pixels per target pixel
    auto at = [&](std::int64_t x, std::int64_t y, std::int64_t c) {
        return static_cast<double>(image.pixels[static_cast<std::size_t>(((top + y) * image.width + left + x) * C + c)]);
    };
    for (std::int64_t y = 0; y < side; ++y) {
        for (std::int64_t x = 0; x < side; ++x) {
            for (std::int64_t c = 0; c < C; ++c) {
                double value = 0.0;
                if (scale > 1.0) {
                    // Shrinking: the mean of the source pixels whose centres the target pixel covers.
                    const auto x0 = static_cast<std::int64_t>(std::floor(static_cast<double>(x) * scale));
                    const auto y0 = static_cast<std::int64_t>(std::floor(static_cast<double>(y) * scale));
                    const std::int64_t x1 = std::max(x0 + 1, std::min(square, static_cast<std::int64_t>(std::floor(static_cast<double>(x + 1) * scale))));
                    const std::int64_t y1 = std::max(y0 + 1, std::min(square, static_cast<std::int64_t>(std::floor(static_cast<double>(y + 1) * scale))));
                    double sum = 0.0;
                    for (std::int64_t v = y0; v < y1; ++v)
                        for (std::int64_t u = x0; u < x1; ++u)
                            sum += at(u, v, c);
                    value = sum / static_cast<double>((x1 - x0) * (y1 - y0));
                } else {
                    // Enlarging: bilinear between the four nearest source pixels (centres aligned).
                    const double sx = std::clamp((static_cast<double>(x) + 0.5) * scale - 0.5, 0.0, static_cast<double>(square - 1));
                    const double sy = std::clamp((static_cast<double>(y) + 0.5) * scale - 0.5, 0.0, static_cast<double>(square - 1));
                    const auto u = static_cast<std::int64_t>(sx), v = static_cast<std::int64_t>(sy);
                    const std::int64_t u1 = std::min(u + 1, square - 1), v1 = std::min(v + 1, square - 1);
                    const double fx = sx - static_cast<double>(u), fy = sy - static_cast<double>(v);
                    value = (1 - fy) * ((1 - fx) * at(u, v, c) + fx * at(u1, v, c))
                            + fy * ((1 - fx) * at(u, v1, c) + fx * at(u1, v1, c));
                }
                out.pixels[static_cast<std::size_t>((y * side + x) * C + c)] =
                    static_cast<std::uint8_t>(std::clamp(std::lround(value), 0L, 255L));
            }
        }
    }
    return out;
}

Image withChannels(const Image& image, std::int64_t channels)
{
    if (image.channels == channels)
        return image;
    Image out;
    out.width = image.width;
    out.height = image.height;
    out.channels = channels;
    const std::int64_t n = image.width * image.height;
    out.pixels.resize(static_cast<std::size_t>(n * channels));
    for (std::int64_t i = 0; i < n; ++i) {
        const auto* p = &image.pixels[static_cast<std::size_t>(i * image.channels)];
        if (channels == 3) {
            std::fill_n(&out.pixels[static_cast<std::size_t>(i * 3)], 3, p[0]);
        } else {
            const double luma = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
            out.pixels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(std::clamp(std::lround(luma), 0L, 255L));
        }
    }
    return out;
}

}  // namespace widelab
