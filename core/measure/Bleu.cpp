#include "Bleu.h"

#include "runtime/SystemError.h"
#include "vocab/Utf8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

// What follows was written from sacreBLEU's documentation and the behaviour of
// its 2.x release (tokenizer_13a, metrics/bleu.py, metrics/chrf.py), which
// tests/app/bleu_sacrebleu.py checks line for line on generated text.

namespace widelab {
namespace {

// Byte length of the whitespace code point at text[pos] in Python's sense
// (str.isspace: \t \n \v \f \r, \x1c-\x1f, space, U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), or 0. `text` is valid UTF-8.
std::size_t spaceLength(std::string_view text, std::size_t pos)
{
    const auto at = [&](std::size_t i) { return i < text.size() ? static_cast<unsigned char>(text[i]) : 0u; };
    const unsigned b0 = at(pos);
    if ((b0 >= 0x09 && b0 <= 0x0d) || (b0 >= 0x1c && b0 <= 0x20))
        return 1;
    const unsigned b1 = at(pos + 1), b2 = at(pos + 2);
    if (b0 == 0xc2)
        return (b1 == 0x85 || b1 == 0xa0) ? 2 : 0;
    if (b0 == 0xe1)
        return (b1 == 0x9a && b2 == 0x80) ? 3 : 0;
    if (b0 == 0xe2 && b1 == 0x80)
        return (b2 <= 0x8a || b2 == 0xa8 || b2 == 0xa9 || b2 == 0xaf) ? 3 : 0;
    if (b0 == 0xe2 && b1 == 0x81)
        return b2 == 0x9f ? 3 : 0;
    if (b0 == 0xe3)
        return (b1 == 0x80 && b2 == 0x80) ? 3 : 0;
    return 0;
}

// Python's str.split(): the runs of non-whitespace.
std::vector<std::string_view> splitWords(std::string_view text)
{
    std::vector<std::string_view> words;
    std::size_t pos = 0, start = 0;
    bool inWord = false;
    while (pos < text.size()) {
        const std::size_t space = spaceLength(text, pos);
        if (space > 0) {
            if (inWord)
                words.push_back(text.substr(start, pos - start));
            inWord = false;
            pos += space;
            continue;
        }
        if (!inWord)
            start = pos;
        inWord = true;
        ++pos;
    }
    if (inWord)
        words.push_back(text.substr(start));
    return words;
}

// Python's str.rstrip().
std::string_view rstripSpace(std::string_view text)
{
    std::size_t end = 0, pos = 0;
    while (pos < text.size()) {
        const std::size_t space = spaceLength(text, pos);
        if (space > 0) {
            pos += space;
        } else {
            ++pos;
            end = pos;
        }
    }
    return text.substr(0, end);
}

void replaceAll(std::string& text, std::string_view from, std::string_view to)
{
    std::string out;
    out.reserve(text.size());
    std::size_t pos = 0;
    for (std::size_t hit; (hit = text.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(text, pos, hit - pos);
        out.append(to);
    }
    out.append(text, pos, std::string::npos);
    text = std::move(out);
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isPeriodOrComma(char c) { return c == '.' || c == ','; }

// 13a's first rule: the ASCII characters split off everywhere: space to &, ( to +,
// / , : to @, [ to `, { to ~ (so not ' , - . the digits and the letters).
bool splitsOff(char c)
{
    return (c >= ' ' && c <= '&') || (c >= '(' && c <= '+') || c == '/' || (c >= ':' && c <= '@')
           || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

// One left-to-right pass of a two-character rule, as a regular expression's
// substitution makes it: where `matches(text[i], text[i + 1])`, the pair is
// written by `write` and the scan goes on after it, so that matches never
// overlap. Bytes stand for characters here: every class the rules test is ASCII,
// and a multi-byte character's bytes are all non-ASCII, so a pair is found
// exactly where the characters' pair is.
template <typename Match, typename Write>
std::string pairPass(const std::string& text, Match matches, Write write)
{
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    std::size_t i = 0;
    while (i < text.size()) {
        if (i + 1 < text.size() && matches(text[i], text[i + 1])) {
            write(out, text[i], text[i + 1]);
            i += 2;
        } else {
            out.push_back(text[i]);
            ++i;
        }
    }
    return out;
}

void requireUtf8(const std::vector<std::string>& lines, const char* what)
{
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::size_t bad = findInvalidUtf8(lines[i]);
        if (bad != std::string_view::npos)
            throw BleuInputError(std::string(what) + " line " + std::to_string(i + 1) + ": byte "
                                 + std::to_string(bad + 1) + " is not UTF-8");
    }
}

void requireAligned(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references)
{
    if (hypotheses.size() != references.size())
        throw BleuInputError(std::to_string(hypotheses.size()) + " hypothesis lines against "
                             + std::to_string(references.size())
                             + " reference lines: they must be line-aligned, one reference a hypothesis");
    if (hypotheses.empty())
        throw BleuInputError("no lines to score");
    requireUtf8(hypotheses, "hypothesis");
    requireUtf8(references, "reference");
}

// sacreBLEU floors log(0) at -9999999999, so that a zero precision makes the score 0.
double flooredLog(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

std::string fixed(double value, int decimals)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

// The word n-grams of orders 1..kBleuMaxOrder of one line, each keyed by its
// tokens' numbers (interned per line pair) as bytes.
using NgramCounts = std::unordered_map<std::string, std::int64_t>;

NgramCounts wordNgrams(const std::vector<std::string_view>& tokens,
                       std::unordered_map<std::string_view, std::uint32_t>& numbers)
{
    std::vector<std::uint32_t> ids;
    ids.reserve(tokens.size());
    for (std::string_view token : tokens)
        ids.push_back(numbers.try_emplace(token, static_cast<std::uint32_t>(numbers.size())).first->second);
    NgramCounts counts;
    for (std::size_t n = 1; n <= kBleuMaxOrder; ++n)
        for (std::size_t i = 0; i + n <= ids.size(); ++i)
            ++counts[std::string(reinterpret_cast<const char*>(ids.data() + i), n * sizeof(std::uint32_t))];
    return counts;
}

}  // namespace

std::string tokenize13a(std::string_view line)
{
    std::string text(rstripSpace(line));
    replaceAll(text, "<skipped>", "");
    replaceAll(text, "-\n", "");
    replaceAll(text, "\n", " ");
    if (text.find('&') != std::string::npos) {
        replaceAll(text, "&quot;", "\"");
        replaceAll(text, "&amp;", "&");
        replaceAll(text, "&lt;", "<");
        replaceAll(text, "&gt;", ">");
    }
    std::string spaced = " ";
    spaced.reserve(text.size() * 2 + 2);
    for (char c : text) {
        if (splitsOff(c)) {
            spaced.push_back(' ');
            spaced.push_back(c);
            spaced.push_back(' ');
        } else {
            spaced.push_back(c);
        }
    }
    spaced.push_back(' ');
    // A period or comma after a non-digit: split off, a space after it too.
    spaced = pairPass(
        spaced, [](char a, char b) { return !isDigit(a) && isPeriodOrComma(b); },
        [](std::string& out, char a, char b) { out += a; out += ' '; out += b; out += ' '; });
    // A period or comma before a non-digit: split off, a space before it too.
    spaced = pairPass(
        spaced, [](char a, char b) { return isPeriodOrComma(a) && !isDigit(b); },
        [](std::string& out, char a, char b) { out += ' '; out += a; out += ' '; out += b; });
    // A dash after a digit.
    spaced = pairPass(
        spaced, [](char a, char b) { return isDigit(a) && b == '-'; },
        [](std::string& out, char a, char b) { out += a; out += ' '; out += b; out += ' '; });
    std::string joined;
    joined.reserve(spaced.size());
    for (std::string_view word : splitWords(spaced)) {
        if (!joined.empty())
            joined.push_back(' ');
        joined.append(word);
    }
    return joined;
}

std::string formatBleu(const BleuScore& bleu, int width)
{
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) about "literal" + std::string here.
    std::string line = "BLEU = ";
    line += fixed(bleu.score, width);
    for (std::size_t n = 0; n < kBleuMaxOrder; ++n) {
        line += n == 0 ? " " : "/";
        line += fixed(bleu.precisions[n], 1);
    }
    line += " (BP = ";
    line += fixed(bleu.brevityPenalty, 3);
    line += " ratio = ";
    line += fixed(bleu.ratio(), 3);
    line += " hyp_len = ";
    line += std::to_string(bleu.sysLen);
    line += " ref_len = ";
    line += std::to_string(bleu.refLen);
    line += ")";
    return line;
}

BleuScore corpusBleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references)
{
    requireAligned(hypotheses, references);
    BleuScore bleu;
    for (std::size_t line = 0; line < hypotheses.size(); ++line) {
        const std::string hypothesis = tokenize13a(hypotheses[line]);
        const std::string reference = tokenize13a(references[line]);
        const std::vector<std::string_view> hypTokens = splitWords(hypothesis);
        const std::vector<std::string_view> refTokens = splitWords(reference);
        std::unordered_map<std::string_view, std::uint32_t> numbers;
        const NgramCounts refCounts = wordNgrams(refTokens, numbers);
        const NgramCounts hypCounts = wordNgrams(hypTokens, numbers);
        for (const auto& [ngram, count] : hypCounts) {
            const std::size_t n = ngram.size() / sizeof(std::uint32_t) - 1;
            bleu.total[n] += count;
            const auto found = refCounts.find(ngram);
            if (found != refCounts.end())
                bleu.correct[n] += std::min(count, found->second);
        }
        bleu.sysLen += static_cast<std::int64_t>(hypTokens.size());
        bleu.refLen += static_cast<std::int64_t>(refTokens.size());
    }

    if (bleu.sysLen < bleu.refLen)
        bleu.brevityPenalty = bleu.sysLen > 0
            ? std::exp(1.0 - static_cast<double>(bleu.refLen) / static_cast<double>(bleu.sysLen)) : 0.0;
    if (std::all_of(bleu.correct.begin(), bleu.correct.end(), [](std::int64_t c) { return c == 0; }))
        return bleu;  // score and precisions 0
    double smoothing = 1.0;  // 'exp': each order without a match halves the count it is given
    for (std::size_t n = 0; n < kBleuMaxOrder; ++n) {
        if (bleu.total[n] == 0)
            break;  // this order and the higher ones stay 0, and so does the score
        const auto total = static_cast<double>(bleu.total[n]);
        if (bleu.correct[n] == 0) {
            smoothing *= 2.0;
            bleu.precisions[n] = 100.0 / (smoothing * total);
        } else {
            bleu.precisions[n] = 100.0 * static_cast<double>(bleu.correct[n]) / total;
        }
    }
    double logSum = 0.0;
    for (double precision : bleu.precisions)
        logSum += flooredLog(precision);
    bleu.score = bleu.brevityPenalty * std::exp(logSum / kBleuMaxOrder);
    return bleu;
}

std::string formatChrf(const ChrfScore& chrf, int width) { return "chrF2 = " + fixed(chrf.score, width); }

ChrfScore corpusChrf(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references)
{
    requireAligned(hypotheses, references);
    ChrfScore chrf;
    // A line without its whitespace, and where each of its code points starts (and where the last ends).
    const auto squeeze = [](const std::string& line, std::string& text, std::vector<std::size_t>& starts) {
        text.clear();
        for (std::string_view word : splitWords(line))
            text.append(word);
        starts.clear();
        for (std::size_t pos = 0, length = 0; pos < text.size(); pos += length) {
            starts.push_back(pos);
            decodeUtf8(text, pos, length);
        }
        starts.push_back(text.size());
    };
    std::string hyp, ref;
    std::vector<std::size_t> hypStarts, refStarts;
    for (std::size_t line = 0; line < hypotheses.size(); ++line) {
        squeeze(hypotheses[line], hyp, hypStarts);
        squeeze(references[line], ref, refStarts);
        const std::size_t hypChars = hypStarts.size() - 1, refChars = refStarts.size() - 1;
        for (std::size_t n = 1; n <= kChrfCharOrder; ++n) {
            const std::size_t refNgrams = refChars >= n ? refChars - n + 1 : 0;
            const std::size_t hypNgrams = hypChars >= n ? hypChars - n + 1 : 0;
            std::unordered_map<std::string_view, std::int64_t> refCounts, hypCounts;
            for (std::size_t i = 0; i < refNgrams; ++i)
                ++refCounts[std::string_view(ref).substr(refStarts[i], refStarts[i + n] - refStarts[i])];
            for (std::size_t i = 0; i < hypNgrams; ++i)
                ++hypCounts[std::string_view(hyp).substr(hypStarts[i], hypStarts[i + n] - hypStarts[i])];
            std::int64_t matched = 0;
            for (const auto& [ngram, count] : hypCounts) {
                const auto found = refCounts.find(ngram);
                if (found != refCounts.end())
                    matched += std::min(count, found->second);
            }
            // sacreBLEU counts a line's hypothesis n-grams only where its reference has some.
            chrf.hypothesis[n - 1] += refNgrams > 0 ? static_cast<std::int64_t>(hypNgrams) : 0;
            chrf.reference[n - 1] += static_cast<std::int64_t>(refNgrams);
            chrf.matched[n - 1] += matched;
        }
    }

    // Precision and recall averaged over the orders that both sides have, then F-beta (beta 2).
    const double factor = 2.0 * 2.0;
    double precision = 0.0, recall = 0.0;
    int orders = 0;
    for (std::size_t n = 0; n < kChrfCharOrder; ++n) {
        if (chrf.hypothesis[n] > 0 && chrf.reference[n] > 0) {
            precision += static_cast<double>(chrf.matched[n]) / static_cast<double>(chrf.hypothesis[n]);
            recall += static_cast<double>(chrf.matched[n]) / static_cast<double>(chrf.reference[n]);
            ++orders;
        }
    }
    if (orders > 0) {
        precision /= orders;
        recall /= orders;
    }
    if (precision + recall > 0.0)
        chrf.score = 100.0 * ((1.0 + factor) * precision * recall / (factor * precision + recall));
    return chrf;
}

std::vector<std::string> readScoringLines(const std::filesystem::path& file)
{
    const std::string bytes = readFileBytes(file);
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < bytes.size()) {
        const std::size_t end = bytes.find('\n', start);
        const std::size_t stop = end == std::string::npos ? bytes.size() : end;
        std::string line = bytes.substr(start, stop - start);
        const std::size_t bad = findInvalidUtf8(line);
        if (bad != std::string_view::npos) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(line[bad]));
            throw BleuInputError(file.string() + " line " + std::to_string(lines.size() + 1) + ": byte "
                                 + std::to_string(bad + 1) + " (" + hex
                                 + ") is not UTF-8; BLEU and chrF read UTF-8 text");
        }
        lines.push_back(std::move(line));
        start = stop + 1;
    }
    return lines;
}

}  // namespace widelab
