// Tests of export/Safetensors: the header of a tiny file worked out by hand (its JSON
// byte for byte, the offsets, the padding), the data bytes, the dtype names, and the
// errors for a dtype the format lacks and an unwritable file. tests/app's
// safetensors_roundtrip reads real exports with the `safetensors` package.
// And of the export as one unit (export/ExportSet, runtime/Sha256): the standard's
// digests, the record, an export killed between its renames, two at once.
#include "runtime/Sha256.h"
#include "run/Checkpoint.h"
#include "export/ExportSet.h"
#include "export/Safetensors.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>
#include <thread>

using namespace widelab;

namespace {

// "n": int64 [1, 1] = 5, "w": float32 [2] = {1, 2}, inserted out of order.
SafetensorsTensors tiny()
{
    SafetensorsTensors tensors;
    tensors.emplace("w", torch::tensor({1.0f, 2.0f}));
    tensors.emplace("n", torch::full({1, 1}, 5, torch::kInt64));
    return tensors;
}

std::string bytesOf(std::initializer_list<unsigned> values)
{
    std::string bytes;
    for (const unsigned value : values)
        bytes.push_back(static_cast<char>(value));
    return bytes;
}

}  // namespace

class TestSafetensors : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void headerOfTwoTensorsByHand();
    void wholeFileByHand();
    void headerIsPaddedToEight();
    void dtypeNames();
    void strangeLayoutsAreWrittenInOrder();
    void unwritableFileIsNamed();
    void sha256GivesTheStandardsDigests();
    void exportRecordsEveryFilesDigest();
    void exportKilledBetweenItsRenamesIsDetected();
    void twoExportsToOneNameNeverMix();
};

// Names sorted ("n" before "w"), offsets from the first data byte, the metadata last;
// 141 bytes of JSON padded with 3 spaces to 144.
void TestSafetensors::headerOfTwoTensorsByHand()
{
    const std::string json = R"({"n":{"dtype":"I64","shape":[1,1],"data_offsets":[0,8]},)"
                             R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
                             R"("__metadata__":{"format":"pt"}})";
    QCOMPARE(json.size(), std::size_t{141});
    QCOMPARE(safetensorsHeader(tiny(), {{"format", "pt"}}), json + "   ");
    // Without metadata the key is left out: 110 bytes of JSON, 2 spaces.
    const std::string bare = safetensorsHeader(tiny(), {});
    QCOMPARE(bare, json.substr(0, 109) + "}  ");
}

void TestSafetensors::wholeFileByHand()
{
    const std::string file = safetensorsBytes(tiny(), {{"format", "pt"}});
    QCOMPARE(file.size(), std::size_t{8 + 144 + 16});
    QCOMPARE(file.substr(0, 8), bytesOf({144, 0, 0, 0, 0, 0, 0, 0}));
    QCOMPARE(file.substr(8, 144), safetensorsHeader(tiny(), {{"format", "pt"}}));
    // n = 5 as int64, then 1.0f (0x3F800000) and 2.0f (0x40000000), little-endian.
    QCOMPARE(file.substr(152), bytesOf({5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3F, 0, 0, 0, 0x40}));
}

// Whatever the metadata's length, the data starts at a multiple of 8 and the header
// is the JSON followed only by spaces.
void TestSafetensors::headerIsPaddedToEight()
{
    for (std::size_t length = 0; length < 16; ++length) {
        const std::string header = safetensorsHeader(tiny(), {{"step", std::string(length, '7')}});
        QCOMPARE(header.size() % 8, std::size_t{0});
        const std::size_t end = header.find_last_not_of(' ');
        QCOMPARE(header[end], '}');
        QVERIFY(header.size() - end - 1 < 8);
        QVERIFY(header.find(std::string(length, '7')) != std::string::npos);
    }
}

void TestSafetensors::dtypeNames()
{
    const std::vector<std::pair<torch::ScalarType, std::string>> names = {
        {torch::kFloat32, "F32"}, {torch::kFloat64, "F64"}, {torch::kInt64, "I64"}, {torch::kInt32, "I32"},
        {torch::kBool, "BOOL"},   {torch::kBFloat16, "BF16"}, {torch::kFloat16, "F16"}, {torch::kUInt8, "U8"}};
    for (const auto& [type, name] : names) {
        QCOMPARE(safetensorsDtype(type), name);
        // Each element takes element_size bytes: the offsets follow from it.
        SafetensorsTensors one;
        one.emplace("x", torch::zeros({3}, type));
        const std::string header = safetensorsHeader(one, {});
        const std::string offsets = "\"data_offsets\":[0," + std::to_string(3 * c10::elementSize(type)) + "]";
        QVERIFY2(header.find(offsets) != std::string::npos, header.c_str());
        QVERIFY2(header.find("\"dtype\":\"" + name + "\"") != std::string::npos, header.c_str());
    }
    try {
        safetensorsDtype(torch::kInt16);
        QFAIL("int16 has no safetensors name here");
    } catch (const SafetensorsError& error) {
        QVERIFY2(std::string(error.what()).find("Short") != std::string::npos, error.what());
    }
    SafetensorsTensors shorts;
    shorts.emplace("s", torch::zeros({2}, torch::kInt16));
    QVERIFY_THROWS_EXCEPTION(SafetensorsError, safetensorsBytes(shorts, {}));
}

// A transposed (non-contiguous) tensor goes in its logical order; a bool tensor as one
// byte each; an empty tensor takes no bytes (begin == end) and a scalar has shape [].
void TestSafetensors::strangeLayoutsAreWrittenInOrder()
{
    SafetensorsTensors tensors;
    tensors.emplace("a", torch::tensor({1, 2, 3, 4}, torch::kUInt8).view({2, 2}).t());
    tensors.emplace("b", torch::tensor({true, false, true}));
    tensors.emplace("c", torch::zeros({0, 4}));
    tensors.emplace("d", torch::tensor(7, torch::kInt32));
    const std::string file = safetensorsBytes(tensors, {});
    std::size_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = length * 256 + static_cast<unsigned char>(file[static_cast<std::size_t>(i)]);
    QCOMPARE(length % 8, std::size_t{0});
    const std::string header = file.substr(8, length);
    QVERIFY2(header.find(R"("c":{"dtype":"F32","shape":[0,4],"data_offsets":[7,7]})") != std::string::npos,
             header.c_str());
    QVERIFY2(header.find(R"("d":{"dtype":"I32","shape":[],"data_offsets":[7,11]})") != std::string::npos,
             header.c_str());
    QCOMPARE(file.substr(8 + length), bytesOf({1, 3, 2, 4, 1, 0, 1, 7, 0, 0, 0}));
}

void TestSafetensors::unwritableFileIsNamed()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path blocker = std::filesystem::path(dir.path().toStdString()) / "file";
    std::ofstream(blocker) << "not a folder";
    const std::filesystem::path target = blocker / "model.safetensors";
    try {
        writeSafetensors(target, tiny(), {});
        QFAIL("wrote into a file as if it were a folder");
    } catch (const CheckpointError& error) {
        QVERIFY2(std::string(error.what()).find(target.string()) != std::string::npos, error.what());
    }
    // A writable place gets exactly safetensorsBytes.
    const std::filesystem::path good = std::filesystem::path(dir.path().toStdString()) / "model.safetensors";
    writeSafetensors(good, tiny(), {{"format", "pt"}});
    std::ostringstream read;
    read << std::ifstream(good, std::ios::binary).rdbuf();
    QCOMPARE(read.str(), safetensorsBytes(tiny(), {{"format", "pt"}}));
}

// FIPS 180-2's examples, the empty message, and the same bytes given in pieces.
void TestSafetensors::sha256GivesTheStandardsDigests()
{
    QCOMPARE(sha256Hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    QCOMPARE(sha256Hex("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const std::string twoBlocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";  // 56 bytes: padding spills
    QCOMPARE(sha256Hex(twoBlocks), std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    const std::string million(1000000, 'a');
    QCOMPARE(sha256Hex(million), std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    Sha256 pieces;
    for (std::size_t at = 0; at < million.size(); at += 999)
        pieces.add(std::string_view(million).substr(at, 999));
    QCOMPARE(pieces.hex(), sha256Hex(million));
}

namespace {

std::string readText(const std::filesystem::path& file)
{
    std::ostringstream read;
    read << std::ifstream(file, std::ios::binary).rdbuf();
    return read.str();
}

// An export "m" of `weights`, with a labels sidecar when `labels` is not empty.
void exportOf(const std::filesystem::path& folder, const std::string& weights, const std::string& labels)
{
    std::vector<ExportFile> files = {{"m.safetensors", weights}};
    if (!labels.empty())
        files.push_back({"m.labels.json", labels});
    const ExportTurn turn(folder, folder / "m.safetensors");
    writeExportSet(turn, files, {{"model", {{"layers", 2}}}}, "m.json", labels.empty() ? std::vector<std::string>{"m.labels.json"} : std::vector<std::string>{});
}

}  // namespace

void TestSafetensors::exportRecordsEveryFilesDigest()
{
    QTemporaryDir dir;
    const std::filesystem::path folder = dir.path().toStdString();
    exportOf(folder, "weights one", R"(["cat", "dog"])");
    const nlohmann::json document = nlohmann::json::parse(readText(folder / "m.json"));
    QCOMPARE(document.at("model").at("layers"), nlohmann::json(2));
    QCOMPARE(document.at("export").at("files").at("m.safetensors"), nlohmann::json(sha256Hex("weights one")));
    QCOMPARE(document.at("export").at("files").at("m.labels.json"), nlohmann::json(sha256Hex(R"(["cat", "dog"])")));
    QVERIFY(exportProblems(folder / "m.json").empty());
    QCOMPARE(std::distance(std::filesystem::directory_iterator(folder), std::filesystem::directory_iterator()),
             std::ptrdiff_t{3});  // no temporary left

    // A changed file is named with both digests' beginnings.
    std::ofstream(folder / "m.labels.json", std::ios::trunc) << R"(["cat", "cow"])";
    const auto problems = exportProblems(folder / "m.json");
    QCOMPARE(problems.size(), std::size_t{1});
    QVERIFY2(problems[0].find((folder / "m.labels.json").string() + ": its contents are not the ones m.json records")
                 != std::string::npos,
             problems[0].c_str());
    // An export without labels replaces one with them: the old sidecar goes.
    exportOf(folder, "weights two", "");
    QVERIFY(!std::filesystem::exists(folder / "m.labels.json"));
    QVERIFY(exportProblems(folder / "m.json").empty());
    // An export of an earlier WideLab records nothing: nothing to check.
    std::ofstream(folder / "old.json") << R"({"model": {}})";
    QVERIFY(exportProblems(folder / "old.json").empty());
}

// A kill after the weights were renamed and before the document was: the
// earlier document's record no longer matches the weights.
void TestSafetensors::exportKilledBetweenItsRenamesIsDetected()
{
    QTemporaryDir dir;
    const std::filesystem::path folder = dir.path().toStdString();
    exportOf(folder, "weights one", R"(["a", "b"])");
    commitStagedFile(stageFile(folder / "m.safetensors", "weights two"), folder / "m.safetensors");
    const std::filesystem::path orphan = stageFile(folder / "m.json", "{}");  // the document, never renamed
    const auto problems = exportProblems(folder / "m.json");
    QCOMPARE(problems.size(), std::size_t{1});
    QVERIFY2(problems[0].find("m.safetensors: its contents are not the ones m.json records") != std::string::npos,
             problems[0].c_str());
    // The next export of the name removes what the killed one left.
    QVERIFY(std::filesystem::exists(orphan));
    exportOf(folder, "weights three", R"(["a", "b"])");
    QVERIFY(!std::filesystem::exists(orphan));
    QVERIFY(exportProblems(folder / "m.json").empty());
}

// Two writers of one name at once: each export is whole, whichever lands last.
void TestSafetensors::twoExportsToOneNameNeverMix()
{
    QTemporaryDir dir;
    const std::filesystem::path folder = dir.path().toStdString();
    auto writer = [&](const std::string& who) {
        for (int i = 0; i < 20; ++i)
            exportOf(folder, std::string(200000, who[0]) + std::to_string(i), "[\"" + who + std::to_string(i) + "\"]");
    };
    std::thread first(writer, "x");
    std::thread second(writer, "y");
    first.join();
    second.join();
    QVERIFY(exportProblems(folder / "m.json").empty());
    const std::string weights = readText(folder / "m.safetensors");
    const std::string labels = readText(folder / "m.labels.json");
    QCOMPARE(labels.substr(2, 1), weights.substr(0, 1));                          // the same writer
    QCOMPARE(labels.substr(3, labels.size() - 5), weights.substr(200000));          // and the same round
}

QTEST_GUILESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
