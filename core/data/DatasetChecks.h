// defines: checkFractions, checkSequenceLength, checkIndex: the arguments every
// dataset of Datasets.h checks alike (std::invalid_argument, std::out_of_range)
#pragma once

#include "Datasets.h"

#include <cstdint>

namespace widelab {

void checkFractions(const SplitFractions& fractions);  // each in [0, 1], summing to at most 1
void checkSequenceLength(std::int64_t sequenceLength);  // at least 1
void checkIndex(std::int64_t index, std::int64_t size);  // an example of a dataset of `size`

}  // namespace widelab
