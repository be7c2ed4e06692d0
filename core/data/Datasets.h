// defines: Example, Split, Dataset, SplitFractions, makeListOpsDataset, ClassificationFile (labelled texts from a
// TSV or CSV file), TextFile (language modelling windows over any text file, through a token cache)
#pragma once

#include "ListOps.h"
#include "Tokenizer.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace widelab {

class MappedFile;  // a read-only memory mapping of a whole file (MappedFile.h)

struct Example {
    std::vector<std::int64_t> ids;      // token ids, length <= the dataset's sequence length
    std::int64_t label = -1;            // classification
    std::vector<std::int64_t> targets;  // language modelling: next-token ids, same length as ids
    std::vector<std::uint8_t> pixels;   // images (data/Images.h): side x side x channels bytes, row-major HWC
};

enum class Split { Train, Validation, Test };
std::string toString(Split split);  // "train", "validation", "test"

class Dataset {
public:
    virtual ~Dataset() = default;
    virtual std::int64_t size() const = 0;
    virtual Example get(std::int64_t index) const = 0;  // 0 <= index < size(), else std::out_of_range
};

// Each fraction in [0, 1], their sum at most 1 (else std::invalid_argument where they are used); the rest is Train.
struct SplitFractions {
    double validation = 0.05;
    double test = 0.05;
};

// ListOps: `count` examples for `split`, generated up front (about one byte per token is kept). The seed of each
// split is derived from (seed, split), so the splits come from unrelated streams. Tokens come from
// listOpsTokenizer(). Throws std::invalid_argument when options.maxLength exceeds sequenceLength (truncation
// would change the answer), and what generateListOps throws.
// `progress`, when given, is called with the examples generated so far every kListOpsProgressEvery of them.
constexpr std::int64_t kListOpsProgressEvery = 1 << 16;
std::unique_ptr<Dataset> makeListOpsDataset(const ListOpsOptions& options, std::int64_t count, std::uint64_t seed,
                                            Split split, std::int64_t sequenceLength,
                                            const std::function<void(std::int64_t)>& progress = {});
// At most what `count` ListOps examples hold in memory.
std::int64_t listOpsMemoryBytes(const ListOpsOptions& options, std::int64_t count);

// Classification from a file: TSV ("label<TAB>text", the text being the rest of the line) or CSV ("label,text",
// RFC 4180: a field in double quotes may hold commas, newlines and "" for a quote; exactly two fields a row),
// chosen by extension (.csv is CSV; .tsv and anything else TSV). Lines end in "\n", "\r\n" or a lone "\r"; empty lines and a
// leading UTF-8 byte order mark are skipped; a first row whose label is "label" (any case) is a header, skipped.
// Labels (trimmed of whitespace) are integers 0..C-1 when every label is a decimal number (C = largest + 1, at
// most 100000), else strings mapped to classes in sorted (byte) order; labels() lists the class names. Given
// `classes` (a run's labels.json: the mapping for the life of a run), labels are those classes instead, found by
// name (a decimal label also by number when the classes are "0".."C-1"); a label not among them is an error.
// Rows are assigned to splits from a hash of (seed, row index) with the given fractions: deterministic, and
// independent of the other rows (row index: data rows counted from 0, without header and empty lines).
// Texts longer than sequenceLength tokens are truncated to it.
// Errors (DataError "FILE:LINE: reason"): a missing or empty file, no rows, a row without a separator, a CSV row
// with more than two fields, an unclosed quote, an empty label, an empty or blank text, invalid UTF-8 (on the
// line of the bad byte), a label not among the given classes. Fractions out of range: std::invalid_argument.
// The file is memory-mapped and scanned once; what stays in memory is the row index (24 bytes a row).
class ClassificationFile {
public:
    // `pairs`: each text is two, separated by a tab ("label<TAB>first<TAB>second"): a row without the tab, or
    // with either side blank, is an error naming its line.
    ClassificationFile(std::filesystem::path path, SplitFractions fractions, std::uint64_t seed,
                       const std::vector<std::string>& classes = {}, bool pairs = false);

    const std::vector<std::string>& labels() const;
    std::int64_t rows() const;             // data rows, all splits
    std::int64_t rows(Split split) const;  // rows of one split
    const std::filesystem::path& path() const;

    // Streams the training split's texts into a VocabularyBuilder (for Character/Word tokenizers).
    void addTrainingTexts(VocabularyBuilder& builder) const;
    // Examples with `ids` (at most sequenceLength >= 1 tokens) and `label`. The dataset shares the mapped file.
    // With a `separator` (a file read with `pairs`), ids are the pair's (encodePair, data/PairInput.h).
    std::unique_ptr<Dataset> dataset(Split split, const Tokenizer& tokenizer, std::int64_t sequenceLength,
                                     std::optional<std::int64_t> separator = {}) const;

    struct State;  // the mapped file and the row index, shared with the datasets

private:
    std::shared_ptr<const State> m_state;
};

// Language modelling from any text file. The file is read in pieces (files larger than memory can be tokenized)
// and tokenized once per tokenizer into a token cache in `cacheDirectory` (created when missing):
// "NAME.KEY.tokens", KEY a hash of the file's path and the tokenizer's kind, so that a changed text or vocabulary
// replaces its cache rather than adding one. The cache is a 32-byte header (a hash of the text's content and of the
// tokenizer, the count, the text's size) and then an int32 array, written to a temporary file and renamed; it is
// trusted only when the header matches this text's content. What is memory-mapped is a private copy (unlinked as
// soon as it is made, so no other process can cut it short under the mapping), so that a cache or text changed or
// cut short underneath is tokenized again or named, never a SIGBUS. Temporary files that killed builds left are
// removed. The tokens are cut into windows of
// sequenceLength + 1 tokens overlapping by one (ids = window[0..L-1], targets = window[1..L]); the last window
// may be shorter. Split by contiguous blocks of windows: the last floor(test * windows) are Test, the
// floor(validation * windows) before them Validation, the rest Train.
// Errors (DataError naming the file): missing or empty file; a file that changes while it is read; fewer than 2
// tokens; invalid UTF-8 with a Character or Word tokenizer (naming the byte offset; with the Byte tokenizer every
// file is valid); an unwritable cache (with the system's reason).
// Texts this large or larger report their tokenizing's progress.
constexpr std::uint64_t kTextProgressFrom = 8u << 20;

class TextFile {
public:
    // `progress`, when given, hears how far tokenizing a text of kTextProgressFrom bytes or more has come, at
    // each tenth: "tokenizing FILE: 40% (20.0 of 50.0 MiB)".
    TextFile(std::filesystem::path path, std::filesystem::path cacheDirectory,
             std::function<void(const std::string&)> progress = {});

    const std::filesystem::path& path() const { return m_path; }
    // Streams the file in pieces of about 1 MiB, split on whitespace, into `builder`.
    void addTexts(VocabularyBuilder& builder) const;
    // Where the token cache for `tokenizer` is (or will be).
    std::filesystem::path cachePath(const Tokenizer& tokenizer) const;
    // Tokens of the whole file (tokenizes into the cache when it is not there yet).
    std::int64_t tokenCount(const Tokenizer& tokenizer) const;
    std::unique_ptr<Dataset> dataset(Split split, const Tokenizer& tokenizer, std::int64_t sequenceLength,
                                     SplitFractions fractions) const;

private:
    // Calls `piece` with the file's bytes in order, each piece ending before ASCII whitespace (or at the end),
    // and its offset; DataError when the file cannot be read or its size changes meanwhile.
    void readPieces(const std::function<void(std::string_view, std::size_t)>& piece) const;
    std::uint64_t contentHash() const;
    std::uint64_t cacheKey(const Tokenizer& tokenizer) const;
    // The cache's bytes (header, then tokens), mapped from a private copy; written first when missing.
    std::shared_ptr<const MappedFile> tokens(const Tokenizer& tokenizer) const;
    // nullptr when `cache` is missing, is not for `key` and this text, or is cut short while read.
    std::shared_ptr<const MappedFile> readCache(const std::filesystem::path& cache, std::uint64_t key) const;
    void removeStaleCaches(const std::filesystem::path& keep) const;

    std::filesystem::path m_path;
    std::filesystem::path m_cacheDirectory;
    std::function<void(const std::string&)> m_progress;
    std::uint64_t m_size = 0;                               // bytes when opened
    mutable std::optional<std::uint64_t> m_contentHash;    // of the bytes, once read
    mutable std::map<std::uint64_t, std::shared_ptr<const MappedFile>> m_tokens;  // by cacheKey
};

}  // namespace widelab
