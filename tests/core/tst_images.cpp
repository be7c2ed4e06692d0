// Tests of the image data layer (data/ImageCodec, data/Images, makeImageBatch):
// PNG and JPEG files written here with libpng and libjpeg, corrupt files, image
// folders and CIFAR-10 records built by hand, augmentation, normalisation and
// the generated shapes.
#include "data/Batch.h"
#include "data/ImageCodec.h"
#include "data/Images.h"
#include "data/ListOps.h"

#include <QtTest>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

using namespace widelab;

namespace {

std::filesystem::path pathIn(const QTemporaryDir& dir, const std::string& name)
{
    return std::filesystem::path(dir.path().toStdString()) / name;
}

Image makeImage(std::int64_t width, std::int64_t height, std::int64_t channels, std::vector<std::uint8_t> pixels)
{
    Image image;
    image.width = width;
    image.height = height;
    image.channels = channels;
    image.pixels = std::move(pixels);
    return image;
}

Image uniform(std::int64_t side, std::vector<std::uint8_t> colour)
{
    std::vector<std::uint8_t> pixels;
    for (std::int64_t i = 0; i < side * side; ++i)
        pixels.insert(pixels.end(), colour.begin(), colour.end());
    return makeImage(side, side, static_cast<std::int64_t>(colour.size()), pixels);
}

void writeBytes(const std::filesystem::path& file, const std::string& bytes)
{
    std::ofstream(file, std::ios::binary) << bytes;
}

// What a DataError says, or "" when `call` throws none.
template <typename Call>
QString dataError(Call call)
{
    try {
        call();
    } catch (const DataError& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

class VectorDataset : public Dataset {
public:
    explicit VectorDataset(std::vector<Example> examples) : m_examples(std::move(examples)) {}
    std::int64_t size() const override { return static_cast<std::int64_t>(m_examples.size()); }
    Example get(std::int64_t index) const override { return m_examples.at(static_cast<std::size_t>(index)); }

private:
    std::vector<Example> m_examples;
};

}  // namespace

class TestImages : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void pngRoundTrip();
    void greyPngBecomesRgb();
    void jpegDecodesCloseToItsColour();
    void corruptFilesNameTheFile_data();
    void corruptFilesNameTheFile();
    void fitCropsTheCentreAndAverages();
    void rgbToGreyIsLuma();
    void flipReversesColumns();
    void cropWithPaddingKeepsTheSizeAndShiftsTheImage();
    void augmentationFollowsItsSeed();
    void mixupMixesEachPictureWithTheOneBefore();
    void inceptionCropsResizeARegionOfThePicture();
    void mixupWeightsAreBetaDistributed();
    void evaluationBatchesAreNormalisedAndNeverAugmented();
    void statsOfKnownImages();
    void shapesAreDeterministicAndBalanced();
    void imageFolderClassesAndSplits();
    void imageFolderErrors();
    void damagedImagesAreNamedOrLeftOut();
    void cifarRecordsAndErrors();
    void probeEntries();
};

void TestImages::pngRoundTrip()
{
    if (!hasPngSupport())
        QSKIP("built without libpng");
    QTemporaryDir dir;
    const Image image = makeImage(3, 2, 3, {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90});
    writePng(image, pathIn(dir, "a.png"));
    const Image read = decodeImageFile(pathIn(dir, "a.png"));
    QCOMPARE(read.width, std::int64_t{3});
    QCOMPARE(read.height, std::int64_t{2});
    QCOMPARE(read.channels, std::int64_t{3});
    QVERIFY(read.pixels == image.pixels);
}

void TestImages::greyPngBecomesRgb()
{
    if (!hasPngSupport())
        QSKIP("built without libpng");
    QTemporaryDir dir;
    writePng(makeImage(2, 1, 1, {7, 200}), pathIn(dir, "grey.png"));
    const Image grey = decodeImageFile(pathIn(dir, "grey.png"));
    QCOMPARE(grey.channels, std::int64_t{1});
    const Image rgb = withChannels(grey, 3);
    QVERIFY(rgb.pixels == (std::vector<std::uint8_t>{7, 7, 7, 200, 200, 200}));
}

void TestImages::jpegDecodesCloseToItsColour()
{
    if (!hasJpegSupport())
        QSKIP("built without libjpeg");
    QTemporaryDir dir;
    // A uniform 16x16 colour survives JPEG within a few levels; the extension is
    // irrelevant (the decoder reads the signature).
    writeJpeg(uniform(16, {200, 40, 90}), pathIn(dir, "a.JPEG"), 95);
    const Image read = decodeImageFile(pathIn(dir, "a.JPEG"));
    QCOMPARE(read.width, std::int64_t{16});
    QCOMPARE(read.channels, std::int64_t{3});
    const int expected[3] = {200, 40, 90};
    for (std::size_t i = 0; i < read.pixels.size(); ++i)
        QVERIFY2(std::abs(int(read.pixels[i]) - expected[i % 3]) <= 4, qPrintable(QString::number(read.pixels[i])));
}

void TestImages::corruptFilesNameTheFile_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("reason");
    QTest::newRow("text") << QByteArray("hello, not an image") << "neither a PNG nor a JPEG";
    QTest::newRow("empty") << QByteArray() << "empty file";
    QTest::newRow("PNG signature, then junk")
        << QByteArray("\x89PNG\r\n\x1a\n" "garbage garbage garbage garbage", 39) << "corrupt PNG";
    QTest::newRow("JPEG signature, then junk") << QByteArray("\xff\xd8\xff\x01junkjunkjunkjunk", 20) << "corrupt JPEG";
}

void TestImages::corruptFilesNameTheFile()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const auto file = pathIn(dir, "broken.png");
    writeBytes(file, bytes.toStdString());
    const QString error = dataError([&] { decodeImageFile(file); });
    QVERIFY2(error.contains(QString::fromStdString(file.string())), qPrintable(error));
    QVERIFY2(error.contains(reason), qPrintable(error));
    QVERIFY(dataError([&] { decodeImageFile(pathIn(dir, "missing.png")); }).contains("missing.png"));
}

void TestImages::fitCropsTheCentreAndAverages()
{
    // 4x2 grey: the centre square is columns 1-2; shrunk to 1x1 it is their mean.
    const Image wide = makeImage(4, 2, 1, {0, 10, 30, 255, 0, 20, 40, 255});
    const Image one = fitImage(wide, 1);
    QCOMPARE(one.pixels.size(), std::size_t{1});
    QCOMPARE(int(one.pixels[0]), 25);  // (10 + 30 + 20 + 40) / 4
    // 4x4 to 2x2: each output pixel is the mean of a 2x2 block.
    const Image square = makeImage(4, 4, 1, {0, 2, 100, 100, 4, 6, 100, 100, 8, 8, 50, 52, 8, 8, 54, 56});
    const Image half = fitImage(square, 2);
    QVERIFY(half.pixels == (std::vector<std::uint8_t>{3, 100, 8, 53}));
    // Enlarging keeps a uniform image uniform.
    const Image big = fitImage(uniform(2, {9, 99, 199}), 5);
    QCOMPARE(big.width, std::int64_t{5});
    for (std::size_t i = 0; i < big.pixels.size(); i += 3)
        QVERIFY(big.pixels[i] == 9 && big.pixels[i + 1] == 99 && big.pixels[i + 2] == 199);
}

void TestImages::rgbToGreyIsLuma()
{
    const Image grey = withChannels(makeImage(2, 1, 3, {255, 0, 0, 0, 0, 255}), 1);
    QVERIFY(grey.pixels == (std::vector<std::uint8_t>{76, 29}));  // 0.299 * 255, 0.114 * 255
}

void TestImages::flipReversesColumns()
{
    const Image image = makeImage(3, 2, 1, {1, 2, 3, 4, 5, 6});
    QVERIFY(flipImage(image).pixels == (std::vector<std::uint8_t>{3, 2, 1, 6, 5, 4}));
    const Image rgb = makeImage(2, 1, 3, {1, 2, 3, 4, 5, 6});
    QVERIFY(flipImage(rgb).pixels == (std::vector<std::uint8_t>{4, 5, 6, 1, 2, 3}));
}

void TestImages::cropWithPaddingKeepsTheSizeAndShiftsTheImage()
{
    // Distinct values 1..64 on 8x8, so that a shift can be read back.
    std::vector<std::uint8_t> pixels(64);
    for (std::size_t i = 0; i < 64; ++i)
        pixels[i] = static_cast<std::uint8_t>(i + 1);
    const Image image = makeImage(8, 8, 1, pixels);
    bool sawShift = false;
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
        DataRandom random(seed);
        const Image out = augmentImage(image, 2, false, random);
        QCOMPARE(out.width, std::int64_t{8});
        QCOMPARE(out.pixels.size(), std::size_t{64});
        // One offset (dx, dy) in -2..2 explains every pixel: the source pixel, or 0 outside.
        bool explained = false;
        for (int dy = -2; dy <= 2 && !explained; ++dy) {
            for (int dx = -2; dx <= 2 && !explained; ++dx) {
                bool all = true;
                for (int y = 0; y < 8 && all; ++y)
                    for (int x = 0; x < 8 && all; ++x) {
                        const int sx = x + dx, sy = y + dy;
                        const int want = sx < 0 || sy < 0 || sx >= 8 || sy >= 8 ? 0 : pixels[static_cast<std::size_t>(sy * 8 + sx)];
                        all = out.pixels[static_cast<std::size_t>(y * 8 + x)] == want;
                    }
                if (all) {
                    explained = true;
                    sawShift = sawShift || dx != 0 || dy != 0;
                }
            }
        }
        QVERIFY2(explained, qPrintable(QString("seed %1").arg(seed)));
    }
    QVERIFY(sawShift);
    // No padding and no flip: unchanged.
    DataRandom random(1);
    QVERIFY(augmentImage(image, 0, false, random).pixels == pixels);
}

void TestImages::augmentationFollowsItsSeed()
{
    const ImageFormat format{8, 3};
    const auto shapes = makeShapesDataset(16, 3, Split::Train, format);
    std::vector<Example> examples;
    for (std::int64_t i = 0; i < 16; ++i)
        examples.push_back(shapes->get(i));
    const ImageStats stats{{0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}, 1};
    const ImageAugmentation a{2, true, 11}, b{2, true, 12};
    const Batch first = makeImageBatch(examples, format, stats, &a);
    const Batch again = makeImageBatch(examples, format, stats, &a);
    const Batch other = makeImageBatch(examples, format, stats, &b);
    const Batch plain = makeImageBatch(examples, format, stats);
    QVERIFY(torch::equal(first.pixels, again.pixels));
    QVERIFY(!torch::equal(first.pixels, other.pixels));
    QVERIFY(!torch::equal(first.pixels, plain.pixels));
    QCOMPARE(first.pixels.sizes(), (std::vector<std::int64_t>{16, 3, 8, 8}));
    QVERIFY(!first.ids.defined() && !first.mask.defined());
}

// Three grey 2x2 pictures of 0, 100 and 200, mean 0 and std 1: picture b becomes
// w x its own + (1 - w) x the one before it (the first: the last), w >= 1/2 the batch's
// one weight; the partners' labels are 2, 0, 1. Evaluation and alpha 0 mix nothing.
void TestImages::mixupMixesEachPictureWithTheOneBefore()
{
    std::vector<Example> examples;
    for (int i = 0; i < 3; ++i) {
        Example example;
        example.label = i;
        example.pixels.assign(4, static_cast<std::uint8_t>(100 * i));
        examples.push_back(example);
    }
    const ImageFormat format{2, 1};
    const ImageStats stats{{0.0}, {1.0}, 1};
    ImageAugmentation mix{0, false, 7, 0, 0.5};
    const Batch batch = makeImageBatch(examples, format, stats, &mix);
    const double w = batch.mixWeight;
    QVERIFY2(w >= 0.5 && w < 1.0, qPrintable(QString::number(w)));
    QVERIFY(torch::equal(batch.targets, torch::tensor({0, 1, 2}, torch::kInt64)));
    QVERIFY(torch::equal(batch.mixTargets, torch::tensor({2, 0, 1}, torch::kInt64)));
    const double v[3] = {0.0, 100.0 / 255.0, 200.0 / 255.0};
    for (int b = 0; b < 3; ++b) {
        const double expected = w * v[b] + (1.0 - w) * v[(b + 2) % 3];
        QVERIFY2((batch.pixels[b] - expected).abs().max().item<double>() < 1e-6, qPrintable(QString::number(b)));
    }
    // Another batch seed, another weight; the same seed, the same.
    QCOMPARE(makeImageBatch(examples, format, stats, &mix).mixWeight, w);
    mix.seed = 8;
    QVERIFY(makeImageBatch(examples, format, stats, &mix).mixWeight != w);
    mix.mixup = 0.0;
    QVERIFY(!makeImageBatch(examples, format, stats, &mix).mixTargets.defined());
    QVERIFY(!makeImageBatch(examples, format, stats).mixTargets.defined());
}

// Known pixels: at least the whole area, the crop is the picture itself; a flat
// picture stays flat; a horizontal ramp (value 16 x column) stays a ramp within its
// range: each row the same, never decreasing along a row, and a small region
// stretched over the picture spans less of the range than the whole.
void TestImages::inceptionCropsResizeARegionOfThePicture()
{
    Image ramp;
    ramp.width = ramp.height = 16;
    ramp.channels = 1;
    for (int y = 0; y < 16; ++y)
        for (int x = 0; x < 16; ++x)
            ramp.pixels.push_back(static_cast<std::uint8_t>(16 * x));
    DataRandom random(3);
    QVERIFY(inceptionCrop(ramp, 1.0, random).pixels == ramp.pixels);
    Image flat = ramp;
    std::fill(flat.pixels.begin(), flat.pixels.end(), std::uint8_t{77});
    QVERIFY(inceptionCrop(flat, 0.08, random).pixels == flat.pixels);
    int narrower = 0;
    for (int draw = 0; draw < 20; ++draw) {
        const Image out = inceptionCrop(ramp, 0.08, random);
        for (int y = 1; y < 16; ++y)
            QVERIFY(std::equal(out.pixels.begin(), out.pixels.begin() + 16, out.pixels.begin() + 16 * y));
        for (int x = 1; x < 16; ++x)
            QVERIFY(out.pixels[static_cast<std::size_t>(x)] >= out.pixels[static_cast<std::size_t>(x - 1)]);
        narrower += out.pixels[15] - out.pixels[0] < 240 ? 1 : 0;
    }
    QVERIFY2(narrower >= 12, qPrintable(QString::number(narrower)));  // area 0.08-1: mostly a part of the width
    // The same seed, the same crop; in a batch, as an augmentation of its own.
    DataRandom a(9), b(9);
    QVERIFY(inceptionCrop(ramp, 0.3, a).pixels == inceptionCrop(ramp, 0.3, b).pixels);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, inceptionCrop(ramp, 0.0, a));
    Example example;
    example.label = 1;
    example.pixels = ramp.pixels;
    const ImageStats stats{{0.0}, {1.0}, 1};
    ImageAugmentation crop{0, false, 5, 0, 0.0, 0.2};
    const Batch cropped = makeImageBatch({example}, ImageFormat{16, 1}, stats, &crop);
    QVERIFY(!torch::equal(cropped.pixels, makeImageBatch({example}, ImageFormat{16, 1}, stats).pixels));
}

// Beta(a, a) has mean 1/2 and variance 1 / (4 (2a + 1)): 1/8 for a = 1/2, 1/12 for a = 1
// (the uniform); over 20,000 draws within 0.01 and 0.005.
void TestImages::mixupWeightsAreBetaDistributed()
{
    for (const double alpha : {0.5, 1.0}) {
        DataRandom random(42);
        double sum = 0.0, squares = 0.0;
        const int n = 20000;
        for (int i = 0; i < n; ++i) {
            const double x = symmetricBeta(alpha, random);
            QVERIFY(x >= 0.0 && x <= 1.0);
            sum += x;
            squares += x * x;
        }
        const double mean = sum / n, variance = squares / n - mean * mean;
        QVERIFY2(std::abs(mean - 0.5) < 0.01, qPrintable(QString::number(mean)));
        QVERIFY2(std::abs(variance - 1.0 / (4.0 * (2.0 * alpha + 1.0))) < 0.005, qPrintable(QString::number(variance)));
    }
    DataRandom random(1);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, symmetricBeta(0.0, random));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, symmetricBeta(1.5, random));
}

void TestImages::evaluationBatchesAreNormalisedAndNeverAugmented()
{
    // One 2x2 RGB image with known values; mean 0.5 and std 0.25 on every channel.
    Example example;
    example.label = 4;
    example.pixels = {0, 255, 51, 255, 0, 102, 0, 0, 0, 255, 255, 255};
    const ImageStats stats{{0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}, 1};
    const Batch batch = makeImageBatch({example, example}, ImageFormat{2, 3}, stats);
    QCOMPARE(batch.pixels.sizes(), (std::vector<std::int64_t>{2, 3, 2, 2}));
    QCOMPARE(batch.targets[0].item<std::int64_t>(), std::int64_t{4});
    // Channel 0 (red) of pixels (0,0), (0,1), (1,0), (1,1): 0, 255, 0, 255 -> -2, 2, -2, 2.
    const torch::Tensor red = batch.pixels[0][0].reshape({-1});
    QVERIFY(torch::allclose(red, torch::tensor({-2.0f, 2.0f, -2.0f, 2.0f})));
    // Channel 2 (blue) of pixel (0,0): 51 / 255 = 0.2 -> (0.2 - 0.5) / 0.25 = -1.2.
    QVERIFY(std::abs(batch.pixels[0][2][0][0].item<float>() + 1.2f) < 1e-5f);
    QVERIFY(torch::equal(batch.pixels[0], batch.pixels[1]));
    // A bad example is an error, not a crash.
    Example short_ = example;
    short_.pixels.pop_back();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeImageBatch({short_}, ImageFormat{2, 3}, stats));
}

void TestImages::statsOfKnownImages()
{
    Example black, white;
    black.label = white.label = 0;
    black.pixels.assign(2 * 2 * 3, 0);
    white.pixels.assign(2 * 2 * 3, 255);
    const VectorDataset data({black, white, black, white});
    const ImageStats stats = imageStats(data, 3);
    QCOMPARE(stats.images, std::int64_t{4});
    for (int c = 0; c < 3; ++c) {
        QVERIFY(std::abs(stats.mean[static_cast<std::size_t>(c)] - 0.5) < 1e-12);
        QVERIFY(std::abs(stats.std[static_cast<std::size_t>(c)] - 0.5) < 1e-12);
    }
    const ImageStats back = ImageStats::fromJson(stats.toJson(), 3, "image.json");
    QVERIFY(back.mean == stats.mean && back.std == stats.std);
    QVERIFY(dataError([&] { ImageStats::fromJson(stats.toJson(), 1, "image.json"); }).contains("image.json"));
}

void TestImages::shapesAreDeterministicAndBalanced()
{
    const ImageFormat format{32, 3};
    const auto a = makeShapesDataset(200, 5, Split::Train, format);
    const auto b = makeShapesDataset(200, 5, Split::Train, format);
    const auto validation = makeShapesDataset(200, 5, Split::Validation, format);
    const auto otherSeed = makeShapesDataset(200, 6, Split::Train, format);
    std::map<std::int64_t, int> counts;
    for (std::int64_t i = 0; i < 200; ++i) {
        const Example x = a->get(i);
        QVERIFY(x.pixels == b->get(i).pixels);
        QCOMPARE(x.pixels.size(), std::size_t{32 * 32 * 3});
        ++counts[x.label];
    }
    QCOMPARE(int(counts.size()), 10);
    for (const auto& [label, count] : counts)
        QCOMPARE(count, 20);
    QVERIFY(a->get(0).pixels != validation->get(0).pixels);
    QVERIFY(a->get(0).pixels != otherSeed->get(0).pixels);
    QCOMPARE(int(shapeNames().size()), 10);
    // Grey images come from the same drawing.
    const auto grey = makeShapesDataset(10, 5, Split::Train, ImageFormat{32, 1});
    QCOMPARE(grey->get(3).pixels.size(), std::size_t{32 * 32});
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, a->get(200));
}

void TestImages::imageFolderClassesAndSplits()
{
    if (!hasPngSupport() || !hasJpegSupport())
        QSKIP("built without libpng or libjpeg");
    QTemporaryDir dir;
    const auto root = pathIn(dir, "pets");
    for (const char* name : {"dog", "cat"})
        std::filesystem::create_directories(root / name);
    for (int i = 0; i < 10; ++i) {
        char cat[16], dog[16];
        std::snprintf(cat, sizeof cat, "c%d.png", i);
        std::snprintf(dog, sizeof dog, "d%d.jpg", i);
        writePng(uniform(6, {255, 0, 0}), root / "cat" / cat);
        writeJpeg(uniform(12, {0, 0, 255}), root / "dog" / dog);
    }
    writeBytes(root / "dog" / "notes.txt", "not an image, ignored");
    const ImageFolder folder(root, {0.2, 0.2}, 1, ImageFormat{4, 3});
    QCOMPARE(folder.labels(), (std::vector<std::string>{"cat", "dog"}));
    QCOMPARE(folder.files(Split::Train) + folder.files(Split::Validation) + folder.files(Split::Test), std::int64_t{20});
    // Every example is 4x4 RGB, red for cats, blue for dogs.
    for (const Split split : {Split::Train, Split::Validation, Split::Test}) {
        const auto data = folder.dataset(split);
        for (std::int64_t i = 0; i < data->size(); ++i) {
            const Example x = data->get(i);
            QCOMPARE(x.pixels.size(), std::size_t{4 * 4 * 3});
            const bool red = x.pixels[0] > 200 && x.pixels[2] < 30;
            QCOMPARE(red, x.label == 0);
        }
    }
    // Decoded once: after a first read, the example no longer depends on the file
    // (every cat painted green on disk; the dataset read before still says red).
    const auto train = folder.dataset(Split::Train);
    std::vector<std::vector<std::uint8_t>> before;
    for (std::int64_t i = 0; i < train->size(); ++i)
        before.push_back(train->get(i).pixels);
    for (int i = 0; i < 10; ++i) {
        char cat[16];
        std::snprintf(cat, sizeof cat, "c%d.png", i);
        writePng(uniform(6, {0, 255, 0}), root / "cat" / cat);
    }
    for (std::int64_t i = 0; i < train->size(); ++i)
        QCOMPARE(train->get(i).pixels, before[static_cast<std::size_t>(i)]);
    // A dataset made afterwards decodes the files as they are now.
    const auto fresh = folder.dataset(Split::Train);
    bool green = false;
    for (std::int64_t i = 0; i < fresh->size(); ++i)
        green = green || (fresh->get(i).label == 0 && fresh->get(i).pixels[1] > 200);
    QVERIFY(green);

    // The same seed gives the same split; grey format converts.
    const ImageFolder again(root, {0.2, 0.2}, 1, ImageFormat{4, 1});
    QCOMPARE(again.files(Split::Validation), folder.files(Split::Validation));
    QCOMPARE(again.dataset(Split::Train)->get(0).pixels.size(), std::size_t{16});
}

void TestImages::imageFolderErrors()
{
    if (!hasPngSupport())
        QSKIP("built without libpng");
    QTemporaryDir dir;
    const auto root = pathIn(dir, "data");
    std::filesystem::create_directories(root / "only");
    writePng(uniform(4, {1, 2, 3}), root / "only" / "a.png");
    QVERIFY(dataError([&] { ImageFolder(root, {0.1, 0.1}, 0, ImageFormat{}); }).contains("at least 2"));
    std::filesystem::create_directories(root / "empty");
    const QString empty = dataError([&] { ImageFolder(root, {0.1, 0.1}, 0, ImageFormat{}); });
    QVERIFY2(empty.contains(QString::fromStdString((root / "empty").string())) && empty.contains("no PNG or JPEG"),
             qPrintable(empty));
    writeBytes(root / "empty" / "broken.png", "this is text");
    const ImageFolder folder(root, {0.0, 0.0}, 0, ImageFormat{4, 3});
    const auto train = folder.dataset(Split::Train);
    QString corrupt;
    for (std::int64_t i = 0; i < train->size(); ++i)
        corrupt += dataError([&] { train->get(i); });
    QVERIFY2(corrupt.contains("broken.png"), qPrintable(corrupt));
    QVERIFY(dataError([&] { ImageFolder(pathIn(dir, "nowhere"), {0.1, 0.1}, 0, ImageFormat{}); }).contains("not a folder"));
    QVERIFY(dataError([&] { ImageFolder(root, {0.1, 0.1}, 0, ImageFormat{4, 3}, {"a", "b"}); }).contains("labels.json"));
}

// decodeAll (what a trainer does before its first step): a damaged PNG, a JPEG
// cut short and a text file named .png are each named, or left out and listed
// with skip; the images that remain keep their order and labels.
void TestImages::damagedImagesAreNamedOrLeftOut()
{
    if (!hasPngSupport() || !hasJpegSupport())
        QSKIP("built without libpng or libjpeg");
    QTemporaryDir dir;
    const auto root = pathIn(dir, "data");
    std::filesystem::create_directories(root / "cats");
    std::filesystem::create_directories(root / "dogs");
    writePng(uniform(8, {10, 20, 30}), root / "cats" / "a.png");
    writePng(uniform(8, {40, 50, 60}), root / "cats" / "b.png");
    writeJpeg(uniform(8, {200, 40, 90}), root / "dogs" / "c.jpg", 95);
    writeJpeg(uniform(32, {90, 40, 200}), root / "dogs" / "cut.jpg", 95);
    std::filesystem::resize_file(root / "dogs" / "cut.jpg", std::filesystem::file_size(root / "dogs" / "cut.jpg") / 2);
    writeBytes(root / "cats" / "text.png", "this is text");
    const ImageFormat format{4, 3};

    ImageFolder refusing(root, {0.0, 0.0}, 0, format);
    const QString refused = dataError([&] { refusing.decodeAll(/*skip=*/false); });
    QVERIFY2(refused.contains("task.skip_bad_inputs") && (refused.contains("text.png") || refused.contains("cut.jpg")),
             qPrintable(refused));

    ImageFolder skipping(root, {0.0, 0.0}, 0, format);
    const std::vector<std::string> leftOut = skipping.decodeAll(/*skip=*/true);
    QCOMPARE(leftOut.size(), std::size_t{2});
    QVERIFY2(QString::fromStdString(leftOut[0]).contains("text.png"), leftOut[0].c_str());  // cats before dogs
    QVERIFY2(QString::fromStdString(leftOut[1]).contains("cut.jpg"), leftOut[1].c_str());
    QCOMPARE(skipping.files(Split::Train), std::int64_t{3});
    const auto train = skipping.dataset(Split::Train);
    QCOMPARE(train->size(), std::int64_t{3});
    QCOMPARE(train->get(0).label, std::int64_t{0});  // a.png
    QCOMPARE(train->get(1).label, std::int64_t{0});  // b.png
    QCOMPARE(train->get(2).label, std::int64_t{1});  // c.jpg
    QCOMPARE(train->get(1).pixels[0], std::uint8_t{40});
}

void TestImages::cifarRecordsAndErrors()
{
    QTemporaryDir dir;
    const auto root = pathIn(dir, "cifar-10-batches-bin");
    std::filesystem::create_directories(root);
    constexpr std::int64_t fileBytes = Cifar10::kRecordsPerFile * Cifar10::kRecordBytes;
    for (const std::string& name : Cifar10::fileNames()) {
        { std::ofstream(root / name, std::ios::binary); }
        std::filesystem::resize_file(root / name, fileBytes);  // zero records: label 0, black
    }
    // Record 1 of data_batch_1.bin: label 3 (cat), pixel (0,0) = (10, 20, 30) in its planes.
    {
        std::fstream file(root / "data_batch_1.bin", std::ios::binary | std::ios::in | std::ios::out);
        file.seekp(Cifar10::kRecordBytes);
        std::string record(static_cast<std::size_t>(Cifar10::kRecordBytes), '\0');
        record[0] = 3;
        record[1] = 10;
        record[1 + 1024] = 20;
        record[1 + 2048] = 30;
        file.write(record.data(), static_cast<std::streamsize>(record.size()));
    }
    const Cifar10 cifar(root, 0.0, 0, ImageFormat{32, 3});
    QCOMPARE(cifar.records(Split::Train), std::int64_t{50000});
    QCOMPARE(cifar.records(Split::Test), std::int64_t{10000});
    const Example cat = cifar.dataset(Split::Train)->get(1);
    QCOMPARE(cat.label, std::int64_t{3});
    QVERIFY(cat.pixels[0] == 10 && cat.pixels[1] == 20 && cat.pixels[2] == 30 && cat.pixels[3] == 0);
    QCOMPARE(Cifar10::classNames()[3], std::string("cat"));
    const Cifar10 carved(root, 0.1, 0, ImageFormat{16, 1});
    QVERIFY(carved.records(Split::Validation) > 4000 && carved.records(Split::Validation) < 6000);
    QCOMPARE(carved.records(Split::Train) + carved.records(Split::Validation), std::int64_t{50000});
    QCOMPARE(carved.dataset(Split::Test)->get(0).pixels.size(), std::size_t{16 * 16});

    std::filesystem::resize_file(root / "test_batch.bin", fileBytes - 1);
    const QString size = dataError([&] { Cifar10(root, 0.1, 0, ImageFormat{}); });
    QVERIFY2(size.contains("test_batch.bin") && size.contains("30729999 bytes"), qPrintable(size));
    std::filesystem::remove(root / "data_batch_3.bin");
    const QString missing = dataError([&] { Cifar10(root, 0.1, 0, ImageFormat{}); });
    QVERIFY2(missing.contains("data_batch_3.bin") && missing.contains("missing"), qPrintable(missing));
}

void TestImages::probeEntries()
{
    const ImageFormat format{8, 3};
    const auto validation = makeShapesDataset(5, 0, Split::Validation, format);
    std::int64_t label = -1;
    const Image image = probeImage("validation:3", validation.get(), format, label);
    QCOMPARE(label, std::int64_t{3});
    QVERIFY(image.pixels == validation->get(3).pixels);
    QVERIFY(dataError([&] { probeImage("validation:5", validation.get(), format, label); }).contains("has 5 images"));
    QVERIFY(dataError([&] { probeImage("validation:x", validation.get(), format, label); }).contains("validation:N"));
    QVERIFY(dataError([&] { probeImage("/no/such/image.png", validation.get(), format, label); })
                .contains("/no/such/image.png"));
}

QTEST_GUILESS_MAIN(TestImages)
#include "tst_images.moc"
