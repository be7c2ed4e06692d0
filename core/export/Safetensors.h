// defines: safetensorsDtype, safetensorsHeader, safetensorsBytes, writeSafetensors:
// named tensors in the safetensors format (no pickle), which Python reads with the
// `safetensors` package or python/widelab's own reader. docs/run-directory.md,
// "Export", describes the layout.
#pragma once

#include <torch/types.h>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

namespace widelab {

// A tensor that safetensors cannot hold (its dtype has no name there).
class SafetensorsError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The tensors by name (std::map: sorted, so the file does not depend on the order
// they were collected in) and string metadata (the format keeps only strings).
using SafetensorsTensors = std::map<std::string, torch::Tensor>;
using SafetensorsMetadata = std::map<std::string, std::string>;

// "F32", "F64", "I64", "I32", "BOOL", "BF16", "F16" or "U8"; throws SafetensorsError,
// naming the dtype, for any other.
std::string safetensorsDtype(torch::ScalarType type);

// The header as it goes into the file after its 8-byte length: a JSON object with
// one entry per tensor in name order ({"dtype", "shape", "data_offsets": [begin,
// end]}, the offsets counted from the first data byte, each tensor's bytes right
// after the one before), then "__metadata__" (left out when empty), padded with
// spaces to a multiple of 8 bytes so that the data starts 8-aligned.
std::string safetensorsHeader(const SafetensorsTensors& tensors, const SafetensorsMetadata& metadata);

// The whole file: the header's length (8 bytes, little-endian), the header, then every
// tensor's elements, little-endian, in header order. Tensors on any device and of any
// layout are copied to contiguous CPU memory first.
std::string safetensorsBytes(const SafetensorsTensors& tensors, const SafetensorsMetadata& metadata);

// Writes safetensorsBytes to `file` atomically; throws CheckpointError naming the file
// when it cannot be written, SafetensorsError for a tensor the format cannot hold.
void writeSafetensors(const std::filesystem::path& file, const SafetensorsTensors& tensors,
                      const SafetensorsMetadata& metadata);

}  // namespace widelab
