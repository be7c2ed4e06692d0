#include "Tokenizer.h"

#include "vocab/ByteText.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace widelab {
namespace {

const std::vector<std::string> kKindNames = {"byte", "character", "word", "fixed", "bpe"};
constexpr std::int64_t kByteVocab = Tokenizer::kFirstToken + 256;

// `token` with ASCII control characters written "\xNN".
std::string displayText(std::string_view token)
{
    std::string text;
    for (const char ch : token) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f)
            text += hexByte(c);
        else
            text += ch;
    }
    return text;
}

// Why `token` cannot be in a vocabulary of `kind`, or empty when it can.
std::string tokenProblem(TokenizerKind kind, const std::string& token)
{
    if (token.empty())
        return "empty token";
    if (findInvalidUtf8(token) != std::string_view::npos)
        return "token is not valid UTF-8";
    switch (kind) {
    case TokenizerKind::Byte:
        return "a byte tokenizer has no vocabulary";
    case TokenizerKind::Bpe:
        return "a bpe tokenizer has merges, not a vocabulary";
    case TokenizerKind::Character: {
        std::size_t length = 0;
        decodeUtf8(token, 0, length);
        return length == token.size() ? "" : "\"" + displayText(token) + "\" is not a single character";
    }
    case TokenizerKind::Word: {
        std::vector<std::string_view> parts;
        detail::splitWords(token, [&](std::string_view part) { parts.push_back(part); }, 2);
        return parts.size() == 1 && parts[0].size() == token.size()
                   ? ""
                   : "\"" + displayText(token) + "\" is not a single word or symbol";
    }
    case TokenizerKind::Fixed:
        for (const char c : token)
            if (detail::isAsciiSpace(static_cast<unsigned char>(c)))
                return "\"" + displayText(token) + "\" contains whitespace";
        return "";
    }
    return "unknown tokenizer kind";
}

// Why `tokens` cannot be the vocabulary of `kind`, or empty when they can.
std::string vocabularyProblem(TokenizerKind kind, const std::vector<std::string>& tokens)
{
    std::set<std::string_view> seen;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (std::string problem = tokenProblem(kind, tokens[i]); !problem.empty())
            return "token " + std::to_string(i) + ": " + problem;
        if (!seen.insert(tokens[i]).second)
            return "token " + std::to_string(i) + ": \"" + displayText(tokens[i]) + "\" appears twice";
    }
    return "";
}

}  // namespace

InvalidUtf8::InvalidUtf8(std::size_t offset)
    : DataError("invalid UTF-8 at byte " + std::to_string(offset)), m_offset(offset)
{
}

std::string toString(TokenizerKind kind) { return kKindNames.at(static_cast<std::size_t>(kind)); }

std::optional<TokenizerKind> tokenizerKindFromString(std::string_view name)
{
    for (std::size_t i = 0; i < kKindNames.size(); ++i)
        if (kKindNames[i] == name)
            return static_cast<TokenizerKind>(i);
    return std::nullopt;
}

namespace detail {

void throwInvalidUtf8(std::size_t offset) { throw InvalidUtf8(offset); }

}  // namespace detail

Tokenizer::Tokenizer(TokenizerKind kind, std::vector<std::string> tokens) : m_kind(kind), m_tokens(std::move(tokens))
{
    for (std::size_t i = 0; i < m_tokens.size(); ++i) {
        const std::int64_t id = kFirstToken + static_cast<std::int64_t>(i);
        if (m_kind == TokenizerKind::Character) {
            std::size_t length = 0;
            m_codePointIds.emplace(decodeUtf8(m_tokens[i], 0, length), id);
        } else {
            m_ids.emplace(m_tokens[i], id);
        }
    }
}

Tokenizer Tokenizer::bytes() { return Tokenizer(TokenizerKind::Byte, {}); }

Tokenizer Tokenizer::bpe(std::vector<bpe::Merge> merges)
{
    if (std::string problem = BpeModel::problem(merges); !problem.empty())
        throw std::invalid_argument("bpe tokenizer: " + problem);
    Tokenizer tokenizer(TokenizerKind::Bpe, {});
    tokenizer.m_bpe = std::make_shared<const BpeModel>(std::move(merges));
    return tokenizer;
}

const std::vector<bpe::Merge>& Tokenizer::bpeMerges() const
{
    static const std::vector<bpe::Merge> none;
    return m_bpe ? m_bpe->merges() : none;
}

std::optional<std::int64_t> Tokenizer::startId() const
{
    return m_kind == TokenizerKind::Bpe ? std::optional<std::int64_t>(bpe::kStart) : std::nullopt;
}

std::optional<std::int64_t> Tokenizer::endId() const
{
    return m_kind == TokenizerKind::Bpe ? std::optional<std::int64_t>(bpe::kEnd) : std::nullopt;
}

Tokenizer Tokenizer::fixed(const std::vector<std::string>& tokens)
{
    return withVocabulary(TokenizerKind::Fixed, tokens);
}

Tokenizer Tokenizer::withVocabulary(TokenizerKind kind, const std::vector<std::string>& tokens)
{
    if (kind == TokenizerKind::Byte)
        throw std::invalid_argument("a byte tokenizer has no vocabulary: use Tokenizer::bytes()");
    if (kind == TokenizerKind::Bpe)
        throw std::invalid_argument("a bpe tokenizer has merges, not a vocabulary: use Tokenizer::bpe()");
    if (std::string problem = vocabularyProblem(kind, tokens); !problem.empty())
        throw std::invalid_argument(toString(kind) + " tokenizer: " + problem);
    return Tokenizer(kind, tokens);
}

std::int64_t Tokenizer::vocabSize() const
{
    if (m_kind == TokenizerKind::Bpe)
        return m_bpe->vocabSize();
    return m_kind == TokenizerKind::Byte ? kByteVocab : kFirstToken + static_cast<std::int64_t>(m_tokens.size());
}

void Tokenizer::checkId(std::int64_t id) const
{
    if (id < 0 || id >= vocabSize())
        throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary 0.."
                                + std::to_string(vocabSize() - 1));
}

std::int64_t Tokenizer::lookupWord(std::string_view word) const
{
    const auto found = m_ids.find(word);
    return found == m_ids.end() ? kUnknown : found->second;
}

std::vector<std::int64_t> Tokenizer::encode(std::string_view text) const { return encode(text, kNoLimit); }

std::vector<std::int64_t> Tokenizer::encode(std::string_view text, std::int64_t maxTokens) const
{
    std::vector<std::int64_t> ids;
    if (m_kind == TokenizerKind::Byte && maxTokens > 0)
        ids.reserve(std::min<std::size_t>(text.size(), static_cast<std::size_t>(maxTokens)));
    encodeTo(text, [&](std::int64_t id) { ids.push_back(id); }, maxTokens);
    return ids;
}

std::string Tokenizer::tokenText(std::int64_t id) const
{
    checkId(id);
    if (id == kPad)
        return "<pad>";
    if (id == kUnknown)
        return "<unk>";
    if (m_kind == TokenizerKind::Bpe) {
        if (id == bpe::kStart)
            return "<s>";
        if (id == bpe::kEnd)
            return "</s>";
        // One byte alone is never valid UTF-8 unless ASCII: the byte tokenizer's display, for bytes and merges.
        return displayText(legibleBytes(m_bpe->bytesOf(id)));
    }
    if (m_kind == TokenizerKind::Byte) {
        const auto c = static_cast<unsigned char>(id - kFirstToken);
        return c >= 0x20 && c < 0x7f ? std::string(1, static_cast<char>(c)) : hexByte(c);
    }
    return displayText(m_tokens[static_cast<std::size_t>(id - kFirstToken)]);
}

std::string Tokenizer::decode(const std::vector<std::int64_t>& ids) const
{
    std::string text;
    const bool spaced = m_kind == TokenizerKind::Word || m_kind == TokenizerKind::Fixed;
    for (const std::int64_t id : ids) {
        checkId(id);
        if (id == kPad)
            continue;
        if (m_kind == TokenizerKind::Bpe) {
            if (id == kUnknown)
                text += "<unk>";
            else if (id >= bpe::kFirstByte)
                text += m_bpe->bytesOf(id);
            continue;  // <s>, </s>
        }
        if (spaced && !text.empty())
            text += ' ';
        if (id == kUnknown)
            text += "<unk>";
        else if (m_kind == TokenizerKind::Byte)
            text += static_cast<char>(static_cast<unsigned char>(id - kFirstToken));
        else
            text += m_tokens[static_cast<std::size_t>(id - kFirstToken)];
    }
    return text;
}

nlohmann::json Tokenizer::toJson() const
{
    nlohmann::json json = {{"kind", toString(m_kind)}, {"vocab_size", vocabSize()}};
    if (m_kind == TokenizerKind::Bpe) {
        nlohmann::json merges = nlohmann::json::array();
        for (const auto& [left, right] : m_bpe->merges())
            merges.push_back({left, right});
        json["merges"] = std::move(merges);
    } else if (m_kind != TokenizerKind::Byte) {
        json["tokens"] = m_tokens;
    }
    return json;
}

Tokenizer Tokenizer::fromJson(const nlohmann::json& json)
{
    const auto fail = [](const std::string& reason) { throw DataError("tokenizer: " + reason); };
    if (!json.is_object())
        fail("expected a JSON object, got " + std::string(json.type_name()));
    for (const auto& [key, value] : json.items())
        if (key != "kind" && key != "tokens" && key != "merges" && key != "vocab_size")
            fail("unknown key \"" + key + "\"");
    const auto kindValue = json.find("kind");
    if (kindValue == json.end() || !kindValue->is_string())
        fail("\"kind\" must be one of byte, character, word, fixed, bpe");
    const auto kind = tokenizerKindFromString(kindValue->get<std::string>());
    if (!kind)
        fail("unknown kind \"" + kindValue->get<std::string>()
             + "\" (expected byte, character, word, fixed or bpe)");

    std::vector<std::string> tokens;
    const auto tokensValue = json.find("tokens");
    const auto mergesValue = json.find("merges");
    if (*kind != TokenizerKind::Bpe && mergesValue != json.end())
        fail("a " + toString(*kind) + " tokenizer has no \"merges\" (only bpe has)");
    std::optional<Tokenizer> bpeTokenizer;
    if (*kind == TokenizerKind::Byte || *kind == TokenizerKind::Bpe) {
        if (tokensValue != json.end())
            fail("a " + toString(*kind) + " tokenizer has no \"tokens\"");
    }
    if (*kind == TokenizerKind::Bpe) {
        if (mergesValue == json.end() || !mergesValue->is_array())
            fail("\"merges\" must be an array of [left id, right id] pairs");
        std::vector<bpe::Merge> merges;
        merges.reserve(mergesValue->size());
        for (const auto& merge : *mergesValue) {
            const auto index = std::to_string(merges.size());
            if (!merge.is_array() || merge.size() != 2 || !merge[0].is_number_integer()
                || !merge[1].is_number_integer())
                fail("merge " + index + ": expected [left id, right id], found " + merge.dump());
            const auto inRange = [](const nlohmann::json& id) {
                return id.is_number_unsigned() ? id.get<std::uint64_t>() < std::uint64_t(1) << 31
                                               : id.get<std::int64_t>() >= 0 && id.get<std::int64_t>() < 1LL << 31;
            };
            if (!inRange(merge[0]) || !inRange(merge[1]))
                fail("merge " + index + ": " + merge.dump() + " holds an id out of range");
            merges.emplace_back(merge[0].get<std::int32_t>(), merge[1].get<std::int32_t>());
        }
        if (std::string problem = BpeModel::problem(merges); !problem.empty())
            fail(problem);
        bpeTokenizer = Tokenizer::bpe(std::move(merges));
    } else if (*kind != TokenizerKind::Byte) {
        if (tokensValue == json.end() || !tokensValue->is_array())
            fail("\"tokens\" must be an array of strings");
        for (const auto& token : *tokensValue) {
            if (!token.is_string())
                fail("\"tokens\" must be an array of strings, found " + std::string(token.type_name()));
            tokens.push_back(token.get<std::string>());
        }
        if (std::string problem = vocabularyProblem(*kind, tokens); !problem.empty())
            fail(problem);
    }
    Tokenizer tokenizer = bpeTokenizer ? std::move(*bpeTokenizer) : Tokenizer(*kind, std::move(tokens));
    if (const auto size = json.find("vocab_size"); size != json.end()) {
        if (!size->is_number_integer() || size->get<std::int64_t>() != tokenizer.vocabSize())
            fail("\"vocab_size\" " + size->dump() + " does not match the " + std::to_string(tokenizer.vocabSize())
                 + " ids of the " + (*kind == TokenizerKind::Bpe ? "merges" : "tokens"));
    }
    return tokenizer;
}

VocabularyBuilder::VocabularyBuilder(TokenizerKind kind) : m_kind(kind)
{
    if (kind != TokenizerKind::Character && kind != TokenizerKind::Word && kind != TokenizerKind::Bpe)
        throw std::invalid_argument("a vocabulary is built for character, word or bpe tokenizers only, not "
                                    + toString(kind));
}

void VocabularyBuilder::add(std::string_view text)
{
    if (m_kind == TokenizerKind::Bpe) {
        splitBpePieces(text, [this](std::string_view piece) {
            if (const auto found = m_counts.find(piece); found != m_counts.end())
                ++found->second;
            else
                m_counts.emplace(std::string(piece), 1);
            return true;
        });
        return;
    }
    if (const std::size_t bad = findInvalidUtf8(text); bad != std::string_view::npos)
        throw InvalidUtf8(bad);
    const auto count = [this](std::string_view token) {
        if (const auto found = m_counts.find(token); found != m_counts.end())
            ++found->second;
        else
            m_counts.emplace(std::string(token), 1);
    };
    if (m_kind == TokenizerKind::Character)
        detail::splitCharacters(text, [&](char32_t, std::string_view bytes) { count(bytes); }, Tokenizer::kNoLimit);
    else
        detail::splitWords(text, count, Tokenizer::kNoLimit);
}

std::int64_t VocabularyBuilder::count(std::string_view token) const
{
    const auto found = m_counts.find(token);
    return found == m_counts.end() ? 0 : found->second;
}

Tokenizer VocabularyBuilder::buildBpe(std::int64_t merges) const
{
    if (m_kind != TokenizerKind::Bpe)
        throw std::invalid_argument("buildBpe learns the merges of a bpe tokenizer, not a " + toString(m_kind)
                                    + " vocabulary: use build()");
    if (merges < 0 || merges > bpe::kMaxMerges)
        throw std::invalid_argument("bpe merges " + std::to_string(merges) + " outside 0.."
                                    + std::to_string(bpe::kMaxMerges));
    std::vector<std::pair<std::string_view, std::int64_t>> pieces;
    pieces.reserve(m_counts.size());
    for (const auto& [piece, count] : m_counts)
        pieces.emplace_back(piece, count);
    return Tokenizer::bpe(learnBpeMerges(pieces, merges));
}

Tokenizer VocabularyBuilder::build(std::int64_t maxVocab) const
{
    if (m_kind == TokenizerKind::Bpe)
        throw std::invalid_argument("a bpe tokenizer is learned by buildBpe(merges), not build()");
    if (maxVocab < 3)
        throw std::invalid_argument("maxVocab " + std::to_string(maxVocab)
                                    + " leaves no room for a token besides pad and unknown (needs >= 3)");
    std::vector<std::pair<std::int64_t, const std::string*>> ranked;
    ranked.reserve(m_counts.size());
    for (const auto& [token, count] : m_counts)
        ranked.emplace_back(count, &token);
    const auto keep = std::min<std::size_t>(ranked.size(), static_cast<std::size_t>(maxVocab - Tokenizer::kFirstToken));
    // std::string compares as unsigned bytes, which for UTF-8 is code point order.
    const auto before = [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : *a.second < *b.second;
    };
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(), before);
    std::vector<std::string> tokens;
    tokens.reserve(keep);
    for (std::size_t i = 0; i < keep; ++i)
        tokens.push_back(*ranked[i].second);
    return Tokenizer(m_kind, std::move(tokens));
}

}  // namespace widelab
