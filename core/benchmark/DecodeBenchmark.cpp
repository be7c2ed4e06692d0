#include "DecodeBenchmark.h"

#include "BenchmarkDevice.h"
#include "model/Decoding.h"
#include "runtime/Clock.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace widelab {

double DecodeBenchmarkRow::cachedTokensPerSecond() const
{
    return cachedSeconds > 0.0 ? static_cast<double>(batch * targetTokens) / cachedSeconds : 0.0;
}

double DecodeBenchmarkRow::recomputedTokensPerSecond() const
{
    return recomputedSeconds > 0.0 ? static_cast<double>(batch * targetTokens) / recomputedSeconds : 0.0;
}

std::vector<DecodeBenchmarkRow> runDecodeBenchmark(const ModelConfig& config, std::int64_t batch,
                                                   std::int64_t sourceTokens,
                                                   const std::vector<std::int64_t>& targetTokens,
                                                   std::int64_t repeats, const std::string& device)
{
    if (!config.isTranslation())
        throw std::invalid_argument("--mode decode: the model is not a translation model (model.head \"translation\")");
    const c10::Device on = benchmarkDevice(device);
    ModelConfig c = config;
    for (const std::int64_t length : targetTokens)
        c.maxLen = std::max(c.maxLen, length);
    c.maxLen = std::max(c.maxLen, sourceTokens);
    torch::manual_seed(0);
    WideTransformer model(c);
    model->to(on);
    model->eval();
    const torch::Tensor source = torch::randint(c.vocabSize, {batch, sourceTokens}, torch::kLong).to(on);

    std::vector<DecodeBenchmarkRow> rows;
    for (const std::int64_t length : targetTokens) {
        DecodeBenchmarkRow row;
        row.targetTokens = length;
        row.batch = batch;
        DecodeOptions options;
        options.endId = -1;  // no id is -1: every translation runs to `length` tokens
        options.maxLength = length;
        for (const bool cache : {true, false}) {
            options.cache = cache;
            double best = std::numeric_limits<double>::infinity();
            for (std::int64_t r = 0; r < repeats; ++r) {
                const double start = steadySeconds();
                greedyDecode(*model, source, {}, options);  // reads every step's tokens: synchronised
                best = std::min(best, steadySeconds() - start);
            }
            (cache ? row.cachedSeconds : row.recomputedSeconds) = best;
        }
        rows.push_back(row);
    }
    return rows;
}

}  // namespace widelab
