#include "Datasets.h"

#include "DatasetChecks.h"

#include <algorithm>
#include <stdexcept>

// What every dataset shares (the splits' names, the arguments' checks) and the
// generated ListOps dataset; the file-backed datasets are in ClassificationFile.cpp
// and TextFile.cpp.

namespace widelab {

void checkFractions(const SplitFractions& f)
{
    const auto inRange = [](double x) { return x >= 0.0 && x <= 1.0; };
    if (!inRange(f.validation) || !inRange(f.test) || f.validation + f.test > 1.0)
        throw std::invalid_argument("split fractions validation " + std::to_string(f.validation) + " and test "
                                    + std::to_string(f.test) + " must lie in [0, 1] and sum to at most 1");
}

Split splitOfRow(std::uint64_t seed, std::int64_t row, const SplitFractions& fractions)
{
    const std::uint64_t hash = mixSeed(seed, static_cast<std::uint64_t>(row));
    const double u = static_cast<double>(hash >> 11) * 0x1.0p-53;
    return u < fractions.test                          ? Split::Test
           : u < fractions.test + fractions.validation ? Split::Validation
                                                       : Split::Train;
}

void checkSequenceLength(std::int64_t sequenceLength)
{
    if (sequenceLength < 1)
        throw std::invalid_argument("sequence length " + std::to_string(sequenceLength) + " is below 1");
}

void checkIndex(std::int64_t index, std::int64_t size)
{
    if (index < 0 || index >= size)
        throw std::out_of_range("example " + std::to_string(index) + " of a dataset of " + std::to_string(size));
}

// ---- ListOps ----

namespace {

class ListOpsDataset : public Dataset {
public:
    ListOpsDataset(const ListOpsOptions& options, std::int64_t count, std::uint64_t seed,
                   const std::function<void(std::int64_t)>& progress)
    {
        const Tokenizer tokenizer = listOpsTokenizer();
        ListOpsGenerator generator(options, seed);
        m_offsets.reserve(static_cast<std::size_t>(count) + 1);
        m_offsets.push_back(0);
        for (std::int64_t i = 0; i < count; ++i) {
            const TextExample example = generator.next();
            tokenizer.encodeTo(example.text, [&](std::int64_t id) { m_ids.push_back(static_cast<std::uint8_t>(id)); });
            m_offsets.push_back(m_ids.size());
            m_labels.push_back(static_cast<std::uint8_t>(example.label));
            if (progress && (i + 1) % kListOpsProgressEvery == 0)
                progress(i + 1);
        }
        m_ids.shrink_to_fit();
    }

    std::int64_t size() const override { return static_cast<std::int64_t>(m_labels.size()); }

    Example get(std::int64_t index) const override
    {
        checkIndex(index, size());
        const auto i = static_cast<std::size_t>(index);
        Example example;
        example.ids.assign(m_ids.begin() + static_cast<std::ptrdiff_t>(m_offsets[i]),
                           m_ids.begin() + static_cast<std::ptrdiff_t>(m_offsets[i + 1]));
        example.label = m_labels[i];
        return example;
    }

private:
    std::vector<std::uint8_t> m_ids;  // all examples' token ids (< 17), one after the other
    std::vector<std::size_t> m_offsets;
    std::vector<std::uint8_t> m_labels;
};

}  // namespace

std::string toString(Split split)
{
    switch (split) {
    case Split::Train:
        return "train";
    case Split::Validation:
        return "validation";
    case Split::Test:
        return "test";
    }
    return "unknown";
}

std::int64_t listOpsMemoryBytes(const ListOpsOptions& options, std::int64_t count)
{
    // Per example: its offset, its label and at most maxLength token bytes.
    const double perExample = static_cast<double>(sizeof(std::size_t) + 1) + static_cast<double>(options.maxLength);
    return static_cast<std::int64_t>(std::min(9.0e18, perExample * static_cast<double>(std::max<std::int64_t>(0, count))));
}

std::unique_ptr<Dataset> makeListOpsDataset(const ListOpsOptions& options, std::int64_t count, std::uint64_t seed,
                                            Split split, std::int64_t sequenceLength,
                                            const std::function<void(std::int64_t)>& progress)
{
    checkSequenceLength(sequenceLength);
    if (options.maxLength > sequenceLength)
        throw std::invalid_argument("ListOps max length " + std::to_string(options.maxLength)
                                    + " exceeds the sequence length " + std::to_string(sequenceLength));
    if (count < 0)
        throw std::invalid_argument("ListOps: negative example count " + std::to_string(count));
    return std::make_unique<ListOpsDataset>(options, count, mixSeed(seed, 1 + static_cast<std::uint64_t>(split)),
                                            progress);
}

}  // namespace widelab
