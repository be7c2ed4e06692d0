#include "FashionMnist.h"

#include "DatasetChecks.h"  // checkIndex, splitOfRow
#include "Tokenizer.h"      // DataError

#include <zlib.h>

#include <climits>
#include <system_error>
#include <utility>

namespace widelab {
namespace {

constexpr std::int64_t kPixels = FashionMnist::kSide * FashionMnist::kSide;
constexpr std::int64_t kMaxIdxBytes = std::int64_t{1} << 31;  // Fashion-MNIST's largest file holds 47 MB

// The whole file through zlib, which reads a file that is not gzip as it is.
std::vector<std::uint8_t> readMaybeGzip(const std::filesystem::path& file)
{
    gzFile in = gzopen(file.c_str(), "rb");
    if (in == nullptr)
        throw DataError(file.string() + ": cannot be opened: " + std::generic_category().message(errno));
    std::vector<std::uint8_t> bytes;
    constexpr unsigned kChunk = 1u << 20;
    for (;;) {
        const std::size_t had = bytes.size();
        bytes.resize(had + kChunk);
        const int got = gzread(in, bytes.data() + had, kChunk);
        if (got < 0) {
            int code = 0;
            const std::string why = gzerror(in, &code);
            gzclose(in);
            throw DataError(file.string() + ": cannot be decompressed (" + why + "); damaged, or not gzip");
        }
        bytes.resize(had + static_cast<std::size_t>(got));
        if (got == 0)
            break;
        if (static_cast<std::int64_t>(bytes.size()) > kMaxIdxBytes) {
            gzclose(in);
            throw DataError(file.string() + ": more than 2 GiB; not an IDX file of pictures");
        }
    }
    gzclose(in);
    return bytes;
}

class PicturesDataset : public Dataset {
public:
    PicturesDataset(std::shared_ptr<const FashionMnist::Pictures> pictures, std::vector<std::int64_t> indices,
                    ImageFormat format)
        : m_pictures(std::move(pictures)), m_indices(std::move(indices)), m_format(format) {}
    std::int64_t size() const override { return static_cast<std::int64_t>(m_indices.size()); }
    Example get(std::int64_t index) const override
    {
        checkIndex(index, size());
        const std::int64_t picture = m_indices[static_cast<std::size_t>(index)];
        Image image;
        image.width = image.height = FashionMnist::kSide;
        image.channels = 1;
        const auto first = m_pictures->pixels.begin() + picture * kPixels;
        image.pixels.assign(first, first + kPixels);
        Example example;
        example.pixels = fitImage(withChannels(image, m_format.channels), m_format.side).pixels;
        example.label = m_pictures->labels[static_cast<std::size_t>(picture)];
        return example;
    }

private:
    std::shared_ptr<const FashionMnist::Pictures> m_pictures;
    std::vector<std::int64_t> m_indices;
    ImageFormat m_format;
};

// train-images-idx3-ubyte.gz, or without .gz; a missing file's error names the package where the folder is its.
std::filesystem::path idxFile(const std::filesystem::path& folder, const std::string& name)
{
    std::error_code error;
    for (const std::filesystem::path& candidate : {folder / (name + ".gz"), folder / name})
        if (std::filesystem::is_regular_file(candidate, error))
            return candidate;
    std::string why = (folder / (name + ".gz")).string() + ": missing (Fashion-MNIST is four IDX files: "
                      "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
                      "t10k-labels-idx1-ubyte, each with or without .gz)";
    if (folder == std::filesystem::path(FashionMnist::kDebianFolder))
        why += "; " + FashionMnist::installHint() + ", or set task.path to a folder holding the files";
    throw DataError(why);
}

std::shared_ptr<const FashionMnist::Pictures> readPictures(const std::filesystem::path& folder, const std::string& part)
{
    const std::filesystem::path imagesFile = idxFile(folder, part + "-images-idx3-ubyte");
    const std::filesystem::path labelsFile = idxFile(folder, part + "-labels-idx1-ubyte");
    IdxBytes images = readIdxFile(imagesFile, 3);
    IdxBytes labels = readIdxFile(labelsFile, 1);
    if (images.dims[1] != FashionMnist::kSide || images.dims[2] != FashionMnist::kSide)
        throw DataError(imagesFile.string() + ": pictures of " + std::to_string(images.dims[1]) + "x"
                        + std::to_string(images.dims[2]) + " pixels; Fashion-MNIST's are 28x28");
    if (images.dims[0] != labels.dims[0])
        throw DataError(labelsFile.string() + ": " + std::to_string(labels.dims[0]) + " labels for the "
                        + std::to_string(images.dims[0]) + " pictures of " + imagesFile.filename().string());
    if (images.dims[0] == 0)
        throw DataError(imagesFile.string() + ": holds no pictures");
    for (std::size_t i = 0; i < labels.bytes.size(); ++i)
        if (labels.bytes[i] > 9)
            throw DataError(labelsFile.string() + ": label " + std::to_string(labels.bytes[i]) + " at picture "
                            + std::to_string(i) + "; Fashion-MNIST's labels are 0-9");
    auto pictures = std::make_shared<FashionMnist::Pictures>();
    pictures->pixels = std::move(images.bytes);
    pictures->labels = std::move(labels.bytes);
    return pictures;
}

}  // namespace

IdxBytes readIdxFile(const std::filesystem::path& file, std::int64_t rank)
{
    std::vector<std::uint8_t> data = readMaybeGzip(file);
    const auto header = static_cast<std::size_t>(4 + 4 * rank);
    if (data.size() < header || data[0] != 0 || data[1] != 0 || data[2] != 0x08 || data[3] != rank)
        throw DataError(file.string() + ": not an IDX file of unsigned bytes with " + std::to_string(rank)
                        + (rank == 1 ? " dimension" : " dimensions") + " (its first bytes should be 00 00 08 0"
                        + std::to_string(rank) + ")");
    IdxBytes idx;
    std::int64_t count = 1;
    for (std::int64_t d = 0; d < rank; ++d) {
        const std::uint8_t* p = data.data() + 4 + 4 * d;
        const std::int64_t n = (std::int64_t{p[0]} << 24) | (std::int64_t{p[1]} << 16) | (std::int64_t{p[2]} << 8) | p[3];
        idx.dims.push_back(n);
        count = n == 0 || count <= kMaxIdxBytes / n ? count * n : kMaxIdxBytes + 1;
    }
    const auto have = static_cast<std::int64_t>(data.size() - header);
    if (count != have)
        throw DataError(file.string() + ": " + std::to_string(have) + " bytes of data where its dimensions say "
                        + std::to_string(count) + "; truncated or damaged");
    data.erase(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(header));
    idx.bytes = std::move(data);
    return idx;
}

const std::vector<std::string>& FashionMnist::classNames()
{
    static const std::vector<std::string> names{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    return names;
}

std::filesystem::path FashionMnist::folderOf(const std::string& taskPath)
{
    return taskPath.empty() ? std::filesystem::path(kDebianFolder) : std::filesystem::path(taskPath);
}

std::string FashionMnist::installHint()
{
    return "install Debian's package: sudo apt install " + std::string(kDebianPackage)
           + " (packaging/install-deps.sh does)";
}

FashionMnist::FashionMnist(std::filesystem::path folder, double validationFraction, std::uint64_t seed,
                           ImageFormat format)
    : m_format(format)
{
    m_train = readPictures(folder, "train");
    m_test = readPictures(folder, "t10k");
    const auto trainCount = static_cast<std::int64_t>(m_train->labels.size());
    for (std::int64_t picture = 0; picture < trainCount; ++picture) {
        const Split split = splitOfRow(seed, picture, {validationFraction, 0.0});
        m_records[static_cast<std::size_t>(split)].push_back(picture);
    }
    for (std::int64_t picture = 0; picture < static_cast<std::int64_t>(m_test->labels.size()); ++picture)
        m_records[static_cast<std::size_t>(Split::Test)].push_back(picture);
}

std::int64_t FashionMnist::records(Split split) const
{
    return static_cast<std::int64_t>(m_records[static_cast<std::size_t>(split)].size());
}

std::unique_ptr<Dataset> FashionMnist::dataset(Split split) const
{
    return std::make_unique<PicturesDataset>(split == Split::Test ? m_test : m_train,
                                             m_records[static_cast<std::size_t>(split)], m_format);
}

}  // namespace widelab
