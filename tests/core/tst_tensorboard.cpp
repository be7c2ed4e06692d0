// Tests of log/TensorBoardWriter (the TFRecord framing and the hand-encoded Event
// protobuf) and of the pictures export/TensorBoardExport draws: CRC-32C against
// published check values, masking and varints worked by hand, one record byte for
// byte, histograms and attention images of known inputs, and the follower of a
// training run writing only the lines appended since. tests/app/tensorboard_roundtrip.py
// reads whole exports back with TensorBoard's own reader.
#include "log/TensorBoardWriter.h"
#include "export/TensorBoardExport.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace widelab;
using namespace widelab::tensorboard;

namespace {

std::string hexOf(const std::string& bytes)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        if (!out.empty())
            out += ' ';
        out += digits[b >> 4];
        out += digits[b & 15];
    }
    return out;
}

std::string varint(std::uint64_t value)
{
    std::string out;
    appendVarint(out, value);
    return hexOf(out);
}

std::string readAll(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

class TestTensorBoard : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void crc32cMatchesPublishedCheckValues();
    void maskingRotatesAndAdds();
    void varintsAreBase128LeastSignificantFirst();
    void aScalarEventIsFramedByteForByte();
    void theFileBeginsWithItsVersionRecord();
    void aSessionStartNamesItsStep();
    void histogramsCountEachValueOnce();
    void attentionImagesTileTheHeads();
    void longMapsAreAveragedDown();
    void probeTagsStayApartAndPlain();
    void anUnwritableFolderIsAnErrorNamingIt();
    void theFollowerWritesOnlyLinesAppendedSince();
};

void TestTensorBoard::crc32cMatchesPublishedCheckValues()
{
    // The check value of CRC-32C (the CRC catalogue's "CRC-32/ISCSI").
    QCOMPARE(crc32c("123456789"), 0xE3069283u);
    QCOMPARE(crc32c(""), 0x00000000u);
    // RFC 3720 (iSCSI), appendix B.4: 32 bytes of 0x00, of 0xFF, and 0x00..0x1F.
    QCOMPARE(crc32c(std::string(32, '\0')), 0x8A9136AAu);
    QCOMPARE(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
    std::string ascending;
    for (int i = 0; i < 32; ++i)
        ascending += static_cast<char>(i);
    QCOMPARE(crc32c(ascending), 0x46DD794Eu);
}

void TestTensorBoard::maskingRotatesAndAdds()
{
    QCOMPARE(maskedCrc(0), 0xA282EAD8u);  // rotating 0 leaves 0
    // 0xE3069283 rotated right by 15: the low 15 bits 0x1283 move to the top
    // (0x25060000), the rest shifts down to 0x0001C60D; 0x2507C60D + 0xA282EAD8.
    QCOMPARE(maskedCrc(0xE3069283u), 0xC78AB0E5u);
    // 1 rotated right by 15 is 1 << 17; the sum wraps past 2^32 for a large CRC.
    QCOMPARE(maskedCrc(1), 0x00020000u + 0xA282EAD8u);
    QCOMPARE(maskedCrc(0x80000000u), 0x00010000u + 0xA282EAD8u);
    QCOMPARE(maskedCrc(0xFFFFFFFFu), 0xA282EAD7u);  // 0xFFFFFFFF + 0xA282EAD8 mod 2^32
}

void TestTensorBoard::varintsAreBase128LeastSignificantFirst()
{
    QCOMPARE(varint(0), std::string("00"));
    QCOMPARE(varint(1), std::string("01"));
    QCOMPARE(varint(127), std::string("7f"));
    QCOMPARE(varint(128), std::string("80 01"));
    QCOMPARE(varint(300), std::string("ac 02"));  // 300 = 0b10_0101100: 0x2C | 0x80, then 0x02
    QCOMPARE(varint(16384), std::string("80 80 01"));
    QCOMPARE(varint(~std::uint64_t{0}), std::string("ff ff ff ff ff ff ff ff ff 01"));
    // A negative int64 is its two's complement, ten bytes.
    ProtoMessage m;
    m.int64(2, -1);
    QCOMPARE(hexOf(m.encoded()), std::string("10 ff ff ff ff ff ff ff ff ff 01"));
}

void TestTensorBoard::aScalarEventIsFramedByteForByte()
{
    // Event { wall_time: 1.0, step: 2, summary { value { tag: "a", simple_value: 0.5 } } }
    Summary summary;
    summary.scalar("a", 0.5);
    const std::string event = summaryEvent(1.0, 2, summary);
    const std::string expectedEvent =
        "09 00 00 00 00 00 00 f0 3f"  // field 1 (wall_time), fixed64: the double 1.0
        " 10 02"                      // field 2 (step), varint 2
        " 2a 0a"                      // field 5 (summary), 10 bytes:
        " 0a 08"                      //   field 1 (value), 8 bytes:
        " 0a 01 61"                   //     field 1 (tag), "a"
        " 15 00 00 00 3f";            //     field 2 (simple_value), fixed32: the float 0.5
    QCOMPARE(hexOf(event), std::string(expectedEvent));

    // The record: 23 as uint64, its masked CRC, the event, the event's masked CRC.
    // The two CRCs are from TensorBoard's own Python implementation
    // (tensorboard.compat.tensorflow_stub.pywrap_tensorflow.masked_crc32c).
    const std::string expectedRecord = std::string("17 00 00 00 00 00 00 00")
                                       + " e7 ce f8 1e "  // masked CRC 0x1EF8CEE7, little-endian
                                       + expectedEvent
                                       + " 40 0a e3 a6";  // masked CRC 0xA6E30A40
    QCOMPARE(hexOf(frameRecord(event)), expectedRecord);
}

void TestTensorBoard::theFileBeginsWithItsVersionRecord()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path folder = std::filesystem::path(dir.path().toStdString()) / "logs" / "run";
    std::filesystem::path file;
    {
        EventWriter writer(folder, 1700000000.75);
        file = writer.file();
        Summary empty;
        writer.write(1700000001.0, 5, empty);  // nothing to write
    }
    QCOMPARE(file.parent_path(), folder);
    QCOMPARE(file.filename().string(), "events.out.tfevents.1700000000." + hostName());
    // wall_time 1700000000.75 = 0x41D954FC40300000; step 0; file_version "brain.Event:2".
    const std::string event = "09 00 00 30 40 fc 54 d9 41 10 00 1a 0d 62 72 61 69 6e 2e 45 76 65 6e 74 3a 32";
    const std::string bytes = readAll(file);
    QCOMPARE(bytes.size(), std::size_t{8 + 4 + 26 + 4});
    QCOMPARE(hexOf(bytes.substr(0, 8)), std::string("1a 00 00 00 00 00 00 00"));
    QCOMPARE(hexOf(bytes.substr(12, 26)), event);

    // A second file in the same second takes a suffix; the first stays.
    EventWriter second(folder, 1700000000.2);
    QCOMPARE(second.file().filename().string(), "events.out.tfevents.1700000000." + hostName() + ".2");
    QCOMPARE(readAll(file), bytes);
}

void TestTensorBoard::aSessionStartNamesItsStep()
{
    // Event { wall_time: 0.0, step: 300, session_log { status: START } }
    QCOMPARE(hexOf(sessionStartEvent(0.0, 300)),
             std::string("09 00 00 00 00 00 00 00 00 10 ac 02 3a 02 08 01"));
}

void TestTensorBoard::histogramsCountEachValueOnce()
{
    const Histogram h = histogramOf({3.0, 0.0, 1.0, 2.0}, 2);
    QCOMPARE(h.min, 0.0);
    QCOMPARE(h.max, 3.0);
    QCOMPARE(h.num, 4.0);
    QCOMPARE(h.sum, 6.0);
    QCOMPARE(h.sumSquares, 14.0);
    // Buckets (0, 1.5] and (1.5, 3]: 0 and 1, then 2 and 3.
    QCOMPARE(h.bucketLimits, (std::vector<double>{1.5, 3.0}));
    QCOMPARE(h.bucketCounts, (std::vector<double>{2.0, 2.0}));
    const Histogram same = histogramOf({1.0, 1.0, 1.0});
    QCOMPARE(same.bucketLimits, (std::vector<double>{1.0}));
    QCOMPARE(same.bucketCounts, (std::vector<double>{3.0}));
    QCOMPARE(histogramOf({}).num, 0.0);

    // On the wire: min, max, num, sum, sum_squares as doubles, then the two packed lists.
    Summary summary;
    summary.histogram("h", histogramOf({2.0}, 1));
    const std::string expected = "0a 46 0a 01 68 2a 41"  // value (70 bytes) { tag "h", histo (65 bytes) {
                                 " 09 00 00 00 00 00 00 00 40"  // min 2.0
                                 " 11 00 00 00 00 00 00 00 40"  // max 2.0
                                 " 19 00 00 00 00 00 00 f0 3f"  // num 1.0
                                 " 21 00 00 00 00 00 00 00 40"  // sum 2.0
                                 " 29 00 00 00 00 00 00 10 40"  // sum_squares 4.0
                                 " 32 08 00 00 00 00 00 00 00 40"  // bucket_limit [2.0]
                                 " 3a 08 00 00 00 00 00 00 f0 3f";  // bucket [1.0]
    QCOMPARE(hexOf(summary.message().encoded()), std::string(expected));
}

void TestTensorBoard::attentionImagesTileTheHeads()
{
    // Three heads of 4 tokens: a 2 x 2 grid of 128-pixel cells (4 tokens x 32 pixels), 2 pixels apart.
    const std::vector<std::vector<float>> identity = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
    const std::vector<std::vector<float>> half = {{0.5f, 0.5f, 0, 0}, {0.5f, 0.5f, 0, 0}, {0, 0, 0.5f, 0.5f}, {0, 0, 0.5f, 0.5f}};
    const Image image = attentionImage({identity, half, identity});
    QCOMPARE(image.channels, std::int64_t{3});
    QCOMPARE(image.width, std::int64_t{2 * 128 + 2});
    QCOMPARE(image.height, std::int64_t{2 * 128 + 2});
    auto pixel = [&](std::int64_t x, std::int64_t y) {
        const auto at = static_cast<std::size_t>((y * image.width + x) * 3);
        return std::vector<int>{image.pixels[at], image.pixels[at + 1], image.pixels[at + 2]};
    };
    const std::vector<int> largest{8, 48, 107}, none{255, 255, 255}, grey{128, 128, 128};
    QCOMPARE(pixel(0, 0), largest);        // head 1, query 1 -> key 1
    QCOMPARE(pixel(127, 127), largest);    // head 1, query 4 -> key 4
    QCOMPARE(pixel(32, 0), none);          // head 1, query 1 -> key 2
    QCOMPARE(pixel(128, 0), grey);         // the gap
    QCOMPARE(pixel(130 + 33, 0), largest); // head 2, its largest weight 0.5 is its darkest
    QCOMPARE(pixel(130 + 64, 0), none);
    QCOMPARE(pixel(5, 130 + 5), largest);  // head 3, second row
    QCOMPARE(pixel(130 + 5, 130 + 5), grey);  // no fourth head
}

void TestTensorBoard::longMapsAreAveragedDown()
{
    // 300 tokens: averaged over blocks of 2 (150 cells), 1 pixel a cell.
    std::vector<std::vector<float>> map(300, std::vector<float>(300, 0.0f));
    map[0][0] = 1.0f;  // the first cell averages 1, 0, 0, 0: a quarter of itself, still the largest
    map[299][298] = 0.5f;
    const Image image = attentionImage({map});
    QCOMPARE(image.width, std::int64_t{150});
    QCOMPARE(image.height, std::int64_t{150});
    QCOMPARE(int(image.pixels[0]), 8);
    // The last cell averages 0.5 over 4 entries = 0.125, half of the largest (0.25):
    // 255 - 0.5 * (255 - 8) = 131.5, rounded away from zero.
    const auto last = static_cast<std::size_t>((149 * 150 + 149) * 3);
    QCOMPARE(int(image.pixels[last]), 132);
}

void TestTensorBoard::probeTagsStayApartAndPlain()
{
    // Seen through the events: a probe's images carry its name in the tag.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path folder(dir.path().toStdString());
    std::filesystem::path file;
    {
        EventWriter writer(folder, 0.0);
        file = writer.file();
        TensorBoardEvents events(writer);
        MetricsRecord record;
        record.type = MetricsRecord::Type::Probe;
        record.probe.text = "a/b";
        record.probe.attention = {{{{1.0f}}}};  // one layer, one head, one token
        events.add(record, 0.0);
        QCOMPARE(events.images(), std::int64_t{hasPngSupport() ? 1 : 0});
    }
    const std::string bytes = readAll(file);
    if (hasPngSupport()) {
        // "a/b" would split TensorBoard's groups: "a_b" and the FNV-1a hash of "a/b".
        QVERIFY(bytes.find("probe/a_b~") != std::string::npos);
        QVERIFY(bytes.find("/attention/layer_1") != std::string::npos);
    }
}

void TestTensorBoard::anUnwritableFolderIsAnErrorNamingIt()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path blocker = std::filesystem::path(dir.path().toStdString()) / "file";
    std::ofstream(blocker) << "not a folder";
    try {
        EventWriter writer(blocker / "run", 0.0);
        QFAIL("a folder under a file was created");
    } catch (const std::runtime_error& error) {
        const std::string what = error.what();
        QVERIFY2(what.find((blocker / "run").string()) != std::string::npos, error.what());
        QVERIFY2(what.find("cannot create") != std::string::npos, error.what());
    }
}

void TestTensorBoard::theFollowerWritesOnlyLinesAppendedSince()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path run = std::filesystem::path(dir.path().toStdString()) / "resumed";
    std::filesystem::create_directory(run);
    std::ofstream(run / "metrics.jsonl") << R"({"type":"train","step":5,"loss":1.5})" << "\n";
    TensorBoardFollower follower(run, std::filesystem::path(dir.path().toStdString()) / "tb", 5);
    QCOMPARE(follower.file().parent_path().filename().string(), std::string("resumed"));
    std::ofstream(run / "metrics.jsonl", std::ios::app)
        << R"({"type":"eval","step":6,"split":"validation","loss":2,"accuracy":0.5})" << "\n";
    follower.onEvaluation({});
    QVERIFY(follower.error().empty());
    const std::string bytes = readAll(follower.file());
    // The version, a SessionLog START at step 6 (10 06 3a 02 08 01 after the wall
    // time), then the new line alone: the step-5 line came before this session.
    QVERIFY(bytes.find("brain.Event:2") != std::string::npos);
    QVERIFY(hexOf(bytes).find("10 06 3a 02 08 01") != std::string::npos);
    QVERIFY(bytes.find("validation/loss") != std::string::npos);
    QVERIFY(bytes.find("train/loss") == std::string::npos);
}

QTEST_GUILESS_MAIN(TestTensorBoard)
#include "tst_tensorboard.moc"
