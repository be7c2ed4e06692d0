#include "Images.h"

#include "ListOps.h"  // DataRandom, mixSeed
#include "Tokenizer.h"  // DataError

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <mutex>
#include <utility>
#include <stdexcept>

namespace widelab {
namespace {

std::uint64_t hashText(const std::string& text)
{
    std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

// A split from a hash: test first, then validation, the rest training (as ClassificationFile assigns rows).
Split splitOf(std::uint64_t hash, double validation, double test)
{
    const double u = static_cast<double>(hash >> 11) * 0x1.0p-53;
    return u < test ? Split::Test : u < test + validation ? Split::Validation : Split::Train;
}

Example toExample(const Image& image, std::int64_t label)
{
    Example example;
    example.pixels = image.pixels;
    example.label = label;
    return example;
}

Image toFormat(const Image& image, ImageFormat format) { return fitImage(withChannels(image, format.channels), format.side); }

void checkImageIndex(std::int64_t index, std::int64_t size)
{
    if (index < 0 || index >= size)
        throw std::out_of_range("image dataset: index " + std::to_string(index) + " outside 0.." + std::to_string(size - 1));
}

// ---- generated shapes ----

class ShapesDataset : public Dataset {
public:
    ShapesDataset(std::int64_t count, std::uint64_t seed, ImageFormat format) : m_count(count), m_seed(seed), m_format(format) {}
    std::int64_t size() const override { return m_count; }
    Example get(std::int64_t index) const override
    {
        checkImageIndex(index, m_count);
        const std::int64_t shape = index % 10;
        return toExample(drawShape(shape, mixSeed(m_seed, static_cast<std::uint64_t>(index)), m_format), shape);
    }

private:
    std::int64_t m_count;
    std::uint64_t m_seed;
    ImageFormat m_format;
};

double luma(const double rgb[3]) { return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]; }

// Whether the point (dx, dy), relative to the centre, lies in shape `shape` of radius r.
bool inside(std::int64_t shape, double dx, double dy, double r)
{
    const double ax = std::abs(dx), ay = std::abs(dy), d = std::hypot(dx, dy);
    const double stripe = std::max(1.0, 2.0 * r / 5.0);
    switch (shape) {
    case 0: return d <= r;                                                      // circle
    case 1: return ax <= 0.8 * r && ay <= 0.8 * r;                              // square
    case 2: return dy <= 0.8 * r && dy >= -r && ax <= (dy + r) / 1.8;           // triangle, apex up
    case 3: return (ax <= 0.3 * r && ay <= r) || (ay <= 0.3 * r && ax <= r);    // plus
    case 4: return ax <= r && ay <= r && static_cast<std::int64_t>(std::floor((dy + r) / stripe)) % 2 == 0;
    case 5: return ax <= r && ay <= r && static_cast<std::int64_t>(std::floor((dx + r) / stripe)) % 2 == 0;
    case 6: return d <= r && d >= 0.55 * r;                                     // ring
    case 7: return ax + ay <= r;                                                // diamond
    case 8: return ax <= 0.8 * r && ay <= 0.8 * r && (std::abs(dx - dy) <= 0.3 * r || std::abs(dx + dy) <= 0.3 * r);
    default: return ax <= 0.85 * r && ay <= 0.85 * r && (ax >= 0.5 * r || ay >= 0.5 * r);  // frame
    }
}

// ---- image folders ----

bool isImageName(const std::filesystem::path& file)
{
    std::string extension = file.extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return extension == ".png" || extension == ".jpg" || extension == ".jpeg";
}

// Decoding a photograph (and shrinking it to the model's side) costs far more
// than a training step's share of it; each image is decoded once and kept at
// the model's size, up to kFolderCacheBytes per split (32x32 RGB: 3 KiB an
// image, 170,000 of them), past which images are decoded every time they are read.
constexpr std::size_t kFolderCacheBytes = std::size_t{512} << 20;

class FolderDataset : public Dataset {
public:
    // `decoded`: pixels already decoded (ImageFolder::decodeAll), by entry, empty where not.
    FolderDataset(std::vector<ImageFolder::Entry> entries, ImageFormat format,
                  std::vector<std::vector<std::uint8_t>> decoded = {})
        : m_entries(std::move(entries)), m_format(format), m_cache(std::move(decoded))
    {
        m_cache.resize(m_entries.size());
        for (const auto& pixels : m_cache)
            m_cachedBytes += pixels.size();
    }
    std::int64_t size() const override { return static_cast<std::int64_t>(m_entries.size()); }
    Example get(std::int64_t index) const override
    {
        checkImageIndex(index, size());
        const auto at = static_cast<std::size_t>(index);
        const ImageFolder::Entry& entry = m_entries[at];
        {
            const std::lock_guard<std::mutex> lock(m_mutex);
            if (!m_cache[at].empty()) {
                Example example;
                example.pixels = m_cache[at];
                example.label = entry.label;
                return example;
            }
        }
        Example example = toExample(toFormat(decodeImageFile(entry.file), m_format), entry.label);
        const std::lock_guard<std::mutex> lock(m_mutex);
        if (m_cache[at].empty() && m_cachedBytes + example.pixels.size() <= kFolderCacheBytes) {
            m_cache[at] = example.pixels;
            m_cachedBytes += example.pixels.size();
        }
        return example;
    }

private:
    std::vector<ImageFolder::Entry> m_entries;
    ImageFormat m_format;
    mutable std::mutex m_mutex;  // a probe may read the validation split from another thread
    mutable std::vector<std::vector<std::uint8_t>> m_cache;  // [entry]: the pixels, empty until decoded
    mutable std::size_t m_cachedBytes = 0;
};

// ---- CIFAR-10 ----

class CifarDataset : public Dataset {
public:
    CifarDataset(std::filesystem::path folder, std::vector<std::int64_t> records, ImageFormat format)
        : m_folder(std::move(folder)), m_records(std::move(records)), m_format(format) {}
    std::int64_t size() const override { return static_cast<std::int64_t>(m_records.size()); }
    Example get(std::int64_t index) const override
    {
        checkImageIndex(index, size());
        const std::int64_t record = m_records[static_cast<std::size_t>(index)];
        const std::filesystem::path file = m_folder / Cifar10::fileNames()[static_cast<std::size_t>(record / Cifar10::kRecordsPerFile)];
        std::ifstream in(file, std::ios::binary);
        in.seekg((record % Cifar10::kRecordsPerFile) * Cifar10::kRecordBytes);
        std::vector<char> bytes(static_cast<std::size_t>(Cifar10::kRecordBytes));
        if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
            throw DataError(file.string() + ": cannot read record " + std::to_string(record % Cifar10::kRecordsPerFile));
        const auto label = static_cast<std::int64_t>(static_cast<unsigned char>(bytes[0]));
        if (label > 9)
            throw DataError(file.string() + ": record " + std::to_string(record % Cifar10::kRecordsPerFile) + " has label "
                            + std::to_string(label) + "; CIFAR-10's labels are 0-9");
        Image image;
        image.width = image.height = 32;
        image.channels = 3;
        image.pixels.resize(32 * 32 * 3);
        for (std::size_t c = 0; c < 3; ++c)  // planar (1024 R, 1024 G, 1024 B) -> interleaved HWC
            for (std::size_t i = 0; i < 1024; ++i)
                image.pixels[i * 3 + c] = static_cast<std::uint8_t>(bytes[1 + c * 1024 + i]);
        return toExample(toFormat(image, m_format), label);
    }

private:
    std::filesystem::path m_folder;
    std::vector<std::int64_t> m_records;
    ImageFormat m_format;
};

}  // namespace

// ---- generated shapes ----

const std::vector<std::string>& shapeNames()
{
    static const std::vector<std::string> names = {"circle", "square", "triangle", "plus", "horizontal stripes",
                                                   "vertical stripes", "ring", "diamond", "x", "frame"};
    return names;
}

Image drawShape(std::int64_t shape, std::uint64_t seed, ImageFormat format)
{
    DataRandom random(seed);
    const double side = static_cast<double>(format.side);
    // Background and shape colours whose brightness differs clearly, so that grey images keep the shape.
    double background[3], colour[3];
    for (int attempt = 0;; ++attempt) {
        for (double& c : background)
            c = 255.0 * random.uniform();
        for (double& c : colour)
            c = 255.0 * random.uniform();
        if (std::abs(luma(background) - luma(colour)) >= 80.0 || attempt >= 64)
            break;
    }
    if (std::abs(luma(background) - luma(colour)) < 80.0)  // 64 unlucky draws: black on white
        for (int c = 0; c < 3; ++c)
            background[c] = 255.0, colour[c] = 0.0;
    const double r = side * (0.2 + 0.18 * random.uniform());
    const double cx = r + (side - 2.0 * r) * random.uniform();
    const double cy = r + (side - 2.0 * r) * random.uniform();

    Image rgb;
    rgb.width = rgb.height = format.side;
    rgb.channels = 3;
    rgb.pixels.resize(static_cast<std::size_t>(format.side * format.side * 3));
    for (std::int64_t y = 0; y < format.side; ++y) {
        for (std::int64_t x = 0; x < format.side; ++x) {
            const bool in = inside(shape, static_cast<double>(x) + 0.5 - cx, static_cast<double>(y) + 0.5 - cy, r);
            for (std::int64_t c = 0; c < 3; ++c) {
                const double noise = 48.0 * (random.uniform() - 0.5);
                const double value = (in ? colour[c] : background[c]) + noise;
                rgb.pixels[static_cast<std::size_t>((y * format.side + x) * 3 + c)] =
                    static_cast<std::uint8_t>(std::clamp(std::lround(value), 0L, 255L));
            }
        }
    }
    return withChannels(rgb, format.channels);
}

std::unique_ptr<Dataset> makeShapesDataset(std::int64_t count, std::uint64_t seed, Split split, ImageFormat format)
{
    return std::make_unique<ShapesDataset>(count, mixSeed(seed, 100 + static_cast<std::uint64_t>(split)), format);
}

// ---- image folders ----

ImageFolder::ImageFolder(std::filesystem::path folder, SplitFractions fractions, std::uint64_t seed,
                         ImageFormat format, const std::vector<std::string>& classes)
    : m_folder(std::move(folder)), m_format(format)
{
    if (fractions.validation < 0 || fractions.test < 0 || fractions.validation + fractions.test > 1)
        throw std::invalid_argument("ImageFolder: split fractions out of range");
    std::error_code error;
    if (!std::filesystem::is_directory(m_folder, error))
        throw DataError(m_folder.string() + ": not a folder (an image task reads a folder with one sub-folder per class)");
    std::vector<std::filesystem::path> classFolders;
    for (const auto& item : std::filesystem::directory_iterator(m_folder, error))
        if (item.is_directory())
            classFolders.push_back(item.path());
    if (error)
        throw DataError(m_folder.string() + ": cannot list the folder (" + error.message() + ")");
    std::sort(classFolders.begin(), classFolders.end());
    if (classFolders.size() < 2)
        throw DataError(m_folder.string() + ": " + std::to_string(classFolders.size())
                        + " class folder(s); an image folder needs one sub-folder per class, at least 2");
    for (const auto& classFolder : classFolders)
        m_labels.push_back(classFolder.filename().string());
    if (!classes.empty() && classes != m_labels)
        throw DataError(m_folder.string() + ": its class folders differ from the run's classes (labels.json); a run "
                                            "keeps the classes it started with");
    for (std::size_t label = 0; label < classFolders.size(); ++label) {
        std::vector<std::filesystem::path> files;
        for (const auto& item : std::filesystem::directory_iterator(classFolders[label], error))
            if (item.is_regular_file() && isImageName(item.path()))
                files.push_back(item.path());
        if (files.empty())
            throw DataError(classFolders[label].string() + ": no PNG or JPEG image in this class folder");
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            const std::string relative = file.lexically_relative(m_folder).generic_string();
            const Split split = splitOf(mixSeed(seed, hashText(relative)), fractions.validation, fractions.test);
            m_entries[static_cast<std::size_t>(split)].push_back({file, static_cast<std::int64_t>(label)});
        }
    }
}

std::vector<std::string> ImageFolder::decodeAll(bool skip, const std::function<void(const std::string&)>& progress)
{
    std::size_t total = 0, done = 0, tenths = 0;
    for (const auto& entries : m_entries)
        total += entries.size();
    std::vector<std::string> leftOut;
    for (std::size_t split = 0; split < 3; ++split) {
        std::vector<Entry> kept;
        std::vector<std::vector<std::uint8_t>> pixels;
        std::size_t bytes = 0;
        for (const Entry& entry : m_entries[split]) {
            ++done;
            if (progress && total >= kDecodeProgressFrom && done * 10 / total > tenths) {
                tenths = done * 10 / total;
                progress("decoding " + m_folder.string() + ": " + std::to_string(10 * tenths) + "% ("
                         + std::to_string(done) + " of " + std::to_string(total) + " images)");
            }
            Example example;
            try {
                example = toExample(toFormat(decodeImageFile(entry.file), m_format), entry.label);
            } catch (const DataError& error) {
                if (!skip)
                    throw DataError(std::string(error.what())
                                    + "; task.skip_bad_inputs: true leaves out, counted, the images that cannot be "
                                      "decoded");
                leftOut.push_back(error.what());
                continue;
            }
            kept.push_back(entry);
            const bool keep = bytes + example.pixels.size() <= kFolderCacheBytes;
            bytes += keep ? example.pixels.size() : 0;
            pixels.push_back(keep ? std::move(example.pixels) : std::vector<std::uint8_t>());
        }
        m_entries[split] = std::move(kept);
        m_decoded[split] = std::move(pixels);
    }
    return leftOut;
}

std::int64_t ImageFolder::files(Split split) const
{
    return static_cast<std::int64_t>(m_entries[static_cast<std::size_t>(split)].size());
}

std::unique_ptr<Dataset> ImageFolder::dataset(Split split) const
{
    const auto at = static_cast<std::size_t>(split);
    return std::make_unique<FolderDataset>(m_entries[at], m_format, std::exchange(m_decoded[at], {}));
}

// ---- CIFAR-10 ----

const std::vector<std::string>& Cifar10::classNames()
{
    static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                   "dog",      "frog",       "horse", "ship", "truck"};
    return names;
}

std::vector<std::string> Cifar10::fileNames()
{
    return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin",
            "test_batch.bin"};
}

Cifar10::Cifar10(std::filesystem::path folder, double validationFraction, std::uint64_t seed, ImageFormat format)
    : m_folder(std::move(folder)), m_format(format)
{
    std::error_code error;
    if (!std::filesystem::is_directory(m_folder, error))
        throw DataError(m_folder.string() + ": not a folder (CIFAR-10 is read from the folder of its binary version, "
                                            "holding data_batch_1.bin .. data_batch_5.bin and test_batch.bin)");
    const std::vector<std::string> names = fileNames();
    constexpr std::int64_t expected = kRecordsPerFile * kRecordBytes;
    for (const std::string& name : names) {
        const std::filesystem::path file = m_folder / name;
        if (!std::filesystem::is_regular_file(file, error))
            throw DataError(file.string() + ": missing (CIFAR-10's binary version has data_batch_1.bin .. "
                                            "data_batch_5.bin and test_batch.bin)");
        const auto size = static_cast<std::int64_t>(std::filesystem::file_size(file, error));
        if (error || size != expected)
            throw DataError(file.string() + ": " + std::to_string(size) + " bytes, expected " + std::to_string(expected)
                            + " (10000 records of 3073 bytes); not CIFAR-10's binary version, or damaged");
        if (!std::ifstream(file, std::ios::binary))
            throw DataError(file.string() + ": cannot be read");
    }
    for (std::int64_t record = 0; record < 5 * kRecordsPerFile; ++record) {
        const Split split = splitOf(mixSeed(seed, static_cast<std::uint64_t>(record)), validationFraction, 0.0);
        m_records[static_cast<std::size_t>(split)].push_back(record);
    }
    for (std::int64_t record = 0; record < kRecordsPerFile; ++record)
        m_records[static_cast<std::size_t>(Split::Test)].push_back(5 * kRecordsPerFile + record);
}

std::int64_t Cifar10::records(Split split) const
{
    return static_cast<std::int64_t>(m_records[static_cast<std::size_t>(split)].size());
}

std::unique_ptr<Dataset> Cifar10::dataset(Split split) const
{
    return std::make_unique<CifarDataset>(m_folder, m_records[static_cast<std::size_t>(split)], m_format);
}

// ---- normalisation ----

nlohmann::json ImageStats::toJson() const { return {{"mean", mean}, {"std", std}, {"images", images}}; }

ImageStats ImageStats::fromJson(const nlohmann::json& json, std::int64_t channels, const std::string& origin)
{
    ImageStats stats;
    auto numbers = [&](const char* key, std::vector<double>& out) {
        if (!json.is_object() || !json.contains(key) || !json.at(key).is_array()
            || static_cast<std::int64_t>(json.at(key).size()) != channels)
            throw DataError(origin + ": \"" + key + "\" must be an array of " + std::to_string(channels) + " numbers");
        for (const auto& value : json.at(key)) {
            if (!value.is_number() || !std::isfinite(value.get<double>()))
                throw DataError(origin + ": \"" + key + "\" holds something other than a finite number");
            out.push_back(value.get<double>());
        }
    };
    numbers("mean", stats.mean);
    numbers("std", stats.std);
    for (const double s : stats.std)
        if (s <= 0.0)
            throw DataError(origin + ": \"std\" must be positive");
    stats.images = json.value("images", std::int64_t{0});
    return stats;
}

ImageStats imageStats(const Dataset& train, std::int64_t channels, std::int64_t maxImages)
{
    const std::int64_t count = std::min(train.size(), maxImages);
    std::vector<double> sum(static_cast<std::size_t>(channels), 0.0), squares(sum);
    double pixels = 0.0;
    for (std::int64_t k = 0; k < count; ++k) {
        const Example example = train.get(k * train.size() / count);  // spread over the split
        const auto& p = example.pixels;
        for (std::size_t i = 0; i < p.size(); ++i) {
            const double v = p[i] / 255.0;
            sum[i % static_cast<std::size_t>(channels)] += v;
            squares[i % static_cast<std::size_t>(channels)] += v * v;
        }
        pixels += static_cast<double>(p.size()) / static_cast<double>(channels);
    }
    ImageStats stats;
    stats.images = count;
    for (std::size_t c = 0; c < sum.size(); ++c) {
        const double mean = pixels > 0 ? sum[c] / pixels : 0.5;
        const double variance = pixels > 0 ? std::max(0.0, squares[c] / pixels - mean * mean) : 0.0625;
        stats.mean.push_back(mean);
        stats.std.push_back(std::max(1e-3, std::sqrt(variance)));
    }
    return stats;
}

// ---- augmentation ----

Image flipImage(const Image& image)
{
    Image out = image;
    const std::int64_t W = image.width, C = image.channels;
    for (std::int64_t y = 0; y < image.height; ++y)
        for (std::int64_t x = 0; x < W; ++x)
            for (std::int64_t c = 0; c < C; ++c)
                out.pixels[static_cast<std::size_t>((y * W + x) * C + c)] =
                    image.pixels[static_cast<std::size_t>((y * W + (W - 1 - x)) * C + c)];
    return out;
}

Image augmentImage(const Image& image, std::int64_t padding, bool flip, DataRandom& random)
{
    Image out = image;
    if (padding > 0) {
        // The window's corner in the padded image, 0..2*padding on each axis.
        const auto dx = static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(2 * padding + 1))) - padding;
        const auto dy = static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(2 * padding + 1))) - padding;
        const std::int64_t W = image.width, H = image.height, C = image.channels;
        std::fill(out.pixels.begin(), out.pixels.end(), std::uint8_t{0});
        for (std::int64_t y = 0; y < H; ++y) {
            const std::int64_t sy = y + dy;
            if (sy < 0 || sy >= H)
                continue;
            for (std::int64_t x = 0; x < W; ++x) {
                const std::int64_t sx = x + dx;
                if (sx < 0 || sx >= W)
                    continue;
                std::copy_n(&image.pixels[static_cast<std::size_t>((sy * W + sx) * C)], C,
                            &out.pixels[static_cast<std::size_t>((y * W + x) * C)]);
            }
        }
    }
    if (flip && random.below(2) == 1)
        out = flipImage(out);
    return out;
}

Image inceptionCrop(const Image& image, double minArea, DataRandom& random)
{
    if (!(minArea > 0.0 && minArea <= 1.0))
        throw std::invalid_argument("inceptionCrop: minArea " + std::to_string(minArea) + " is not in (0, 1]");
    const std::int64_t W = image.width, H = image.height, C = image.channels;
    std::int64_t x0 = 0, y0 = 0, w = W, h = H;  // the region; the whole image when no draw fits
    for (int attempt = 0; attempt < 10; ++attempt) {
        const double area = static_cast<double>(W * H) * (minArea + (1.0 - minArea) * random.uniform());
        const double ratio = std::exp(std::log(3.0 / 4.0) + (std::log(4.0 / 3.0) - std::log(3.0 / 4.0)) * random.uniform());
        const auto cw = static_cast<std::int64_t>(std::llround(std::sqrt(area * ratio)));
        const auto ch = static_cast<std::int64_t>(std::llround(std::sqrt(area / ratio)));
        if (cw < 1 || ch < 1 || cw > W || ch > H)
            continue;
        w = cw;
        h = ch;
        x0 = static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(W - w + 1)));
        y0 = static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(H - h + 1)));
        break;
    }
    // Bilinear, pixel centres aligned: output (x + 0.5) maps to x0 + (x + 0.5) * w / W in the source.
    Image out = image;
    auto source = [&](std::int64_t x, std::int64_t y, std::int64_t c) {
        return static_cast<double>(image.pixels[static_cast<std::size_t>((y * W + x) * C + c)]);
    };
    // Along one axis: output index i of `size` from a region [origin, origin + length): the two source
    // indices either side and the weight of the second.
    struct Taps {
        std::int64_t a, b;
        double weight;
    };
    auto taps = [](std::int64_t i, std::int64_t size, std::int64_t origin, std::int64_t length) {
        const auto last = static_cast<double>(origin + length - 1);
        const double s = std::clamp(static_cast<double>(origin) + (static_cast<double>(i) + 0.5) * static_cast<double>(length)
                                        / static_cast<double>(size) - 0.5,
                                    static_cast<double>(origin), last);
        const auto a = static_cast<std::int64_t>(std::floor(s));
        return Taps{a, std::min(a + 1, origin + length - 1), s - static_cast<double>(a)};
    };
    for (std::int64_t y = 0; y < H; ++y) {
        const auto [ya, yb, fy] = taps(y, H, y0, h);
        for (std::int64_t x = 0; x < W; ++x) {
            const auto [xa, xb, fx] = taps(x, W, x0, w);
            for (std::int64_t c = 0; c < C; ++c) {
                const double top = source(xa, ya, c) * (1.0 - fx) + source(xb, ya, c) * fx;
                const double bottom = source(xa, yb, c) * (1.0 - fx) + source(xb, yb, c) * fx;
                out.pixels[static_cast<std::size_t>((y * W + x) * C + c)] =
                    static_cast<std::uint8_t>(std::lround(std::clamp(top * (1.0 - fy) + bottom * fy, 0.0, 255.0)));
            }
        }
    }
    return out;
}

Image exampleImage(const Example& example, ImageFormat format)
{
    Image image;
    image.width = image.height = format.side;
    image.channels = format.channels;
    image.pixels = example.pixels;
    if (static_cast<std::int64_t>(image.pixels.size()) != format.side * format.side * format.channels)
        throw DataError("an image example holds " + std::to_string(image.pixels.size()) + " bytes, expected "
                        + std::to_string(format.side * format.side * format.channels));
    return image;
}

Image probeImage(const std::string& entry, const Dataset* validation, ImageFormat format, std::int64_t& label)
{
    label = -1;
    const std::string prefix = "validation:";
    if (entry.rfind(prefix, 0) == 0) {
        const std::string number = entry.substr(prefix.size());
        const bool digits = !number.empty() && number.size() <= 18
                            && std::all_of(number.begin(), number.end(), [](unsigned char c) { return std::isdigit(c); });
        if (!digits)
            throw DataError("\"" + entry + "\": expected validation:N with N a number from 0");
        const std::int64_t index = std::stoll(number);
        if (validation == nullptr)
            throw DataError("\"" + entry + "\": the run's validation split is not at hand");
        if (index >= validation->size())
            throw DataError("\"" + entry + "\": the validation split has " + std::to_string(validation->size())
                            + " images (0.." + std::to_string(validation->size() - 1) + ")");
        const Example example = validation->get(index);
        label = example.label;
        return exampleImage(example, format);
    }
    if (entry.empty())
        throw DataError("an empty probe: expected validation:N or the path of a PNG or JPEG file");
    return toFormat(decodeImageFile(entry), format);
}

}  // namespace widelab
