// defines: tokenize13a, corpusBleu, corpusChrf, BleuScore, ChrfScore,
// BleuInputError, readScoringLines: corpus BLEU and chrF of line-aligned
// hypotheses and references (one reference a line), equal to sacreBLEU's
// corpus_bleu and corpus_chrf with their defaults (13a tokenisation, n-grams up
// to 4, exponential smoothing; chrF2: character n-grams up to 6, no word
// n-grams, beta 2, whitespace removed). No torch, no Qt.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace widelab {

// Input that cannot be scored: hypotheses and references of unequal counts, no
// lines at all, a line that is not UTF-8. The message says which and where.
class BleuInputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// sacreBLEU's default tokenisation ('13a', the rules of mteval-v13a.pl) of one
// line of valid UTF-8: the line's trailing whitespace goes, "<skipped>" goes,
// &quot; &amp; &lt; &gt; become " & < > (in that order, one pass each); then
// ASCII punctuation and symbols other than ' , - . are split off; a period or
// comma is split off unless it stands between two digits (the side next to a
// digit stays joined); a dash after a digit is split off. Tokens are separated
// by one space, split on whitespace as Python's str.split() knows it (Unicode
// spaces included).
std::string tokenize13a(std::string_view line);

inline constexpr int kBleuMaxOrder = 4;

struct BleuScore {
    double score = 0.0;                                    // 0..100
    std::array<std::int64_t, kBleuMaxOrder> correct{};     // matched n-grams (clipped), n = 1..4
    std::array<std::int64_t, kBleuMaxOrder> total{};       // hypothesis n-grams
    std::array<double, kBleuMaxOrder> precisions{};        // percent, after smoothing
    double brevityPenalty = 1.0;
    std::int64_t sysLen = 0;                               // hypothesis tokens, summed
    std::int64_t refLen = 0;                               // reference tokens, summed
    double ratio() const { return refLen > 0 ? static_cast<double>(sysLen) / static_cast<double>(refLen) : 0.0; }
};

// The line sacreBLEU prints for the score (its str()), the score to `width`
// decimals: "BLEU = 23.45 55.1/30.2/18.0/11.3 (BP = 1.000 ratio = 1.020
// hyp_len = 1234 ref_len = 1210)".
std::string formatBleu(const BleuScore& bleu, int width = 2);

// Corpus BLEU: n-gram matches and lengths summed over the lines, then
// precisions with 'exp' smoothing (an order with no match gets 100 / (2^k *
// total), k counting such orders), the geometric mean of the four, and the
// brevity penalty exp(1 - ref_len / sys_len) when the hypotheses are shorter.
// No match at all, or an order with no hypothesis n-gram, scores 0. Throws
// BleuInputError for unequal counts, no lines, or a line that is not UTF-8.
BleuScore corpusBleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);

inline constexpr int kChrfCharOrder = 6;

struct ChrfScore {
    double score = 0.0;                                    // 0..100
    // Per character n-gram order (1..6), summed over the lines: hypothesis n-grams
    // (counted only on lines whose reference has n-grams of that order),
    // reference n-grams, and matches.
    std::array<std::int64_t, kChrfCharOrder> hypothesis{};
    std::array<std::int64_t, kChrfCharOrder> reference{};
    std::array<std::int64_t, kChrfCharOrder> matched{};
};

// "chrF2 = 54.32", as sacreBLEU prints it.
std::string formatChrf(const ChrfScore& chrf, int width = 2);

// Corpus chrF2: character (code point) n-grams of orders 1..6 of each line with
// its whitespace removed; precision and recall averaged over the orders for
// which both hypotheses and references have n-grams; F-beta with beta 2.
// Throws as corpusBleu.
ChrfScore corpusChrf(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);

// The lines of a text file as sacreBLEU's command reads them: split at '\n'
// only (a '\r' stays, and counts as whitespace), no line after a final '\n', an
// empty file has none. Throws FileError (runtime/SystemError.h) when it cannot
// be read, BleuInputError naming the file, line and byte when a line is not
// UTF-8.
std::vector<std::string> readScoringLines(const std::filesystem::path& file);

}  // namespace widelab
