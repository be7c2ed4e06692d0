// defines: the input of a text pair (BERT's sentence pairs, as MNLI's premise and hypothesis): kSeparatorText,
// encodePair, splitProbePair, segmentIds' rule
#pragma once

#include "Tokenizer.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace widelab {

// A pair is read as  first <sep> second <sep>: the separator is the model's last id (model.vocab_size - 1, past
// the tokenizer's ids; a masked LM of the same vocab_size had its mask token there). Each token's segment is the
// number of separators before it, so that the first text and its separator are segment 0 and the second text
// and its separator segment 1 (core/model/Embedding computes it from the ids).
inline constexpr const char* kSeparatorText = "<sep>";
inline std::int64_t separatorId(std::int64_t vocabSize) { return vocabSize - 1; }

// The shortest length a pair fits in: a token of each text and the two separators.
inline constexpr std::int64_t kShortestPair = 4;

// The two texts' tokens with their separators, at most maxLength (>= kShortestPair) in all: while they are too
// long, the longer text loses its last token (the second on a tie), so that each keeps at least one. A text
// without tokens keeps none. std::invalid_argument for a maxLength below kShortestPair.
std::vector<std::int64_t> encodePair(const Tokenizer& tokenizer, std::string_view first, std::string_view second,
                                     std::int64_t maxLength, std::int64_t separator);

// The text a pair's ids came from, as a probe writes it: "first || second" (what follows a second separator is
// left out). Ids without a separator: their text alone.
std::string pairText(const Tokenizer& tokenizer, const std::vector<std::int64_t>& ids, std::int64_t separator);

// A probe's two texts: split at the first tab, else at the first " || " (a tab is hard to type in a text box);
// neither: the whole text is the first and the second is empty.
std::pair<std::string_view, std::string_view> splitProbePair(std::string_view text);

}  // namespace widelab
