#include "TensorBoardWriter.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace widelab::tensorboard {
namespace {

// The table of the byte-at-a-time CRC-32C: entry b is the remainder of byte b
// shifted through eight steps of the reflected polynomial.
constexpr std::array<std::uint32_t, 256> crcTable()
{
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t b = 0; b < 256; ++b) {
        std::uint32_t r = b;
        for (int i = 0; i < 8; ++i)
            r = (r & 1u) != 0 ? (r >> 1) ^ 0x82F63B78u : r >> 1;
        table[b] = r;
    }
    return table;
}

constexpr std::array<std::uint32_t, 256> kCrcTable = crcTable();

void appendLittleEndian(std::string& out, std::uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; ++i)
        out += static_cast<char>((value >> (8 * i)) & 0xFFu);
}

// protobuf's wire types
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// Fields of tensorflow.Event, Summary, Summary.Value, Summary.Image,
// HistogramProto and SessionLog (tensorflow/core/util/event.proto,
// tensorflow/core/framework/summary.proto).
namespace event {
constexpr int kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5, kSessionLog = 7;
}
namespace summary {
constexpr int kValue = 1;
}
namespace value {
constexpr int kTag = 1, kSimpleValue = 2, kImage = 4, kHisto = 5;
}
namespace image {
constexpr int kHeight = 1, kWidth = 2, kColorspace = 3, kEncoded = 4;
}
namespace histo {
constexpr int kMin = 1, kMax = 2, kNum = 3, kSum = 4, kSumSquares = 5, kBucketLimit = 6, kBucket = 7;
}
namespace sessionlog {
constexpr int kStatus = 1;
constexpr std::uint64_t kStart = 1;
}

ProtoMessage eventHeader(double wallTime, std::int64_t step)
{
    ProtoMessage event;
    event.fixed64(event::kWallTime, wallTime);
    event.int64(event::kStep, step);
    return event;
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes)
{
    std::uint32_t crc = 0xFFFFFFFFu;
    for (const char c : bytes)
        crc = kCrcTable[(crc ^ static_cast<unsigned char>(c)) & 0xFFu] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

std::uint32_t maskedCrc(std::uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

void appendVarint(std::string& out, std::uint64_t value)
{
    while (value >= 0x80u) {
        out += static_cast<char>((value & 0x7Fu) | 0x80u);
        value >>= 7;
    }
    out += static_cast<char>(value);
}

std::string frameRecord(std::string_view data)
{
    std::string out;
    out.reserve(data.size() + 16);
    appendLittleEndian(out, data.size(), 8);
    appendLittleEndian(out, maskedCrc(crc32c(out)), 4);
    out.append(data);
    appendLittleEndian(out, maskedCrc(crc32c(data)), 4);
    return out;
}

// ---- ProtoMessage

void ProtoMessage::key(int field, int wireType)
{
    appendVarint(m_bytes, (static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(wireType));
}

void ProtoMessage::varint(int field, std::uint64_t value)
{
    key(field, kVarint);
    appendVarint(m_bytes, value);
}

void ProtoMessage::fixed64(int field, double value)
{
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    key(field, kFixed64);
    appendLittleEndian(m_bytes, bits, 8);
}

void ProtoMessage::fixed32(int field, float value)
{
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    key(field, kFixed32);
    appendLittleEndian(m_bytes, bits, 4);
}

void ProtoMessage::bytes(int field, std::string_view value)
{
    key(field, kLengthDelimited);
    appendVarint(m_bytes, value.size());
    m_bytes.append(value);
}

void ProtoMessage::packedDoubles(int field, const std::vector<double>& values)
{
    std::string packed;
    for (const double v : values) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        appendLittleEndian(packed, bits, 8);
    }
    bytes(field, packed);
}

// ---- Histograms and summaries

Histogram histogramOf(const std::vector<double>& values, int buckets)
{
    Histogram h;
    if (values.empty())
        return h;
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    h.min = *low;
    h.max = *high;
    h.num = static_cast<double>(values.size());
    for (const double v : values) {
        h.sum += v;
        h.sumSquares += v * v;
    }
    const int n = h.max > h.min ? std::max(buckets, 1) : 1;
    const double width = (h.max - h.min) / n;
    h.bucketCounts.assign(static_cast<std::size_t>(n), 0.0);
    for (int i = 0; i < n; ++i)
        h.bucketLimits.push_back(i + 1 == n ? h.max : h.min + width * (i + 1));
    for (const double v : values) {
        // The bucket whose upper limit is the first at or above v.
        const auto at = std::lower_bound(h.bucketLimits.begin(), h.bucketLimits.end(), v);
        const auto index = std::min<std::ptrdiff_t>(at - h.bucketLimits.begin(), n - 1);
        h.bucketCounts[static_cast<std::size_t>(index)] += 1.0;
    }
    return h;
}

void Summary::scalar(const std::string& tag, double v)
{
    ProtoMessage entry;
    entry.bytes(value::kTag, tag);
    entry.fixed32(value::kSimpleValue, static_cast<float>(v));
    m_message.message(summary::kValue, entry);
    ++m_values;
}

void Summary::histogram(const std::string& tag, const Histogram& h)
{
    ProtoMessage proto;
    proto.fixed64(histo::kMin, h.min);
    proto.fixed64(histo::kMax, h.max);
    proto.fixed64(histo::kNum, h.num);
    proto.fixed64(histo::kSum, h.sum);
    proto.fixed64(histo::kSumSquares, h.sumSquares);
    proto.packedDoubles(histo::kBucketLimit, h.bucketLimits);
    proto.packedDoubles(histo::kBucket, h.bucketCounts);
    ProtoMessage entry;
    entry.bytes(value::kTag, tag);
    entry.message(value::kHisto, proto);
    m_message.message(summary::kValue, entry);
    ++m_values;
}

void Summary::image(const std::string& tag, std::int64_t width, std::int64_t height, int channels,
                    std::string_view encoded)
{
    ProtoMessage proto;
    proto.int64(image::kHeight, height);
    proto.int64(image::kWidth, width);
    proto.int64(image::kColorspace, channels);
    proto.bytes(image::kEncoded, encoded);
    ProtoMessage entry;
    entry.bytes(value::kTag, tag);
    entry.message(value::kImage, proto);
    m_message.message(summary::kValue, entry);
    ++m_values;
}

// ---- Events

std::string fileVersionEvent(double wallTime)
{
    ProtoMessage event = eventHeader(wallTime, 0);
    event.bytes(event::kFileVersion, "brain.Event:2");
    return event.encoded();
}

std::string summaryEvent(double wallTime, std::int64_t step, const Summary& s)
{
    ProtoMessage event = eventHeader(wallTime, step);
    event.message(event::kSummary, s.message());
    return event.encoded();
}

std::string sessionStartEvent(double wallTime, std::int64_t step)
{
    ProtoMessage log;
    log.varint(sessionlog::kStatus, sessionlog::kStart);
    ProtoMessage event = eventHeader(wallTime, step);
    event.message(event::kSessionLog, log);
    return event.encoded();
}

// ---- EventWriter

std::string hostName()
{
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0')
        return "localhost";
    return name;
}

EventWriter::EventWriter(const std::filesystem::path& directory, double wallTime)
{
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error)
        throw std::runtime_error(directory.string() + ": cannot create the folder (" + error.message() + ")");
    const std::string base = "events.out.tfevents." + std::to_string(static_cast<long long>(std::floor(wallTime)))
                             + "." + hostName();
    // A second file in the same second on the same host takes a suffix rather
    // than replacing the first ("x": create, never open an existing file).
    for (int attempt = 1; m_stream == nullptr; ++attempt) {
        m_file = directory / (attempt == 1 ? base : base + "." + std::to_string(attempt));
        m_stream = std::fopen(m_file.c_str(), "wbx");
        if (m_stream == nullptr && (errno != EEXIST || attempt >= 1000))
            throw std::runtime_error(m_file.string() + ": cannot create (" + std::strerror(errno) + ")");
    }
    writeRecord(fileVersionEvent(wallTime));
}

EventWriter::~EventWriter()
{
    if (m_stream != nullptr)
        std::fclose(m_stream);
}

void EventWriter::write(double wallTime, std::int64_t step, const Summary& summary)
{
    if (!summary.empty())
        writeRecord(summaryEvent(wallTime, step, summary));
}

void EventWriter::sessionStart(double wallTime, std::int64_t step) { writeRecord(sessionStartEvent(wallTime, step)); }

void EventWriter::writeRecord(std::string_view event)
{
    const std::string record = frameRecord(event);
    if (std::fwrite(record.data(), 1, record.size(), m_stream) != record.size() || std::fflush(m_stream) != 0)
        throw std::runtime_error(m_file.string() + ": cannot write (" + std::strerror(errno) + ")");
}

}  // namespace widelab::tensorboard
