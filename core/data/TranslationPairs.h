// defines: TranslationSource, TranslationPairs: pairs of texts to translate, read
// from a TSV (source TAB target) or from two line-aligned files, checked line by
// line, split deterministically, and tokenized into datasets of pairs
#pragma once

#include "Datasets.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace widelab {

struct TranslationSource {
    std::filesystem::path pairs;    // "source<TAB>target" lines, or the source lines when `targets` is given
    std::filesystem::path targets;  // the target lines, line by line with `pairs`; empty: `pairs` is a TSV
};

// Every pair of a source, read whole into memory. Lines end in "\n" or "\r\n"; a
// leading UTF-8 byte order mark is skipped; an empty line (in both files) is not a
// pair. A line is bad when it has no tab or more than one (TSV), an empty or blank
// side, or invalid UTF-8: a DataError "FILE:LINE: reason", or with `skipBad` left
// out, counted, and told once through `warn` with the first of them. Files that are
// missing, empty, without a pair, or (two files) of different line counts are
// always a DataError naming them.
// Pair i goes to the split splitOfRow(seed, its line - 1, fractions) gives: the
// splits stay the same when bad lines elsewhere are left out or mended.
class TranslationPairs {
public:
    TranslationPairs(const TranslationSource& source, SplitFractions fractions, std::uint64_t seed, bool skipBad = false,
                     const std::function<void(const std::string&)>& warn = {});

    std::int64_t pairs() const;             // kept, all splits
    std::int64_t pairs(Split split) const;  // kept, one split
    std::int64_t skipped() const;           // bad lines left out

    // Both sides of the training pairs into a builder (a joint vocabulary, as the Multi-Path paper's BPE).
    void addTrainingTexts(VocabularyBuilder& builder) const;

    // The split's pairs as examples: `ids` the source's tokens, `targets` the
    // target's and then the tokenizer's end token. A pair with a side of more than
    // maxSubwords tokens is left out and counted in `tooLong`, when given. Throws
    // std::invalid_argument for a tokenizer without an end token or maxSubwords < 1.
    std::unique_ptr<Dataset> dataset(Split split, const Tokenizer& tokenizer, std::int64_t maxSubwords,
                                     std::int64_t* tooLong = nullptr) const;

    struct State;  // the texts, shared with the datasets

private:
    std::shared_ptr<const State> m_state;
};

}  // namespace widelab
