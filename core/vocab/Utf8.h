// defines: decodeUtf8, findInvalidUtf8, replaceInvalidUtf8: UTF-8 read strictly (no overlong forms,
// surrogates or code points above U+10FFFF), for tokenizers, display and the
// metrics file alike
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace widelab {

// Decodes the UTF-8 sequence at text[pos]: returns its code point and sets `length` to its byte count (1..4),
// or sets `length` to 0 when the sequence is invalid.
char32_t decodeUtf8(std::string_view text, std::size_t pos, std::size_t& length);

// Offset of the first byte of the first invalid UTF-8 sequence in `text` (truncated or overlong sequences,
// surrogates, code points above U+10FFFF, stray continuation bytes), or std::string_view::npos when it is valid.
std::size_t findInvalidUtf8(std::string_view text);

// `text` with each maximal ill-formed subsequence (a first byte and the continuation
// bytes that could still have completed it, or a single byte that starts nothing)
// replaced by U+FFFD, as Python's bytes.decode("utf-8", errors="replace") does: what
// a byte-level tokenizer's output becomes where text must be UTF-8 (BLEU, a file of
// translations). Valid text comes back unchanged.
std::string replaceInvalidUtf8(std::string_view text);

}  // namespace widelab
