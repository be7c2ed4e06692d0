// Tests of Fashion-MNIST (data/FashionMnist): IDX files written here byte by byte, plain and through the gzip
// command, every damaged file an error naming it, pictures fitted to the model's format, deterministic splits, and
// (where Debian's dataset-fashion-mnist is installed) the package's files as counted and read by an independent
// Python reader (labels, a picture's sum and one pixel).
#include "data/FashionMnist.h"
#include "TestSupport.h"

#include <QtTest>

#include <filesystem>
#include <fstream>
#include <numeric>

using namespace widelab;
using widelab::test::thrownMessage;

namespace {

std::string bigEndian(std::uint32_t n)
{
    return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n)};
}

// An IDX file of unsigned bytes: 00 00 08 rank, the dims, the data.
std::string idx(const std::vector<std::uint32_t>& dims, const std::string& data)
{
    std::string bytes{'\0', '\0', '\x08', static_cast<char>(dims.size())};
    for (const std::uint32_t d : dims)
        bytes += bigEndian(d);
    return bytes + data;
}

void write(const std::filesystem::path& file, const std::string& bytes)
{
    std::ofstream(file, std::ios::binary) << bytes;
}

// Picture i of a hand-made set: every pixel i * 10 + 1, but pixel (row 2, column 5) 200.
std::string pictures(std::uint32_t count, std::uint32_t side = 28)
{
    std::string data;
    for (std::uint32_t i = 0; i < count; ++i)
        for (std::uint32_t p = 0; p < side * side; ++p)
            data += static_cast<char>(p == 2 * side + 5 ? 200 : i * 10 + 1);
    return idx({count, side, side}, data);
}

std::string labels(const std::string& values)
{
    return idx({static_cast<std::uint32_t>(values.size())}, values);
}

// A folder of the four files: `train` training pictures labelled 0, 1, ..., 9, 0, ...; 3 test pictures 9, 8, 7.
std::filesystem::path makeFolder(const QTemporaryDir& dir, std::uint32_t train = 40)
{
    const std::filesystem::path root = std::filesystem::path(dir.path().toStdString()) / "fashion";
    std::filesystem::create_directories(root);
    std::string trainLabels;
    for (std::uint32_t i = 0; i < train; ++i)
        trainLabels += static_cast<char>(i % 10);
    write(root / "train-images-idx3-ubyte", pictures(train));
    write(root / "train-labels-idx1-ubyte", labels(trainLabels));
    write(root / "t10k-images-idx3-ubyte", pictures(3));
    write(root / "t10k-labels-idx1-ubyte", labels({9, 8, 7}));
    return root;
}

bool gzip(const std::filesystem::path& file)
{
    return QProcess::execute("gzip", {"-f", QString::fromStdString(file.string())}) == 0;
}

}  // namespace

class TestFashionMnist : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void idxFilesReadTheSamePlainOrGzipped();
    void picturesAreFittedToTheModelsFormat();
    void splitsFollowTheSeedAndTheTestFilesAreTheTestSplit();
    void damagedFilesAreErrorsNamingTheFile_data();
    void damagedFilesAreErrorsNamingTheFile();
    void aMissingFileSaysWhatTheFolderShouldHold();
    void debiansPackageAsAnIndependentReaderSeesIt();
};

void TestFashionMnist::idxFilesReadTheSamePlainOrGzipped()
{
    QTemporaryDir dir;
    const std::filesystem::path root = makeFolder(dir);
    const IdxBytes plain = readIdxFile(root / "train-images-idx3-ubyte", 3);
    QCOMPARE(plain.dims, (std::vector<std::int64_t>{40, 28, 28}));
    QCOMPARE(plain.bytes.size(), std::size_t{40 * 784});
    QCOMPARE(int(plain.bytes[784 * 3]), 31);          // picture 3's first pixel
    QCOMPARE(int(plain.bytes[784 * 3 + 2 * 28 + 5]), 200);
    QVERIFY(gzip(root / "train-images-idx3-ubyte"));
    QVERIFY(!std::filesystem::exists(root / "train-images-idx3-ubyte"));
    const IdxBytes gzipped = readIdxFile(root / "train-images-idx3-ubyte.gz", 3);
    QCOMPARE(gzipped.dims, plain.dims);
    QVERIFY(gzipped.bytes == plain.bytes);
    // The task finds the .gz beside the plain files.
    const FashionMnist fashion(root, 0.25, 1, ImageFormat{28, 1});
    QCOMPARE(fashion.records(Split::Train) + fashion.records(Split::Validation), std::int64_t{40});
}

void TestFashionMnist::picturesAreFittedToTheModelsFormat()
{
    QTemporaryDir dir;
    const std::filesystem::path root = makeFolder(dir);
    const FashionMnist grey(root, 0.0, 0, ImageFormat{28, 1});
    QCOMPARE(grey.records(Split::Train), std::int64_t{40});
    const Example seventh = grey.dataset(Split::Train)->get(7);
    QCOMPARE(seventh.label, std::int64_t{7});
    QCOMPARE(seventh.pixels.size(), std::size_t{784});
    QCOMPARE(int(seventh.pixels[0]), 71);
    QCOMPARE(int(seventh.pixels[2 * 28 + 5]), 200);
    // Three channels repeat the grey value.
    const FashionMnist rgb(root, 0.0, 0, ImageFormat{28, 3});
    const Example colour = rgb.dataset(Split::Train)->get(7);
    QCOMPARE(colour.pixels.size(), std::size_t{784 * 3});
    const std::size_t at = (2 * 28 + 5) * 3;
    QVERIFY(colour.pixels[at] == 200 && colour.pixels[at + 1] == 200 && colour.pixels[at + 2] == 200);
    QVERIFY(colour.pixels[0] == 71 && colour.pixels[1] == 71 && colour.pixels[2] == 71);
    // A picture of one value stays that value at any size (the test split's first picture: 1 but one pixel).
    const FashionMnist small(root, 0.0, 0, ImageFormat{14, 1});
    const Example test = small.dataset(Split::Test)->get(0);
    QCOMPARE(test.pixels.size(), std::size_t{14 * 14});
    QCOMPARE(int(test.pixels[14 * 10 + 10]), 1);
    QCOMPARE(test.label, std::int64_t{9});
    QCOMPARE(FashionMnist::classNames()[9], std::string("Ankle boot"));
}

void TestFashionMnist::splitsFollowTheSeedAndTheTestFilesAreTheTestSplit()
{
    QTemporaryDir dir;
    const std::filesystem::path root = makeFolder(dir, 400);
    const auto labelsOf = [](const Dataset& data) {
        std::vector<std::int64_t> pixels;
        for (std::int64_t i = 0; i < data.size(); ++i)
            pixels.push_back(data.get(i).pixels[0]);
        return pixels;
    };
    const FashionMnist a(root, 0.25, 7, ImageFormat{28, 1}), b(root, 0.25, 7, ImageFormat{28, 1}),
        other(root, 0.25, 8, ImageFormat{28, 1});
    QCOMPARE(a.records(Split::Train) + a.records(Split::Validation), std::int64_t{400});
    QVERIFY2(a.records(Split::Validation) > 60 && a.records(Split::Validation) < 140,
             qPrintable(QString::number(a.records(Split::Validation))));
    QCOMPARE(labelsOf(*a.dataset(Split::Validation)), labelsOf(*b.dataset(Split::Validation)));
    QVERIFY(labelsOf(*a.dataset(Split::Validation)) != labelsOf(*other.dataset(Split::Validation)));
    QCOMPARE(a.records(Split::Test), std::int64_t{3});
    QCOMPARE(a.dataset(Split::Test)->get(2).label, std::int64_t{7});
}

void TestFashionMnist::damagedFilesAreErrorsNamingTheFile_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("reason");
    const auto row = [](const char* name, const char* file, const std::string& bytes, const char* reason) {
        QTest::newRow(name) << file << QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size())) << reason;
    };
    row("not IDX", "train-images-idx3-ubyte", "P5\n28 28\n255\n", "not an IDX file of unsigned bytes with 3 dimensions");
    row("labels as pictures", "train-images-idx3-ubyte", labels({1, 2}), "not an IDX file");
    row("truncated", "train-images-idx3-ubyte", pictures(40).substr(0, 16 + 784 * 40 - 1),
        "31359 bytes of data where its dimensions say 31360");
    row("27x27", "train-images-idx3-ubyte", pictures(40, 27), "pictures of 27x27 pixels");
    row("fewer labels", "train-labels-idx1-ubyte", labels(std::string(39, '\1')), "39 labels for the 40 pictures");
    row("label 10", "t10k-labels-idx1-ubyte", labels({9, 10, 7}), "label 10 at picture 1");
    row("empty", "t10k-images-idx3-ubyte", "", "not an IDX file");
    row("bad gzip", "t10k-images-idx3-ubyte.gz", std::string("\x1f\x8b\x08\x00", 4) + std::string(40, 'x'),
        "t10k-images-idx3-ubyte.gz");
}

void TestFashionMnist::damagedFilesAreErrorsNamingTheFile()
{
    QFETCH(QString, file);
    QFETCH(QByteArray, bytes);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const std::filesystem::path root = makeFolder(dir);
    write(root / file.toStdString(), bytes.toStdString());
    const QString error = thrownMessage([&] { FashionMnist(root, 0.1, 0, ImageFormat{28, 1}); });
    QVERIFY2(error.contains(QString::fromStdString((root / file.toStdString()).string())) && error.contains(reason),
             qPrintable(error));
}

void TestFashionMnist::aMissingFileSaysWhatTheFolderShouldHold()
{
    QTemporaryDir dir;
    const std::filesystem::path root = makeFolder(dir);
    std::filesystem::remove(root / "t10k-labels-idx1-ubyte");
    const QString error = thrownMessage([&] { FashionMnist(root, 0.1, 0, ImageFormat{28, 1}); });
    QVERIFY2(error.contains("t10k-labels-idx1-ubyte.gz: missing") && error.contains("with or without .gz"),
             qPrintable(error));
    // Only Debian's folder names the package (another folder is the user's own copy).
    QVERIFY2(!error.contains("apt install"), qPrintable(error));
    QCOMPARE(FashionMnist::folderOf("").string(), std::string("/usr/share/datasets/fashion-mnist"));
    QCOMPARE(FashionMnist::folderOf("/data/fm").string(), std::string("/data/fm"));
}

void TestFashionMnist::debiansPackageAsAnIndependentReaderSeesIt()
{
    const std::filesystem::path folder = FashionMnist::folderOf("");
    if (!std::filesystem::exists(folder / "t10k-labels-idx1-ubyte.gz"))
        QSKIP("Debian's dataset-fashion-mnist is not installed (packaging/install-deps.sh installs it)");
    // Expected values: Python's gzip module over the same files, written without this reader.
    const IdxBytes trainLabels = readIdxFile(folder / "train-labels-idx1-ubyte.gz", 1);
    QCOMPARE(trainLabels.dims, std::vector<std::int64_t>{60000});
    QCOMPARE(std::vector<std::uint8_t>(trainLabels.bytes.begin(), trainLabels.bytes.begin() + 10),
             (std::vector<std::uint8_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
    const IdxBytes testImages = readIdxFile(folder / "t10k-images-idx3-ubyte.gz", 3);
    QCOMPARE(testImages.dims, (std::vector<std::int64_t>{10000, 28, 28}));
    QCOMPARE(std::accumulate(testImages.bytes.begin(), testImages.bytes.begin() + 784, 0), 33456);

    const FashionMnist fashion(folder, 0.1, 0, ImageFormat{28, 1});
    QCOMPARE(fashion.records(Split::Train) + fashion.records(Split::Validation), std::int64_t{60000});
    QCOMPARE(fashion.records(Split::Test), std::int64_t{10000});
    const Example first = fashion.dataset(Split::Test)->get(0);
    QCOMPARE(first.label, std::int64_t{9});  // an ankle boot
    QCOMPARE(int(first.pixels[14 * 28 + 14]), 110);
}

QTEST_GUILESS_MAIN(TestFashionMnist)
#include "tst_fashionmnist.moc"
