// defines: legibleBytes (any byte sequence as readable, valid UTF-8), hexByte, bytesToJson and bytesFromJson (any
// byte sequence through a JSON document and back, unchanged), toBase64 and fromBase64
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <cstdint>
#include <vector>

namespace widelab {

// Byte-level tokens are not text: a probe cut from binary data, or from UTF-8 cut
// inside a character, is a byte sequence that JSON strings and Qt cannot hold.
// These functions are the one place that turns such bytes into something that
// can be stored and shown.

// "\xNN", lower-case hex.
std::string hexByte(unsigned char c);

// `bytes` with every valid UTF-8 sequence kept and every byte of an invalid or
// partial one written "\xNN" ("caf\xc3" for a cut "café"): valid UTF-8, for display
// and for records that are only read by people. Not reversible (a literal "\x41"
// in the input stays as it is).
std::string legibleBytes(std::string_view bytes);

// `bytes` as a JSON value, losslessly: a string when it is valid UTF-8, else
// {"hex": "<two lower-case hex digits a byte>"}.
nlohmann::json bytesToJson(std::string_view bytes);

// The bytes of a value bytesToJson wrote (a string, or {"hex": ...} with an even
// number of hex digits and no other key); std::nullopt for anything else.
std::optional<std::string> bytesFromJson(const nlohmann::json& value);

// Base64 with the standard alphabet and '=' padding (RFC 4648), as metrics.jsonl
// stores a probe's pixels; fromBase64 refuses anything else (a length that is no
// multiple of 4, a foreign character, padding that is not at the end): nullopt.
std::string toBase64(const std::vector<std::uint8_t>& bytes);
std::optional<std::vector<std::uint8_t>> fromBase64(std::string_view text);

}  // namespace widelab
