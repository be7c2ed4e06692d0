// defines: DataError, InvalidUtf8, TokenizerKind, Tokenizer (text <-> token ids, saved as JSON with a run),
// VocabularyBuilder (frequency-ranked Character/Word vocabularies, and the merges of a byte-level BPE)
#pragma once

#include "data/Bpe.h"
#include "vocab/Utf8.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace widelab {

// Bad data: a malformed file, row, text or saved tokenizer. Messages name the file (and line or byte offset)
// where there is one, and the reason.
class DataError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Invalid UTF-8 met by a Character or Word tokenizer or a VocabularyBuilder: "invalid UTF-8 at byte N", with N
// counted from the start of the text handed to it (callers that know the file say so in their own DataError).
class InvalidUtf8 : public DataError {
public:
    explicit InvalidUtf8(std::size_t offset);
    std::size_t offset() const { return m_offset; }

private:
    std::size_t m_offset;
};

// Byte:      ids 2..257 are the bytes 0..255; every input is valid.
// Character: one id per Unicode code point of UTF-8 text (whitespace and control characters included).
// Word:      the text is split into tokens, case kept as it is: words are maximal runs of letters and digits
//            (ASCII A-Z, a-z, 0-9, and every non-ASCII code point, which counts as a letter); every other
//            character that is not ASCII whitespace (space, \t, \n, \v, \f, \r) is a token of its own
//            ("don't!" -> "don", "'", "t", "!"); whitespace only separates and is not kept.
// Fixed:     tokens separated by ASCII whitespace, from a closed list given up front (ListOps).
// Bpe:       byte-level byte-pair encoding. Ids: 0 pad, 1 unknown (never produced), 2 start of sequence <s>, 3 end
//            of sequence </s> (neither produced by encode: a task that wants them adds them), 4..259 the bytes
//            0..255, then 260 + i for merge i, in the order learned. The text is cut into pieces that merges never
//            cross (bpePieceEnd in Bpe.h: a word, number or punctuation with its leading space, a run of
//            whitespace), each piece is its bytes, and the merges join adjacent ids by rank. Any byte sequence
//            encodes, and decode(encode(text)) == text.
enum class TokenizerKind { Byte, Character, Word, Fixed, Bpe };

// "byte", "character", "word", "fixed", "bpe" (the names used in JSON and on the command line).
std::string toString(TokenizerKind kind);
std::optional<TokenizerKind> tokenizerKindFromString(std::string_view name);


namespace detail {

// Lets a std::string_view find a std::string key without a copy.
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;


inline bool isAsciiSpace(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
inline bool isWordByte(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c >= 0x80;
}

}  // namespace detail

class Tokenizer {
public:
    static constexpr std::int64_t kPad = 0;      // padding id, never produced by encode
    static constexpr std::int64_t kUnknown = 1;  // out-of-vocabulary
    static constexpr std::int64_t kFirstToken = 2;
    static constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();

    Tokenizer() = default;     // the byte tokenizer
    static Tokenizer bytes();  // ids 2..257 are the bytes 0..255; vocabSize 258; never unknown
    // Whitespace-separated words from a closed list (ListOps): tokens[i] gets id 2 + i. Throws
    // std::invalid_argument for an empty, duplicate, non-UTF-8 or whitespace-containing token.
    static Tokenizer fixed(const std::vector<std::string>& tokens);
    // A Character or Word tokenizer with the given vocabulary (tokens[i] gets id 2 + i), as VocabularyBuilder
    // would build it. Character tokens must be single code points, Word tokens single words or single symbols.
    // Throws std::invalid_argument otherwise.
    static Tokenizer withVocabulary(TokenizerKind kind, const std::vector<std::string>& tokens);
    // A bpe tokenizer with these merges ([left id, right id] of merge i makes id 260 + i; each id a byte, 4..259,
    // or an earlier merge), as VocabularyBuilder::buildBpe learns them. Throws std::invalid_argument otherwise.
    static Tokenizer bpe(std::vector<bpe::Merge> merges);

    TokenizerKind kind() const { return m_kind; }
    std::int64_t vocabSize() const;  // including pad and unknown (and for Bpe, <s> and </s>)
    // The tokens of ids 2..vocabSize-1 in id order; empty for Byte and Bpe.
    const std::vector<std::string>& vocabulary() const { return m_tokens; }
    // The merges of a Bpe tokenizer in the order learned; empty for the other kinds.
    const std::vector<bpe::Merge>& bpeMerges() const;
    // The ids of the start-of-sequence and end-of-sequence tokens for a kind that has them (Bpe: 2 and 3), else
    // nullopt. encode never produces them, and decode skips them.
    std::optional<std::int64_t> startId() const;
    std::optional<std::int64_t> endId() const;

    // Unknown tokens map to kUnknown. Character/Word: throws InvalidUtf8 (a DataError) naming the byte offset
    // on invalid UTF-8.
    std::vector<std::int64_t> encode(std::string_view text) const;
    // Stops after `maxTokens` tokens; the text after them is not read (nor checked).
    std::vector<std::int64_t> encode(std::string_view text, std::int64_t maxTokens) const;
    // The same, calling sink(id) for each token instead of building a vector (used to tokenize large files).
    template <typename Sink>
    void encodeTo(std::string_view text, Sink&& sink, std::int64_t maxTokens = kNoLimit) const;

    // Display text of one id: "<pad>", "<unk>", "<s>", "</s>"; a byte as the character when printable ASCII, else
    // "\xNN"; other tokens as they are, with ASCII control characters written "\xNN". A Bpe merge's bytes show
    // as a byte does when it is one, else each valid UTF-8 character as itself (control characters "\xNN") and
    // every other byte "\xNN" (" caf\xc3" for a merge cut inside "é"). Throws std::out_of_range for an id
    // outside 0..vocabSize-1.
    std::string tokenText(std::int64_t id) const;
    // Inverse of encode where possible: pad ids (and <s>, </s>) are skipped, unknown ids become "<unk>"; Word and
    // Fixed tokens are joined with single spaces (the original spacing is not kept); Byte and Bpe give back the
    // bytes encoded. Throws std::out_of_range for a bad id.
    std::string decode(const std::vector<std::int64_t>& ids) const;

    // {"kind": "byte"} or {"kind": "character"|"word"|"fixed", "tokens": [...]} (tokens of ids 2, 3, ...), or
    // {"kind": "bpe", "merges": [[left, right], ...]} (merge i makes id 260 + i), plus "vocab_size" for the
    // reader's convenience.
    nlohmann::json toJson() const;
    static Tokenizer fromJson(const nlohmann::json& json);  // throws DataError on malformed input

    friend bool operator==(const Tokenizer& a, const Tokenizer& b)
    {
        return a.m_kind == b.m_kind && a.m_tokens == b.m_tokens && a.bpeMerges() == b.bpeMerges();
    }

private:
    friend class VocabularyBuilder;
    Tokenizer(TokenizerKind kind, std::vector<std::string> tokens);  // tokens already checked
    std::int64_t lookupWord(std::string_view word) const;
    void checkId(std::int64_t id) const;  // std::out_of_range outside 0..vocabSize-1

    TokenizerKind m_kind = TokenizerKind::Byte;
    std::vector<std::string> m_tokens;                          // id 2 + i
    detail::StringMap<std::int64_t> m_ids;                      // Word, Fixed
    std::unordered_map<char32_t, std::int64_t> m_codePointIds;  // Character
    std::shared_ptr<const BpeModel> m_bpe;                      // Bpe (immutable but for its cache)
};

// Builds a Character or Word vocabulary from texts streamed through add(): most frequent first, ties broken by
// the token's UTF-8 bytes (byte-wise ascending), at most maxVocab ids including pad and unknown. For Bpe, add()
// counts the pieces of the texts (bpePieceEnd) and buildBpe learns the merges from those counts (learnBpeMerges:
// the most frequent adjacent pair first, ties to the smaller left id, then the smaller right id).
class VocabularyBuilder {
public:
    explicit VocabularyBuilder(TokenizerKind kind);  // Character, Word or Bpe, else std::invalid_argument
    // Character, Word: throws InvalidUtf8 (a DataError) naming the byte offset within `text`; nothing of `text` is
    // counted then. Bpe: any bytes. Successive calls must not split a word (Word) between them, nor (Bpe) a piece:
    // cut texts only just before a run of ASCII whitespace that something other than whitespace follows.
    void add(std::string_view text);
    // Character, Word: maxVocab >= 3, else std::invalid_argument (and for Bpe, which has buildBpe).
    Tokenizer build(std::int64_t maxVocab) const;
    // Bpe: up to `merges` merges (0..bpe::kMaxMerges), fewer when no pair is left that occurs twice. Throws
    // std::invalid_argument for another kind or a count out of range.
    Tokenizer buildBpe(std::int64_t merges) const;

    TokenizerKind kind() const { return m_kind; }
    // Distinct tokens (Bpe: pieces) seen.
    std::int64_t distinctTokens() const { return static_cast<std::int64_t>(m_counts.size()); }
    std::int64_t count(std::string_view token) const;  // how often `token` (Bpe: a piece) was seen

private:
    TokenizerKind m_kind;
    detail::StringMap<std::int64_t> m_counts;
};

// ---- implementation of the templates ----

namespace detail {

[[noreturn]] void throwInvalidUtf8(std::size_t offset);  // throws InvalidUtf8

// Calls fn(word) for the first `maxTokens` Word tokens of `text` (see TokenizerKind::Word).
template <typename Fn>
void splitWords(std::string_view text, Fn&& fn, std::int64_t maxTokens)
{
    std::int64_t produced = 0;
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n && produced < maxTokens;) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (isAsciiSpace(c)) {
            ++i;
            continue;
        }
        std::size_t end = i + 1;  // an ASCII symbol on its own
        if (isWordByte(c)) {
            // A run of ASCII letters and digits and whole non-ASCII code points.
            end = i;
            while (end < n && isWordByte(static_cast<unsigned char>(text[end]))) {
                std::size_t length = 1;
                if (static_cast<unsigned char>(text[end]) >= 0x80) {
                    decodeUtf8(text, end, length);
                    if (length == 0)
                        throwInvalidUtf8(end);
                }
                end += length;
            }
        }
        fn(text.substr(i, end - i));
        ++produced;
        i = end;
    }
}

// Calls fn(token) for the first `maxTokens` runs of non-whitespace of `text` (TokenizerKind::Fixed).
template <typename Fn>
void splitFixed(std::string_view text, Fn&& fn, std::int64_t maxTokens)
{
    std::int64_t produced = 0;
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n && produced < maxTokens;) {
        if (isAsciiSpace(static_cast<unsigned char>(text[i]))) {
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < n && !isAsciiSpace(static_cast<unsigned char>(text[end])))
            ++end;
        fn(text.substr(i, end - i));
        ++produced;
        i = end;
    }
}

// Calls fn(codePoint, bytes) for the first `maxTokens` code points of `text`.
template <typename Fn>
void splitCharacters(std::string_view text, Fn&& fn, std::int64_t maxTokens)
{
    std::int64_t produced = 0;
    for (std::size_t i = 0; i < text.size() && produced < maxTokens; ++produced) {
        std::size_t length = 0;
        const char32_t c = decodeUtf8(text, i, length);
        if (length == 0)
            throwInvalidUtf8(i);
        fn(c, text.substr(i, length));
        i += length;
    }
}

}  // namespace detail

template <typename Sink>
void Tokenizer::encodeTo(std::string_view text, Sink&& sink, std::int64_t maxTokens) const
{
    switch (m_kind) {
    case TokenizerKind::Byte:
        for (std::size_t i = 0; i < text.size() && static_cast<std::int64_t>(i) < maxTokens; ++i)
            sink(kFirstToken + static_cast<unsigned char>(text[i]));
        return;
    case TokenizerKind::Character:
        detail::splitCharacters(
            text,
            [&](char32_t c, std::string_view) {
                const auto found = m_codePointIds.find(c);
                sink(found == m_codePointIds.end() ? kUnknown : found->second);
            },
            maxTokens);
        return;
    case TokenizerKind::Word:
        detail::splitWords(text, [&](std::string_view word) { sink(lookupWord(word)); }, maxTokens);
        return;
    case TokenizerKind::Fixed:
        detail::splitFixed(text, [&](std::string_view word) { sink(lookupWord(word)); }, maxTokens);
        return;
    case TokenizerKind::Bpe: {
        std::int64_t produced = 0;
        std::vector<std::int32_t> ids;
        splitBpePieces(text, [&](std::string_view piece) {
            m_bpe->encodePiece(piece, ids);
            for (const std::int32_t id : ids) {
                if (produced == maxTokens)
                    return false;
                sink(static_cast<std::int64_t>(id));
                ++produced;
            }
            return produced < maxTokens;
        });
        return;
    }
    }
}

}  // namespace widelab
