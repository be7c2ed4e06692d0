// defines: decodingFor, decodeAll: an encoder-decoder's translations of any number of token
// sequences, a batch at a time, greedy or by beam search (the run's evaluations,
// probes and widelab-cli translate)
#pragma once

#include "Decoding.h"
#include "data/Tokenizer.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace widelab {

// What a run's tokenizer fixes of decoding: its start and end tokens, and its
// vocabulary (no id past it is written). std::invalid_argument for a tokenizer
// without start and end tokens (only bpe has them).
DecodeOptions decodingFor(const Tokenizer& tokenizer);

// The translation of each source (token ids, none empty), in order, without start
// and end tokens: `batchSize` sources at a time, padded, on the model's device. A
// translation gets at most 50 tokens more than the longest source of its batch
// (tensor2tensor's rule), and at most options.maxLength when that is set.
// options.beamSize above 1: beam search (beamDecode) with options.lengthPenalty.
// `betweenBatches` is called before each batch (it may throw to stop). The model
// must be a translation model; it is put in evaluation mode and left there.
// Throws std::invalid_argument for an empty source or a batch size below 1.
std::vector<std::vector<std::int64_t>> decodeAll(WideTransformerImpl& model,
                                                 const std::vector<std::vector<std::int64_t>>& sources,
                                                 const DecodeOptions& options, std::int64_t batchSize,
                                                 const std::function<void()>& betweenBatches = {});

}  // namespace widelab
