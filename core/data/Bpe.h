// defines: the byte-level BPE of TokenizerKind::Bpe: bpePieceEnd (the pre-tokenisation that merges never cross),
// learnBpeMerges (most frequent adjacent pair, counted incrementally), BpeModel (merges applied by rank, with a
// cache of pieces already encoded). Tokenizer (Tokenizer.h) is its interface; this is its machinery.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace widelab {

// Ids of a bpe tokenizer: 0 pad, 1 unknown (never produced), 2 start of sequence, 3 end of sequence, 4..259 the
// bytes 0..255, then 260 + i for the i-th merge learned.
namespace bpe {
constexpr std::int64_t kStart = 2;
constexpr std::int64_t kEnd = 3;
constexpr std::int64_t kFirstByte = 4;
constexpr std::int64_t kFirstMerge = kFirstByte + 256;  // 260
// A piece is cut after this many bytes (see bpePieceEnd): it bounds the cost of encoding one piece.
constexpr std::size_t kMaxPieceBytes = 64;
// More merges than this cannot be held (ids are stored as 32-bit integers) nor asked for.
constexpr std::int64_t kMaxMerges = 10'000'000;
// A pair must occur at least this often (counted over the training texts) to be merged.
constexpr std::int64_t kMinPairCount = 2;

using Merge = std::pair<std::int32_t, std::int32_t>;  // left id, right id
}  // namespace bpe

// The end of the piece that starts at text[start] (start < text.size()). The text is read as units: one byte,
// except that a few non-ASCII punctuation characters are one unit of 2 or 3 bytes. Each unit has a class:
//   letter: A-Z, a-z, and every byte from 0x80 that does not start a punctuation unit (so any other UTF-8
//           character, and any byte that is not UTF-8, counts as a letter);
//   digit:  0-9;
//   space:  ASCII whitespace (space, \t, \n, \v, \f, \r);
//   punctuation: every other ASCII byte, and the UTF-8 of U+00A0..U+00BF (no-break space, ¡ « » ¿ ...),
//           U+00D7 and U+00F7 (× ÷), U+2000..U+206F (general punctuation: dashes, “ ” ‘ ’ …) and
//           U+3000..U+303F (CJK punctuation).
// A piece is one space (0x20) followed by a letter, digit or punctuation unit, or no space, then the longest run
// of units of that one class; a run of space units ends one unit early when it is two units or more, its last
// byte is 0x20, and a non-space unit follows (that space then starts the next piece, as " word"). A piece holds
// at most kMaxPieceBytes bytes: a run stops before the unit that would take it past them (a piece always holds
// at least its first unit). Pieces cover the text without gaps, so decoding their tokens gives it back exactly.
std::size_t bpePieceEnd(std::string_view text, std::size_t start);

// Calls fn(piece) for the pieces of `text` in order while fn returns true.
template <typename Fn>
void splitBpePieces(std::string_view text, Fn&& fn)
{
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = bpePieceEnd(text, start);
        if (!fn(text.substr(start, end - start)))
            return;
        start = end;
    }
}

// Learns up to `merges` merges from pieces and their counts (as bpePieceEnd cuts them; the order of `pieces` does
// not matter). Each step merges the adjacent pair of ids with the highest count over all pieces (each piece's
// occurrences of the pair, counted left to right without overlap, times its count); ties go to the pair with the
// smaller left id, then the smaller right id. It stops early when no pair occurs kMinPairCount times.
std::vector<bpe::Merge> learnBpeMerges(const std::vector<std::pair<std::string_view, std::int64_t>>& pieces,
                                       std::int64_t merges);

// The merges of a bpe tokenizer and what encoding needs: the rank of each pair, the bytes of each id, and a cache
// of pieces already encoded (shared by copies of the tokenizer; guarded by a mutex, so one model may encode in
// several threads at once).
class BpeModel {
public:
    // Why `merges` cannot be a bpe tokenizer's ("merge 3: id 400 is neither a byte nor an earlier merge ..."),
    // or empty when they can.
    static std::string problem(const std::vector<bpe::Merge>& merges);
    explicit BpeModel(std::vector<bpe::Merge> merges);  // checked: problem(merges) is empty

    const std::vector<bpe::Merge>& merges() const { return m_merges; }
    std::int64_t vocabSize() const { return bpe::kFirstMerge + static_cast<std::int64_t>(m_merges.size()); }
    // The bytes of id 4.. (a byte or a merge); empty for ids below 4.
    const std::string& bytesOf(std::int64_t id) const { return m_bytes[static_cast<std::size_t>(id)]; }
    // The ids of one piece: its bytes, then the merges applied by rank (the lowest-ranked pair present merged
    // everywhere in the piece, left to right, and again), which gives what applying every merge in the order
    // learned gives.
    // `ids` is overwritten.
    void encodePiece(std::string_view piece, std::vector<std::int32_t>& ids) const;

private:
    void mergePiece(std::string_view piece, std::vector<std::int32_t>& ids) const;

    std::vector<bpe::Merge> m_merges;
    std::unordered_map<std::uint64_t, std::int32_t> m_ranks;  // pair key -> merge index
    std::vector<std::string> m_bytes;                         // id -> bytes

    struct Cache;
    std::unique_ptr<Cache> m_cache;

public:
    ~BpeModel();
    BpeModel(const BpeModel&) = delete;
    BpeModel& operator=(const BpeModel&) = delete;
};

}  // namespace widelab
