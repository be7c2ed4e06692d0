// defines: parseJsonText and tryParseJsonText, the one JSON parser for files a user
// can hand WideLab (configurations, a run directory's files): nesting is bounded and
// a key repeated in one object is an error, both found before any deep value is built
#pragma once

#include "ConfigError.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace widelab {

// Deeper nesting is refused: a WideLab document needs 3 levels. The bound keeps
// every recursive walk of a parsed value (destruction, dump(), comparison) shallow.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON value. Throws ConfigError for malformed JSON
// ("ORIGIN: not valid JSON: ..."), nesting deeper than kMaxJsonDepth
// ("ORIGIN: nesting deeper than 64 levels at line L"), and keys repeated within
// one object (one issue per repetition, keyed by its dotted path, e.g.
// "model.heads: repeated key", after an "ORIGIN: invalid configuration" line).
// `origin` (a file name) may be empty.
nlohmann::json parseJsonText(const std::string& text, const std::string& origin);

// The same for files WideLab writes itself (status.json, metrics.jsonl, ...),
// where a damaged file is skipped rather than reported: nullopt, and the reason
// in `error` when given.
std::optional<nlohmann::json> tryParseJsonText(const std::string& text, std::string* error = nullptr);

// The whole of `file`, byte for byte, to hand one of the two; empty when it
// cannot be read (which either parser then reports, or skips).
std::string readFileText(const std::filesystem::path& file);

}  // namespace widelab
