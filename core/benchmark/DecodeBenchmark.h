// defines: DecodeBenchmarkRow, runDecodeBenchmark: tokens per second of greedy
// decoding with cached keys and values against recomputing the prefix at every
// step, on random sources, for several translation lengths (bench --mode decode)
#pragma once

#include "config/ModelConfig.h"

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

struct DecodeBenchmarkRow {
    std::int64_t targetTokens = 0;  // tokens each translation is decoded to (no end token stops it)
    double cachedSeconds = 0.0;     // the best of the repeats, for the whole batch
    double recomputedSeconds = 0.0;
    double cachedTokensPerSecond() const;
    double recomputedTokensPerSecond() const;
    std::int64_t batch = 0;
};

// A translation model (model.head "translation"; max_len raised to the longest
// length when shorter) decoding `batch` random sources of `sourceTokens` tokens
// to each of `targetTokens`, `repeats` times each way, on `device`.
// std::invalid_argument for another model or a device that cannot be used.
std::vector<DecodeBenchmarkRow> runDecodeBenchmark(const ModelConfig& config, std::int64_t batch,
                                                   std::int64_t sourceTokens,
                                                   const std::vector<std::int64_t>& targetTokens,
                                                   std::int64_t repeats, const std::string& device);

}  // namespace widelab
