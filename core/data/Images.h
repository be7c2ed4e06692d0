// defines: the image tasks (WideNet's ViT setting): shapeNames / makeShapesDataset (generated shapes, no
// download), ImageFolder (one sub-folder per class, PNG and JPEG), Cifar10 (CIFAR-10's binary version),
// ImageStats / imageStats (per-channel normalisation from the training split), augmentImage (random crop with
// padding, horizontal flip) and probeImage (validation:N or an image file)
#pragma once

#include "Datasets.h"
#include "ImageCodec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace widelab {

// What every image of a task becomes: side x side pixels with 1 (grey) or 3 (RGB) channels (model.image_size,
// model.channels). Each dataset's examples carry `pixels` of this size and `label`, no ids.
struct ImageFormat {
    std::int64_t side = 32;
    std::int64_t channels = 3;
};

// The generated task's classes, in class order: circle, square, triangle, plus, horizontal stripes, vertical
// stripes, ring, diamond, x, frame.
const std::vector<std::string>& shapeNames();

// `count` images of simple coloured shapes: example i has class i mod 10 (balanced), its shape at a random
// position and size in a random colour on a noisy background of a contrasting colour. Drawn when asked for, from
// (seed, split, i) alone: the same image on every machine, nothing held in memory.
std::unique_ptr<Dataset> makeShapesDataset(std::int64_t count, std::uint64_t seed, Split split, ImageFormat format);
// One image of the generated task (what makeShapesDataset's example holds), for tests and previews.
Image drawShape(std::int64_t shape, std::uint64_t seed, ImageFormat format);

// A folder with one sub-folder per class (the class names: the sub-folder names, sorted), each holding PNG and
// JPEG files (.png, .jpg, .jpeg, any case; other files and deeper folders are ignored). Files are assigned to
// splits by a hash of (seed, path relative to the folder), so adding a file moves no other. Images are decoded
// when first asked for (or all at once, decodeAll), centre-cropped to a square, resized and converted to the
// format's channels, and kept so
// (up to 512 MiB of pixels per split), so that later epochs decode nothing: a file changed during a run is not
// seen again.
// Errors (DataError naming the folder or file): not a folder, fewer than 2 class folders, a class folder without
// images, an image that cannot be decoded (when read), a class list (a run's labels.json) that differs.
class ImageFolder {
public:
    ImageFolder(std::filesystem::path folder, SplitFractions fractions, std::uint64_t seed, ImageFormat format,
                const std::vector<std::string>& classes = {});

    const std::vector<std::string>& labels() const { return m_labels; }
    std::int64_t files(Split split) const;
    // The split's images; those decodeAll decoded are handed over with it (once).
    std::unique_ptr<Dataset> dataset(Split split) const;

    // Decodes every image now (keeping the pixels as above) rather than when first asked for, so that a file that
    // cannot be decoded is found before training: a DataError naming it, or, with `skip`, left out of its split.
    // Returns what was left out (each "FILE: why"). `progress` hears "decoding FOLDER: 40% (400 of 1000 images)"
    // at each tenth, from kDecodeProgressFrom images.
    std::vector<std::string> decodeAll(bool skip, const std::function<void(const std::string&)>& progress = {});
    static constexpr std::size_t kDecodeProgressFrom = 1000;

    struct Entry {
        std::filesystem::path file;
        std::int64_t label = 0;
    };

private:
    std::filesystem::path m_folder;
    ImageFormat m_format;
    std::vector<std::string> m_labels;
    std::vector<Entry> m_entries[3];  // by Split
    // By Split, then entry: decodeAll's pixels, until dataset() hands them over.
    mutable std::vector<std::vector<std::uint8_t>> m_decoded[3];
};

// CIFAR-10's binary version (the user's own copy): data_batch_1.bin .. data_batch_5.bin (training) and
// test_batch.bin (test) in one folder, each 10000 records of 1 label byte and 3072 pixel bytes (1024 red, 1024
// green, 1024 blue, row-major 32x32). The validation split is carved from the training records by a hash of
// (seed, record) with the given fraction. Records are read when asked for and resized to the format.
// Errors (DataError naming the file): a missing file, a file whose size is not 10000 records, a label above 9.
class Cifar10 {
public:
    static constexpr std::int64_t kRecordsPerFile = 10000;
    static constexpr std::int64_t kRecordBytes = 1 + 3 * 32 * 32;

    Cifar10(std::filesystem::path folder, double validationFraction, std::uint64_t seed, ImageFormat format);

    static const std::vector<std::string>& classNames();  // airplane, automobile, ..., truck
    static std::vector<std::string> fileNames();          // data_batch_1.bin .. test_batch.bin
    std::int64_t records(Split split) const;
    std::unique_ptr<Dataset> dataset(Split split) const;

private:
    std::filesystem::path m_folder;
    ImageFormat m_format;
    std::vector<std::int64_t> m_records[3];  // by Split: file * kRecordsPerFile + record (test: file 5)
};

// Per-channel mean and standard deviation of pixel values scaled to [0, 1], from up to `maxImages` training
// images spread evenly over the split (deterministic). The model sees (pixel / 255 - mean) / std.
struct ImageStats {
    std::vector<double> mean;  // [channels]
    std::vector<double> std;   // [channels], at least 1e-3
    std::int64_t images = 0;   // how many images they come from

    nlohmann::json toJson() const;
    // DataError naming `origin` when the object is not {"mean": [...], "std": [...]} with `channels` numbers each.
    static ImageStats fromJson(const nlohmann::json& json, std::int64_t channels, const std::string& origin);
};
inline constexpr std::int64_t kStatsImages = 4096;
ImageStats imageStats(const Dataset& train, std::int64_t channels, std::int64_t maxImages = kStatsImages);

// Training augmentation of one image (pixels of `image` side x side): with padding > 0, the image padded with
// black by `padding` pixels on every side and a random side x side window of it kept; with flip, columns
// reversed with probability 1/2. Draws from `random` in a fixed order (the crop's x, y, then the flip).
Image augmentImage(const Image& image, std::int64_t padding, bool flip, class DataRandom& random);
// Reverses the columns of an image.
Image flipImage(const Image& image);
// Inception-style crop (Szegedy et al. 2015, as torchvision's RandomResizedCrop):
// a region of a random share of the area in [minArea, 1] and a random aspect
// ratio in [3/4, 4/3] (uniform in its logarithm), at a random place, resized
// bilinearly back to the image's size; after 10 draws that do not fit, the
// whole image. minArea in (0, 1]; std::invalid_argument otherwise.
Image inceptionCrop(const Image& image, double minArea, class DataRandom& random);

// An example's pixels as an Image of the format.
Image exampleImage(const Example& example, ImageFormat format);

// The image a probe entry names: "validation:N" (the N-th example of `validation`, which may be null when only
// files are expected; its label in `label`) or the
// path of a PNG or JPEG file (label -1), fitted to the format. DataError saying why when N is not a number or
// beyond the split, or the file cannot be decoded.
Image probeImage(const std::string& entry, const Dataset* validation, ImageFormat format, std::int64_t& label);

}  // namespace widelab
