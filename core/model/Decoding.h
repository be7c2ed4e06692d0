// defines: DecodeOptions, greedyDecode: an encoder-decoder's translations of a
// batch of sources, token by token, with cached keys and values (a step costs
// one position) or by recomputing the prefix (the benchmark's comparison)
#pragma once

#include "WideTransformer.h"

#include <cstdint>
#include <vector>

namespace widelab {

struct DecodeOptions {
    std::int64_t startId = 2;    // the decoder's first input (the tokenizer's start token)
    std::int64_t endId = 3;      // ends a translation; not part of it
    std::int64_t maxLength = 0;  // most tokens a translation gets; 0 or more than model.max_len: max_len
    bool cache = true;           // false: every step runs the decoder over the whole prefix again
};

// The greedy translation of each source (ids [B, S], mask [B, S] bool or
// undefined), its token ids without the start and end tokens. The model must be
// a translation model in evaluation mode (std::invalid_argument otherwise).
std::vector<std::vector<std::int64_t>> greedyDecode(WideTransformerImpl& model, const torch::Tensor& source,
                                                    const torch::Tensor& sourceMask, const DecodeOptions& options);

}  // namespace widelab
