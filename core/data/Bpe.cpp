#include "Bpe.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <mutex>

namespace widelab {
namespace {

enum class UnitClass : std::uint8_t { Letter, Digit, Space, Punctuation };

struct Unit {
    UnitClass kind;
    std::size_t length;
};

// The unit that starts at text[i] (see bpePieceEnd).
Unit unitAt(std::string_view text, std::size_t i)
{
    const std::size_t n = text.size();
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char c = byte(i);
    if (c < 0x80) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
            return {UnitClass::Letter, 1};
        if (c >= '0' && c <= '9')
            return {UnitClass::Digit, 1};
        if (c == ' ' || (c >= '\t' && c <= '\r'))
            return {UnitClass::Space, 1};
        return {UnitClass::Punctuation, 1};
    }
    const auto continuation = [&](std::size_t k, unsigned char low, unsigned char high) {
        return k < n && byte(k) >= low && byte(k) <= high;
    };
    if (c == 0xc2 && continuation(i + 1, 0xa0, 0xbf))  // U+00A0..U+00BF
        return {UnitClass::Punctuation, 2};
    if (c == 0xc3 && i + 1 < n && (byte(i + 1) == 0x97 || byte(i + 1) == 0xb7))  // U+00D7, U+00F7
        return {UnitClass::Punctuation, 2};
    if (c == 0xe2 && ((continuation(i + 1, 0x80, 0x80) && continuation(i + 2, 0x80, 0xbf))      // U+2000..U+203F
                      || (continuation(i + 1, 0x81, 0x81) && continuation(i + 2, 0x80, 0xaf))))  // U+2040..U+206F
        return {UnitClass::Punctuation, 3};
    if (c == 0xe3 && continuation(i + 1, 0x80, 0x80) && continuation(i + 2, 0x80, 0xbf))  // U+3000..U+303F
        return {UnitClass::Punctuation, 3};
    return {UnitClass::Letter, 1};
}

std::uint64_t pairKey(std::int32_t left, std::int32_t right)
{
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

// Every (left, right) in `ids` becomes `merged`, left to right without overlap.
void mergeInPlace(std::vector<std::int32_t>& ids, std::int32_t left, std::int32_t right, std::int32_t merged)
{
    std::size_t out = 0;
    for (std::size_t k = 0; k < ids.size();) {
        if (k + 1 < ids.size() && ids[k] == left && ids[k + 1] == right) {
            ids[out++] = merged;
            k += 2;
        } else {
            ids[out++] = ids[k++];
        }
    }
    ids.resize(out);
}

// Pieces encoded once are looked up afterwards; the cache is emptied when it holds this many.
constexpr std::size_t kCacheLimit = std::size_t(1) << 18;

}  // namespace

std::size_t bpePieceEnd(std::string_view text, std::size_t start)
{
    const std::size_t n = text.size();
    std::size_t i = start;
    if (text[i] == ' ' && i + 1 < n && unitAt(text, i + 1).kind != UnitClass::Space)
        ++i;  // the space that leads a word, number or punctuation
    const Unit first = unitAt(text, i);
    std::size_t end = i + first.length;
    while (end < n) {
        const Unit next = unitAt(text, end);
        if (next.kind != first.kind || end + next.length - start > bpe::kMaxPieceBytes)
            break;
        end += next.length;
    }
    // "  word": the last space leads the word rather than ending the run of spaces.
    if (first.kind == UnitClass::Space && end < n && unitAt(text, end).kind != UnitClass::Space && end - start >= 2
        && text[end - 1] == ' ')
        --end;
    return end;
}

std::vector<bpe::Merge> learnBpeMerges(const std::vector<std::pair<std::string_view, std::int64_t>>& pieces,
                                       std::int64_t merges)
{
    merges = std::clamp<std::int64_t>(merges, 0, bpe::kMaxMerges);
    struct Word {
        std::vector<std::int32_t> ids;
        std::int64_t count;
    };
    std::vector<Word> words;
    words.reserve(pieces.size());
    std::unordered_map<std::uint64_t, std::int64_t> counts;          // pair -> occurrences over all words
    std::unordered_map<std::uint64_t, std::vector<std::int32_t>> where;  // pair -> words that had it (may be stale)
    for (const auto& [piece, count] : pieces) {
        if (piece.size() < 2 || count <= 0)
            continue;  // no pair
        Word word{{}, count};
        word.ids.reserve(piece.size());
        for (const char c : piece)
            word.ids.push_back(static_cast<std::int32_t>(bpe::kFirstByte + static_cast<unsigned char>(c)));
        const auto index = static_cast<std::int32_t>(words.size());
        for (std::size_t k = 0; k + 1 < word.ids.size(); ++k) {
            const std::uint64_t key = pairKey(word.ids[k], word.ids[k + 1]);
            counts[key] += count;
            auto& list = where[key];
            if (list.empty() || list.back() != index)
                list.push_back(index);
        }
        words.push_back(std::move(word));
    }

    // The highest count first, then the smaller pair; entries whose count has changed since are skipped.
    struct Entry {
        std::int64_t count;
        std::uint64_t key;
    };
    const auto below = [](const Entry& a, const Entry& b) {
        return a.count != b.count ? a.count < b.count : a.key > b.key;
    };
    std::vector<Entry> heap;
    heap.reserve(counts.size());
    for (const auto& [key, count] : counts)
        heap.push_back({count, key});
    std::make_heap(heap.begin(), heap.end(), below);

    std::vector<bpe::Merge> learned;
    std::vector<std::int64_t> seen(words.size(), -1);  // the last merge that updated each word
    std::unordered_map<std::uint64_t, std::int64_t> delta;
    while (static_cast<std::int64_t>(learned.size()) < merges && !heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), below);
        const Entry best = heap.back();
        heap.pop_back();
        const auto current = counts.find(best.key);
        if (current == counts.end() || current->second != best.count)
            continue;  // stale
        if (best.count < bpe::kMinPairCount)
            break;
        const auto left = static_cast<std::int32_t>(best.key >> 32);
        const auto right = static_cast<std::int32_t>(best.key & 0xffffffffU);
        const auto merged = static_cast<std::int32_t>(bpe::kFirstMerge + static_cast<std::int64_t>(learned.size()));
        const auto mergeIndex = static_cast<std::int64_t>(learned.size());
        learned.emplace_back(left, right);

        std::vector<std::int32_t> affected = std::move(where[best.key]);
        where.erase(best.key);
        delta.clear();
        for (const std::int32_t index : affected) {
            if (seen[static_cast<std::size_t>(index)] == mergeIndex)
                continue;
            seen[static_cast<std::size_t>(index)] = mergeIndex;
            Word& word = words[static_cast<std::size_t>(index)];
            std::vector<std::int32_t>& ids = word.ids;
            bool has = false;
            for (std::size_t k = 0; k + 1 < ids.size() && !has; ++k)
                has = ids[k] == left && ids[k + 1] == right;
            if (!has)
                continue;  // merged away by an earlier merge
            for (std::size_t k = 0; k + 1 < ids.size(); ++k)
                delta[pairKey(ids[k], ids[k + 1])] -= word.count;
            mergeInPlace(ids, left, right, merged);
            for (std::size_t k = 0; k + 1 < ids.size(); ++k) {
                const std::uint64_t key = pairKey(ids[k], ids[k + 1]);
                delta[key] += word.count;
                if (ids[k] == merged || ids[k + 1] == merged) {
                    auto& list = where[key];
                    if (list.empty() || list.back() != index)
                        list.push_back(index);
                }
            }
        }
        for (const auto& [key, change] : delta) {
            if (change == 0)
                continue;
            const std::int64_t now = counts[key] += change;
            if (now <= 0) {
                counts.erase(key);
            } else {
                heap.push_back({now, key});
                std::push_heap(heap.begin(), heap.end(), below);
            }
        }
    }
    return learned;
}

struct BpeModel::Cache {
    // Lets a std::string_view find a std::string key without a copy.
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
    };
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<std::int32_t>, Hash, std::equal_to<>> pieces;
};

std::string BpeModel::problem(const std::vector<bpe::Merge>& merges)
{
    if (static_cast<std::int64_t>(merges.size()) > bpe::kMaxMerges)
        return std::to_string(merges.size()) + " merges, more than the " + std::to_string(bpe::kMaxMerges)
               + " a bpe tokenizer can hold";
    std::unordered_map<std::uint64_t, std::size_t> first;
    for (std::size_t i = 0; i < merges.size(); ++i) {
        const std::int64_t limit = bpe::kFirstMerge + static_cast<std::int64_t>(i);
        for (const std::int32_t id : {merges[i].first, merges[i].second})
            if (id < bpe::kFirstByte || id >= limit)
                return "merge " + std::to_string(i) + ": id " + std::to_string(id)
                       + " is neither a byte (4..259) nor an earlier merge"
                       + (i == 0 ? std::string(" (there is none)")
                                 : " (260.." + std::to_string(limit - 1) + ")");
        const auto [at, fresh] = first.emplace(pairKey(merges[i].first, merges[i].second), i);
        if (!fresh)
            return "merge " + std::to_string(i) + " repeats merge " + std::to_string(at->second) + " ["
                   + std::to_string(merges[i].first) + ", " + std::to_string(merges[i].second) + "]";
    }
    return "";
}

BpeModel::BpeModel(std::vector<bpe::Merge> merges) : m_merges(std::move(merges)), m_cache(std::make_unique<Cache>())
{
    m_bytes.resize(static_cast<std::size_t>(vocabSize()));
    for (int b = 0; b < 256; ++b)
        m_bytes[static_cast<std::size_t>(bpe::kFirstByte + b)] = std::string(1, static_cast<char>(b));
    m_ranks.reserve(m_merges.size());
    for (std::size_t i = 0; i < m_merges.size(); ++i) {
        const auto [left, right] = m_merges[i];
        m_bytes[static_cast<std::size_t>(bpe::kFirstMerge) + i]
            = m_bytes[static_cast<std::size_t>(left)] + m_bytes[static_cast<std::size_t>(right)];
        m_ranks.emplace(pairKey(left, right), static_cast<std::int32_t>(i));
    }
}

BpeModel::~BpeModel() = default;

void BpeModel::mergePiece(std::string_view piece, std::vector<std::int32_t>& ids) const
{
    ids.clear();
    for (const char c : piece)
        ids.push_back(static_cast<std::int32_t>(bpe::kFirstByte + static_cast<unsigned char>(c)));
    while (ids.size() >= 2) {
        std::int32_t rank = std::numeric_limits<std::int32_t>::max();
        for (std::size_t k = 0; k + 1 < ids.size(); ++k)
            if (const auto found = m_ranks.find(pairKey(ids[k], ids[k + 1])); found != m_ranks.end())
                rank = std::min(rank, found->second);
        if (rank == std::numeric_limits<std::int32_t>::max())
            return;
        const auto [left, right] = m_merges[static_cast<std::size_t>(rank)];
        const auto merged = static_cast<std::int32_t>(bpe::kFirstMerge + rank);
        mergeInPlace(ids, left, right, merged);
    }
}

void BpeModel::encodePiece(std::string_view piece, std::vector<std::int32_t>& ids) const
{
    if (piece.size() < 2 || m_merges.empty()) {
        mergePiece(piece, ids);
        return;
    }
    {
        const std::lock_guard lock(m_cache->mutex);
        if (const auto found = m_cache->pieces.find(piece); found != m_cache->pieces.end()) {
            ids = found->second;
            return;
        }
    }
    mergePiece(piece, ids);
    const std::lock_guard lock(m_cache->mutex);
    if (m_cache->pieces.size() >= kCacheLimit)
        m_cache->pieces.clear();
    m_cache->pieces.emplace(std::string(piece), ids);
}

}  // namespace widelab
