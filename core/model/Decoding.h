// defines: DecodeOptions, greedyDecode, BeamHypothesis, BeamStep, lengthPenalty,
// beamSearch, beamDecode: an encoder-decoder's translations of a batch of
// sources, token by token, with cached keys and values (a step costs one
// position) or by recomputing the prefix (the benchmark's comparison); greedily
// or by beam search
#pragma once

#include "WideTransformer.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace widelab {

struct DecodeOptions {
    std::int64_t startId = 2;    // the decoder's first input (the tokenizer's start token)
    std::int64_t endId = 3;      // ends a translation; not part of it
    std::int64_t maxLength = 0;  // most tokens a translation gets; 0 or more than model.max_len: max_len
    bool cache = true;           // false: every step runs the decoder over the whole prefix again
    // > 0: ids at or above it are never written (the tokenizer's vocabulary, which
    // a BPE that learned fewer merges than model.vocab_size allows leaves short of
    // the output's rows: those rows are no token). 0: every row of the output.
    std::int64_t vocabulary = 0;
    // Beam search (beamDecode, beamSearch; greedyDecode reads neither): the
    // hypotheses kept per source, and the length penalty's alpha (lengthPenalty).
    std::int64_t beamSize = 1;
    double lengthPenalty = 0.0;
};

// The greedy translation of each source (ids [B, S], mask [B, S] bool or
// undefined), its token ids without the start and end tokens. The model must be
// a translation model in evaluation mode (std::invalid_argument otherwise).
std::vector<std::vector<std::int64_t>> greedyDecode(WideTransformerImpl& model, const torch::Tensor& source,
                                                    const torch::Tensor& sourceMask, const DecodeOptions& options);

// A beam search's answer for one source.
struct BeamHypothesis {
    std::vector<std::int64_t> tokens;  // without the start and end tokens
    double logProb;                    // the sum of its tokens' log-probabilities, the end token's included
    double score;                      // logProb / lengthPenalty(its length, the end token included); -inf: none found
};

// GNMT's length penalty ((5 + length) / 6)^alpha (Wu et al. 2016, eq. 14), as
// tensor2tensor's beam search and the Multi-Path Transformer's translations use
// it: a hypothesis scores its log-probability divided by it, so alpha > 0
// favours longer ones; alpha 0 is the plain log-probability.
double lengthPenalty(std::int64_t length, double alpha);

// One step of a search: the log-probabilities [R, V] of the next token after
// each of R prefixes ([R, t] int64 on the CPU, each starting with the start
// token). Row r of the prefixes continues row from[r] of the previous step's
// ([R] int64 on the CPU; undefined on the first step, whose rows are the
// search's starting rows): a caching step reorders its caches by it.
using BeamStep = std::function<torch::Tensor(const torch::Tensor& prefixes, const torch::Tensor& from)>;

// The best hypothesis of each of `sources` sources by beam search over `step`,
// for at most options.maxLength (> 0) tokens, the end token included. The rows
// are the unfinished sources' beams, options.beamSize a source in source order;
// the first step's rows are every source's, its beams but the first empty.
// Each step keeps the beamSize best extensions of a source's beams (by
// log-probability): those that are the end token finish, with their penalised
// score (lengthPenalty with options.lengthPenalty), and the best extensions
// that do not end, taken further down the ranking where needed, are the next
// step's beams (fairseq's rule: with beamSize 1 and alpha 0 this is greedy
// decoding). A source is done when its best finished score is at least what its
// best live beam could still score (its log-probability over the penalty of the
// longest length: a beam's log-probability only falls), or at maxLength, where
// the live beams finish as they are. std::invalid_argument for a beamSize below 1,
// a negative alpha or no maxLength.
std::vector<BeamHypothesis> beamSearch(std::int64_t sources, const BeamStep& step, const DecodeOptions& options);

// Each source's translation by beam search (beamSearch over the model's
// log-softmax), as greedyDecode's: its token ids without the start and end
// tokens. Beams live in the batch dimension of the decoder's caches
// (DecoderState::reorder follows them); options.cache false recomputes every
// prefix. beamSize 1 with lengthPenalty 0 gives greedyDecode's translations.
std::vector<std::vector<std::int64_t>> beamDecode(WideTransformerImpl& model, const torch::Tensor& source,
                                                  const torch::Tensor& sourceMask, const DecodeOptions& options);

}  // namespace widelab
