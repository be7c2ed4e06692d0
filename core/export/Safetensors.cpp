#include "Safetensors.h"

#include "run/Checkpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace widelab {
namespace {

torch::Tensor onCpu(const torch::Tensor& tensor)
{
    return tensor.detach().to(torch::kCPU).contiguous();
}

std::size_t byteCount(const torch::Tensor& tensor)
{
    return static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
}

// `value` as 8 little-endian bytes, whatever the machine's byte order.
std::string littleEndian64(std::uint64_t value)
{
    std::string bytes(8, '\0');
    for (std::size_t i = 0; i < 8; ++i)
        bytes[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
    return bytes;
}

}  // namespace

std::string safetensorsDtype(torch::ScalarType type)
{
    switch (type) {
    case torch::kFloat32: return "F32";
    case torch::kFloat64: return "F64";
    case torch::kInt64: return "I64";
    case torch::kInt32: return "I32";
    case torch::kBool: return "BOOL";
    case torch::kBFloat16: return "BF16";
    case torch::kFloat16: return "F16";
    case torch::kUInt8: return "U8";
    default: break;
    }
    throw SafetensorsError(std::string("safetensors: no dtype name for ") + c10::toString(type)
                           + " (F32, F64, I64, I32, BOOL, BF16, F16 and U8 are written)");
}

std::string safetensorsHeader(const SafetensorsTensors& tensors, const SafetensorsMetadata& metadata)
{
    // ordered_json keeps the insertion order: tensors by name, then the metadata.
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    std::uint64_t offset = 0;
    for (const auto& [name, tensor] : tensors) {
        const std::uint64_t size = byteCount(tensor);
        nlohmann::ordered_json entry;
        entry["dtype"] = safetensorsDtype(tensor.scalar_type());
        entry["shape"] = nlohmann::ordered_json::array();
        for (const std::int64_t extent : tensor.sizes())
            entry["shape"].push_back(extent);
        entry["data_offsets"] = {offset, offset + size};
        header[name] = std::move(entry);
        offset += size;
    }
    if (!metadata.empty()) {
        nlohmann::ordered_json values = nlohmann::ordered_json::object();
        for (const auto& [key, value] : metadata)
            values[key] = value;
        header["__metadata__"] = std::move(values);
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    return text;
}

std::string safetensorsBytes(const SafetensorsTensors& tensors, const SafetensorsMetadata& metadata)
{
    const std::string header = safetensorsHeader(tensors, metadata);
    std::size_t total = 8 + header.size();
    for (const auto& item : tensors)
        total += byteCount(item.second);
    std::string bytes;
    bytes.reserve(total);
    bytes += littleEndian64(header.size());
    bytes += header;
    for (const auto& item : tensors) {
        const torch::Tensor cpu = onCpu(item.second);
        const std::size_t start = bytes.size(), size = byteCount(cpu);
        bytes.resize(start + size);
        if (size > 0)
            std::memcpy(bytes.data() + start, cpu.data_ptr(), size);
        if constexpr (std::endian::native == std::endian::big) {
            // Each element's bytes reversed: the format is little-endian.
            const std::size_t width = static_cast<std::size_t>(cpu.element_size());
            for (std::size_t at = start; width > 1 && at < start + size; at += width)
                std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                             bytes.begin() + static_cast<std::ptrdiff_t>(at + width));
        }
    }
    return bytes;
}

void writeSafetensors(const std::filesystem::path& file, const SafetensorsTensors& tensors,
                      const SafetensorsMetadata& metadata)
{
    writeFileAtomically(file, safetensorsBytes(tensors, metadata));
}

}  // namespace widelab
