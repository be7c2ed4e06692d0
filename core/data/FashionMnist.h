// defines: IdxBytes / readIdxFile (an IDX file of unsigned bytes, gzip-compressed or not) and FashionMnist
// (Zalando's Fashion-MNIST as Debian's dataset-fashion-mnist installs it): task.kind fashion_mnist
#pragma once

#include "Images.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace widelab {

// An IDX file of unsigned bytes (LeCun's MNIST format): the magic 0x0000 08 NN, NN dimensions as big-endian
// 32-bit counts, then the bytes, row-major.
struct IdxBytes {
    std::vector<std::int64_t> dims;
    std::vector<std::uint8_t> bytes;  // the product of dims
};

// Reads `file`, decompressing it when it is gzip (any other file is read as it is). DataError naming the file: it
// cannot be opened or decompressed, its magic is not that of unsigned bytes with `rank` dimensions, or it holds
// fewer or more bytes than its dimensions say.
IdxBytes readIdxFile(const std::filesystem::path& file, std::int64_t rank);

// Fashion-MNIST: 60,000 training and 10,000 test pictures of clothing, 28x28 grey, in 10 classes. Read from a
// folder holding train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte, each with or without .gz (an empty folder name: Debian's package's folder). The
// validation split is carved from the training pictures by a hash of (seed, picture) with the given fraction;
// the test split is the t10k files. Everything is read and decompressed once, here; an example is fitted to the
// format (resized, grey repeated into 3 channels if asked) when asked for.
// Errors (DataError naming the file, and the package to install when the folder is Debian's and missing): a
// missing file, an IDX file that is not pictures of 28x28 or labels, counts that disagree, a label above 9.
class FashionMnist {
public:
    static constexpr const char* kDebianFolder = "/usr/share/datasets/fashion-mnist";
    static constexpr const char* kDebianPackage = "dataset-fashion-mnist";
    static constexpr std::int64_t kSide = 28;

    FashionMnist(std::filesystem::path folder, double validationFraction, std::uint64_t seed, ImageFormat format);

    static const std::vector<std::string>& classNames();  // T-shirt/top, Trouser, ..., Ankle boot
    // The folder a task.path names: itself, or Debian's package's folder for an empty one.
    static std::filesystem::path folderOf(const std::string& taskPath);
    // "install Debian's package: sudo apt install dataset-fashion-mnist (...)": what every error about the
    // missing package ends with.
    static std::string installHint();
    std::int64_t records(Split split) const;
    std::unique_ptr<Dataset> dataset(Split split) const;

    // The pictures and labels of one pair of files (training or t10k), shared by the datasets made from them.
    struct Pictures {
        std::vector<std::uint8_t> pixels;  // [count * 28 * 28]
        std::vector<std::uint8_t> labels;  // [count]
    };

private:
    ImageFormat m_format;
    std::shared_ptr<const Pictures> m_train, m_test;
    std::vector<std::int64_t> m_records[3];  // by Split: indices into m_train (train, validation) or m_test (test)
};

}  // namespace widelab
