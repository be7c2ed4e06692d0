#include "TranslationPairs.h"

#include "DatasetChecks.h"
#include "MappedFile.h"
#include "vocab/Utf8.h"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

// Pairs of texts for translation, read from memory-mapped files into rows of
// offsets, and their tokenized datasets.

namespace widelab {

struct TranslationPairs::State {
    struct Row {
        std::string_view source, target;  // into the mapped files
        Split split = Split::Train;
    };
    std::unique_ptr<MappedFile> pairs, targets;  // targets: with two files
    std::vector<Row> rows;
    std::array<std::int64_t, 3> splitRows = {0, 0, 0};
    std::int64_t skipped = 0;
};

namespace {

// The lines of a file's bytes without their ends ("\n" or "\r\n"); a final line
// end does not start another line. A leading byte order mark is not part of line 1.
std::vector<std::string_view> linesOf(std::string_view data)
{
    if (data.substr(0, 3) == "\xEF\xBB\xBF")
        data.remove_prefix(3);
    std::vector<std::string_view> lines;
    while (!data.empty()) {
        const std::size_t end = data.find('\n');
        std::string_view line = data.substr(0, end);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        lines.push_back(line);
        data.remove_prefix(end == std::string_view::npos ? data.size() : end + 1);
    }
    return lines;
}

bool isBlank(std::string_view text)
{
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return detail::isAsciiSpace(static_cast<unsigned char>(c)); });
}

// Why a pair cannot be read, or nothing.
std::optional<std::string> problemWith(std::string_view source, std::string_view target)
{
    if (isBlank(source))
        return "empty source";
    if (isBlank(target))
        return "empty target";
    if (findInvalidUtf8(source) != std::string_view::npos)
        return "invalid UTF-8 in the source";
    if (findInvalidUtf8(target) != std::string_view::npos)
        return "invalid UTF-8 in the target";
    return std::nullopt;
}

std::unique_ptr<MappedFile> mapNonEmpty(const std::filesystem::path& path)
{
    auto file = std::make_unique<MappedFile>(path);
    if (file->bytes().empty())
        throw DataError(path.string() + ": file is empty");
    file->adviseSequential();
    return file;
}

// The tokens of a split's pairs, each side stored once, end to end.
class PairDataset : public Dataset {
public:
    PairDataset(std::shared_ptr<const TranslationPairs::State> state, Split split, const Tokenizer& tokenizer,
                std::int64_t maxSubwords, std::int64_t* tooLong)
        : m_state(std::move(state)), m_endId(*tokenizer.endId())
    {
        std::int64_t left = 0;
        for (const TranslationPairs::State::Row& row : m_state->rows) {
            if (row.split != split)
                continue;
            // One token past the limit is enough to know the pair is too long.
            const std::vector<std::int64_t> source = tokenizer.encode(row.source, maxSubwords + 1);
            const std::vector<std::int64_t> target = tokenizer.encode(row.target, maxSubwords + 1);
            if (static_cast<std::int64_t>(std::max(source.size(), target.size())) > maxSubwords) {
                ++left;
                continue;
            }
            m_sourceStart.push_back(static_cast<std::int64_t>(m_tokens.size()));
            m_tokens.insert(m_tokens.end(), source.begin(), source.end());
            m_targetStart.push_back(static_cast<std::int64_t>(m_tokens.size()));
            m_tokens.insert(m_tokens.end(), target.begin(), target.end());
        }
        m_sourceStart.push_back(static_cast<std::int64_t>(m_tokens.size()));
        if (tooLong)
            *tooLong = left;
    }

    std::int64_t size() const override { return static_cast<std::int64_t>(m_targetStart.size()); }

    Example get(std::int64_t index) const override
    {
        checkIndex(index, size());
        const auto i = static_cast<std::size_t>(index);
        Example example;
        example.ids.assign(m_tokens.begin() + m_sourceStart[i], m_tokens.begin() + m_targetStart[i]);
        example.targets.assign(m_tokens.begin() + m_targetStart[i], m_tokens.begin() + m_sourceStart[i + 1]);
        example.targets.push_back(m_endId);
        return example;
    }

private:
    std::shared_ptr<const TranslationPairs::State> m_state;
    std::int64_t m_endId;
    std::vector<std::int32_t> m_tokens;
    // Pair i's source is m_tokens[m_sourceStart[i], m_targetStart[i]), its target
    // [m_targetStart[i], m_sourceStart[i + 1]).
    std::vector<std::int64_t> m_sourceStart, m_targetStart;
};

}  // namespace

TranslationPairs::TranslationPairs(const TranslationSource& source, SplitFractions fractions, std::uint64_t seed,
                                   bool skipBad, const std::function<void(const std::string&)>& warn)
{
    checkFractions(fractions);
    auto state = std::make_shared<State>();
    state->pairs = mapNonEmpty(source.pairs);
    const bool twoFiles = !source.targets.empty();
    const std::vector<std::string_view> lines = linesOf(state->pairs->bytes());
    std::vector<std::string_view> targetLines;
    if (twoFiles) {
        state->targets = mapNonEmpty(source.targets);
        targetLines = linesOf(state->targets->bytes());
        if (targetLines.size() != lines.size())
            throw DataError(source.pairs.string() + " has " + std::to_string(lines.size()) + " lines and "
                            + source.targets.string() + " " + std::to_string(targetLines.size())
                            + ": the source and target files must be line-aligned, one pair a line");
    }
    // Where each bad line is reported: the TSV, or the file of the side that is wrong.
    std::string firstSkipped;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::int64_t line = static_cast<std::int64_t>(i) + 1;
        std::string_view left = lines[i], right;
        std::optional<std::string> problem;
        std::filesystem::path file = source.pairs;
        if (twoFiles) {
            right = targetLines[i];
            if (left.empty() && right.empty())
                continue;
            problem = problemWith(left, right);
            if (problem && problem->find("target") != std::string::npos)
                file = source.targets;
        } else {
            if (left.empty())
                continue;
            const std::size_t tab = left.find('\t');
            if (tab == std::string_view::npos)
                problem = "no tab between source and target";
            else if (left.find('\t', tab + 1) != std::string_view::npos)
                problem = "more than one tab (source TAB target, and no tab inside a text)";
            else {
                right = left.substr(tab + 1);
                left = left.substr(0, tab);
                problem = problemWith(left, right);
            }
        }
        if (problem) {
            const std::string where = file.string() + ":" + std::to_string(line) + ": " + *problem;
            if (!skipBad)
                throw DataError(where + " (task.skip_bad_inputs leaves such pairs out, counted)");
            if (state->skipped++ == 0)
                firstSkipped = where;
            continue;
        }
        State::Row row{left, right, splitOfRow(seed, line - 1, fractions)};
        ++state->splitRows[static_cast<std::size_t>(row.split)];
        state->rows.push_back(row);
    }
    if (state->rows.empty())
        throw DataError(source.pairs.string() + ": no pairs"
                        + (state->skipped > 0 ? " (every line was left out as bad; the first: " + firstSkipped + ")"
                                              : std::string()));
    if (state->skipped > 0 && warn)
        warn("left out " + std::to_string(state->skipped) + " bad line" + (state->skipped == 1 ? "" : "s") + " of "
             + std::to_string(lines.size()) + " (task.skip_bad_inputs); the first: " + firstSkipped);
    m_state = std::move(state);
}

std::int64_t TranslationPairs::pairs() const { return static_cast<std::int64_t>(m_state->rows.size()); }

std::int64_t TranslationPairs::pairs(Split split) const { return m_state->splitRows[static_cast<std::size_t>(split)]; }

std::int64_t TranslationPairs::skipped() const { return m_state->skipped; }

void TranslationPairs::addTrainingTexts(VocabularyBuilder& builder) const
{
    for (const State::Row& row : m_state->rows)
        if (row.split == Split::Train) {
            builder.add(row.source);
            builder.add(row.target);
        }
}

std::unique_ptr<Dataset> TranslationPairs::dataset(Split split, const Tokenizer& tokenizer, std::int64_t maxSubwords,
                                                   std::int64_t* tooLong) const
{
    if (!tokenizer.endId())
        throw std::invalid_argument("translation pairs need a tokenizer with an end token (bpe), not "
                                    + toString(tokenizer.kind()));
    if (maxSubwords < 1)
        throw std::invalid_argument("translation pairs: maxSubwords " + std::to_string(maxSubwords) + " is below 1");
    return std::make_unique<PairDataset>(m_state, split, tokenizer, maxSubwords, tooLong);
}

}  // namespace widelab
