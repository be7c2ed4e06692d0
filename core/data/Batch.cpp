#include "Batch.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace widelab {

Batch makeBatch(const std::vector<Example>& examples, bool languageModel)
{
    if (examples.empty())
        throw std::invalid_argument("makeBatch: no examples");
    std::int64_t longest = 0;
    for (std::size_t b = 0; b < examples.size(); ++b) {
        const Example& example = examples[b];
        const std::string which = "makeBatch: example " + std::to_string(b);
        if (example.ids.empty())
            throw std::invalid_argument(which + " has no token");
        if (languageModel && example.targets.size() != example.ids.size())
            throw std::invalid_argument(which + " has " + std::to_string(example.targets.size()) + " targets for "
                                        + std::to_string(example.ids.size()) + " tokens");
        if (!languageModel && example.label < 0)
            throw std::invalid_argument(which + " has no label");
        longest = std::max(longest, static_cast<std::int64_t>(example.ids.size()));
    }
    // B = batch, T = longest example
    const auto B = static_cast<std::int64_t>(examples.size());
    const std::int64_t T = longest;
    Batch batch;
    batch.ids = torch::full({B, T}, Tokenizer::kPad, torch::kInt64);
    batch.mask = torch::zeros({B, T}, torch::kBool);
    batch.targets = languageModel ? torch::zeros({B, T}, torch::kInt64) : torch::empty({B}, torch::kInt64);
    auto* ids = batch.ids.data_ptr<std::int64_t>();
    auto* mask = batch.mask.data_ptr<bool>();
    auto* targets = batch.targets.data_ptr<std::int64_t>();
    for (std::int64_t b = 0; b < B; ++b) {
        const Example& example = examples[static_cast<std::size_t>(b)];
        const auto length = static_cast<std::int64_t>(example.ids.size());
        std::copy(example.ids.begin(), example.ids.end(), ids + b * T);
        std::fill(mask + b * T, mask + b * T + length, true);
        if (languageModel)
            std::copy(example.targets.begin(), example.targets.end(), targets + b * T);
        else
            targets[b] = example.label;
        batch.tokens += length;
    }
    return batch;
}

BatchSampler::BatchSampler(std::int64_t datasetSize, std::int64_t batchSize, std::uint64_t seed)
    : m_size(datasetSize), m_batchSize(batchSize), m_seed(seed)
{
    if (datasetSize < 1)
        throw std::invalid_argument("BatchSampler: dataset size " + std::to_string(datasetSize) + " is below 1");
    if (batchSize < 1)
        throw std::invalid_argument("BatchSampler: batch size " + std::to_string(batchSize) + " is below 1");
}

void BatchSampler::shuffle(std::int64_t epoch)
{
    // Fisher-Yates with the data layer's portable generator (std::shuffle's output is implementation-defined).
    m_order.resize(static_cast<std::size_t>(m_size));
    std::iota(m_order.begin(), m_order.end(), std::int64_t(0));
    DataRandom random(mixSeed(m_seed, static_cast<std::uint64_t>(epoch)));
    for (std::int64_t i = m_size - 1; i > 0; --i) {
        const auto j = static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(i + 1)));
        std::swap(m_order[static_cast<std::size_t>(i)], m_order[static_cast<std::size_t>(j)]);
    }
    m_orderEpoch = epoch;
}

std::vector<std::int64_t> BatchSampler::next()
{
    std::vector<std::int64_t> indices;
    indices.reserve(static_cast<std::size_t>(m_batchSize));
    for (std::int64_t k = 0; k < m_batchSize; ++k, ++m_position) {
        const std::int64_t epoch = m_position / m_size;
        if (epoch != m_orderEpoch)
            shuffle(epoch);
        indices.push_back(m_order[static_cast<std::size_t>(m_position % m_size)]);
    }
    return indices;
}

void BatchSampler::seek(std::int64_t position)
{
    if (position < 0)
        throw std::invalid_argument("BatchSampler: negative position " + std::to_string(position));
    m_position = position;
}

}  // namespace widelab
