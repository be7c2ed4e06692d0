// defines: kPaperBeamSize, kPaperLengthPenalty: the Multi-Path paper's search
// for its test translations (a beam of 4 and GNMT's length penalty 0.6), what
// `translate`, `eval` and the studies use unless told otherwise
#pragma once

#include <cstdint>

namespace widelab {

inline constexpr std::int64_t kPaperBeamSize = 4;
inline constexpr double kPaperLengthPenalty = 0.6;

}  // namespace widelab
