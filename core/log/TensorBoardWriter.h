// defines: tensorboard::crc32c, maskedCrc, appendVarint, frameRecord, ProtoMessage,
// Histogram, Summary, EventWriter: TensorBoard event files written by hand, without
// TensorFlow or a protobuf library (docs/tensorboard.md)
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace widelab::tensorboard {

// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and final
// xor 0xFFFFFFFF), the checksum TFRecord uses; crc32c("123456789") is 0xE3069283.
std::uint32_t crc32c(std::string_view bytes);

// TFRecord's masking of a CRC, so that a CRC stored in data that is itself
// checksummed does not cancel out: rotate right by 15 bits, add 0xA282EAD8.
std::uint32_t maskedCrc(std::uint32_t crc);

// Protobuf's base-128 varint: seven bits a byte, least significant group first,
// the top bit set on every byte but the last (300 -> AC 02).
void appendVarint(std::string& out, std::uint64_t value);

// One TFRecord: the data's length as uint64 little-endian, the masked CRC-32C of
// those 8 bytes, the data, the masked CRC-32C of the data (both uint32 little-endian).
std::string frameRecord(std::string_view data);

// The fields of one protobuf message in the order they are added (proto3 wire
// format: a key varint (field << 3 | wire type), then the value).
class ProtoMessage {
public:
    void varint(int field, std::uint64_t value);            // wire type 0: int32, int64, enums
    void int64(int field, std::int64_t value) { varint(field, static_cast<std::uint64_t>(value)); }
    void fixed64(int field, double value);                  // wire type 1: double
    void fixed32(int field, float value);                   // wire type 5: float
    void bytes(int field, std::string_view value);          // wire type 2: string, bytes
    void message(int field, const ProtoMessage& value) { bytes(field, value.m_bytes); }
    void packedDoubles(int field, const std::vector<double>& values);  // repeated double, packed
    const std::string& encoded() const { return m_bytes; }

private:
    void key(int field, int wireType);
    std::string m_bytes;
};

// TensorFlow's HistogramProto: bucket i counts the values up to bucket_limit[i]
// (and above bucket_limit[i-1]); TensorBoard draws the first bucket from `min`
// and the last up to `max`.
struct Histogram {
    double min = 0.0, max = 0.0, num = 0.0, sum = 0.0, sumSquares = 0.0;
    std::vector<double> bucketLimits;
    std::vector<double> bucketCounts;
};

// Histogram of `values` over `buckets` equal buckets from their smallest to their
// largest value (one bucket when they are all equal; none for no values).
Histogram histogramOf(const std::vector<double>& values, int buckets = 30);

// The values of one event (TensorFlow's Summary): scalars, histograms, images.
class Summary {
public:
    void scalar(const std::string& tag, double value);  // stored as a float, as TensorBoard reads it
    void histogram(const std::string& tag, const Histogram& histogram);
    // An encoded image (PNG) of width x height pixels with 1 (grey) or 3 (RGB) channels.
    void image(const std::string& tag, std::int64_t width, std::int64_t height, int channels, std::string_view encoded);
    bool empty() const { return m_values == 0; }
    const ProtoMessage& message() const { return m_message; }

private:
    ProtoMessage m_message;
    int m_values = 0;
};

// TensorFlow's Event messages, encoded.
std::string fileVersionEvent(double wallTime);                                      // "brain.Event:2"
std::string summaryEvent(double wallTime, std::int64_t step, const Summary& summary);
// A SessionLog START at `step`: TensorBoard drops what it read of this run from
// `step` on (a run that resumed from an earlier checkpoint rewrites those steps).
std::string sessionStartEvent(double wallTime, std::int64_t step);

// LOGDIR/events.out.tfevents.<seconds>.<host>, begun with the file_version event;
// a record is flushed as soon as it is written, so that TensorBoard sees a run
// being trained. Throws std::runtime_error naming the directory or the file and
// the reason (cannot create, cannot write).
class EventWriter {
public:
    EventWriter(const std::filesystem::path& directory, double wallTime);
    ~EventWriter();
    EventWriter(const EventWriter&) = delete;
    EventWriter& operator=(const EventWriter&) = delete;

    void write(double wallTime, std::int64_t step, const Summary& summary);  // nothing for an empty summary
    void sessionStart(double wallTime, std::int64_t step);
    const std::filesystem::path& file() const { return m_file; }

private:
    void writeRecord(std::string_view event);
    std::filesystem::path m_file;
    std::FILE* m_stream = nullptr;
};

// The host name as TensorBoard's file names carry it ("localhost" when unknown).
std::string hostName();

}  // namespace widelab::tensorboard
