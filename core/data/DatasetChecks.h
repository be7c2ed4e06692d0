// defines: checkFractions, checkSequenceLength, checkIndex: the arguments every
// dataset of Datasets.h checks alike (std::invalid_argument, std::out_of_range);
// splitOfRow: the split a file's row goes to
#pragma once

#include "Datasets.h"

#include <cstdint>

namespace widelab {

void checkFractions(const SplitFractions& fractions);  // each in [0, 1], summing to at most 1
void checkSequenceLength(std::int64_t sequenceLength);  // at least 1
void checkIndex(std::int64_t index, std::int64_t size);  // an example of a dataset of `size`

// The split of data row `row` (counted from 0) of a file read with `seed`: from a
// hash of the two, so deterministic and independent of the other rows; Test with
// probability fractions.test, Validation with fractions.validation, else Train.
Split splitOfRow(std::uint64_t seed, std::int64_t row, const SplitFractions& fractions);

}  // namespace widelab
