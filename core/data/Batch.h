// defines: Batch (padded tensors of a list of examples), makeBatch, makeTranslationBatch, modelMask, modelTargetMask,
// targetPositions, correctCounts, ImageAugmentation, makeImageBatch, BatchSampler (a deterministic shuffled order over a dataset that
// can be resumed, by examples or by a token budget)
#pragma once

#include "Datasets.h"
#include "Images.h"

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace widelab {

// B = batch, T = longest example; images: C = channels, H = W = side
struct Batch {
    torch::Tensor ids;        // [B, T] int64, right-padded with Tokenizer::kPad (undefined for images)
    torch::Tensor mask;       // [B, T] bool, true for real tokens (undefined for images)
    torch::Tensor targets;    // [B] int64 (classification) or [B, T] int64 (language model; padded positions 0);
                              // translation: [B, U] the target's tokens and </s>
    std::int64_t tokens = 0;  // real tokens in the batch (images: the images; the trainer counts patches);
                              // translation: the sources' and the targets' (with </s>)
    // Translation: the decoder's input, <s> and the target's tokens ([B, U] int64, padded
    // with Tokenizer::kPad), and which of its positions are real ([B, U] bool); it
    // also marks the `targets` that count. Undefined for other tasks.
    // Masked language model: `targetMask` alone, the positions chosen for prediction
    // ([B, T] bool), whose `targets` are the original tokens.
    torch::Tensor targetIds;
    torch::Tensor targetMask;
    std::int64_t targetTokens = 0;  // of `tokens`, the targets' (with </s>)
    torch::Tensor pixels;     // images: [B, C, H, W] float32, (pixel / 255 - mean) / std per channel
    // Mixup (images, training): each picture is mixWeight of its own and 1 - mixWeight
    // of its partner's, whose labels are mixTargets ([B] int64; undefined: no mixing).
    // mixWeight >= 0.5, so that `targets` hold each picture's larger share.
    torch::Tensor mixTargets;
    double mixWeight = 1.0;
    // A padded batch for a model with experts: the positions it routes
    // (WideTransformer::routedPositions), found on the host before the upload,
    // so that the device does not find them and read their count back.
    torch::Tensor routed;
    // The positions targetPositions marks (a language, masked or translation
    // model's counted targets), counted on the host before the upload; -1: not counted.
    std::int64_t countedTargets = -1;
};

// Pads a text batch's tensors on the right as the functions below pad them
// (ids with Tokenizer::kPad, masks false, targets 0): the source side to
// `length`, a translation batch's target side to `targetLength`. A side as
// long already stays; an image batch is left as it is. Its counts of real
// tokens stay, so modelMask then gives the mask.
void padBatch(Batch& batch, std::int64_t length, std::int64_t targetLength);

// Tensors on the CPU. Throws std::invalid_argument on an empty list, an example with no token, a classification
// example without a label (< 0), or a language-model example whose targets differ in length from its ids.
Batch makeBatch(const std::vector<Example>& examples, bool languageModel);

// Translation pairs: `ids` the sources, each example's `targets` the target's tokens
// and then the end token; the decoder's input is `startId` and the target's tokens.
// Throws std::invalid_argument on an empty list, an example with no source token or no target.
Batch makeTranslationBatch(const std::vector<Example>& examples, std::int64_t startId);

// BERT's masking of a masked language model's batch: of each example's tokens,
// round(rate x length) (at least one) are chosen at random for prediction; a
// chosen token becomes the mask id with probability maskShare, a random token
// (uniform over [randomFirst, randomEnd)) with probability randomShare, and is
// otherwise kept. Example b draws from a generator seeded by mixSeed(seed, first + b).
struct TokenMasking {
    double rate = 0.15;
    double maskShare = 0.8, randomShare = 0.1;
    std::int64_t maskId = 0;
    std::int64_t randomFirst = 0, randomEnd = 0;
    std::uint64_t seed = 0;
    std::int64_t first = 0;  // the first example's place (in the global batch, or the split when evaluating)
};

// The mask token of a masked language model reading text with `tokenizer`: the
// id after the tokenizer's last (model.vocab_size leaves room for it), shown as
// kMaskTokenText.
std::int64_t maskTokenId(const Tokenizer& tokenizer);
inline constexpr const char* kMaskTokenText = "<mask>";

// A masked language model's batch: `ids` the masked tokens, `targets` the original
// ones ([B, T]), `targetMask` the chosen positions. Throws std::invalid_argument
// on an empty list or an example with no token, as makeBatch.
Batch makeMaskedBatch(const std::vector<Example>& examples, const TokenMasking& masking);

// The mask a model is given for the batch: none when every token is real (a full
// batch, or images), so that it routes without gathering tokens and a language
// model's attention takes the kernel's causal rule; the batch's own mask still
// weighs the loss.
torch::Tensor modelMask(const Batch& batch);
// The same for a translation batch's targets (undefined for other batches).
torch::Tensor modelTargetMask(const Batch& batch);
// The positions whose targets count for a language or translation model: the
// target mask of a translation batch, else the token mask.
const torch::Tensor& targetPositions(const Batch& batch);

// Correct predictions and how many were counted, [2] float64 on the logits'
// device: classes for classification (logits [B, classes]), next tokens at real
// positions for a language model (logits [B, T, vocabulary]), and for a translation
// model the target's tokens and end (logits [B, U, vocabulary], `languageModel` true).
torch::Tensor correctCounts(const torch::Tensor& logits, const Batch& batch, bool languageModel);

// Training augmentation of an image batch: example b is augmented (augmentImage) with a generator seeded by
// mixSeed(seed, b), so that a batch is the same whenever its seed is (a resumed run sees the same batches).
struct ImageAugmentation {
    std::int64_t padding = 0;  // task.crop_padding; 0: no crop
    bool flip = false;         // task.flip
    std::uint64_t seed = 0;
    // Each example's draw is keyed by its place in the global batch: the first
    // example here is that batch's `first` (a distributed rank's share starts
    // later), so that W ranks crop and flip as one process does.
    std::int64_t first = 0;
    // task.mixup: Mixup's concentration alpha (0: off). The batch draws one weight
    // lambda from Beta(alpha, alpha) (from `seed`, taken as max(lambda, 1 - lambda)) and
    // mixes each picture with the one before it (the first with the last), labels alike:
    // a distributed rank mixes within its share.
    double mixup = 0.0;
    // task.crop_scale: an Inception-style crop of at least this share of the area
    // (inceptionCrop), before the padded crop and the flip; 0: none.
    double cropScale = 0.0;
    // task.randaugment and task.randaugment_magnitude: RandAugment's operations
    // (randAugment) after the flip; 0: none.
    int randAugment = 0;
    int randAugmentMagnitude = 9;
};

// A draw from Beta(alpha, alpha), 0 < alpha <= 1 (Johnk's method, from uniforms alone, so that it is the
// same on every machine); std::invalid_argument for another alpha.
double symmetricBeta(double alpha, class DataRandom& random);

// Images to a batch: `pixels` normalised with `stats`, `targets` the labels; ids and mask stay undefined.
// `augment` (training only; null in evaluation) changes the pixels before normalisation. Throws
// std::invalid_argument on an empty list, an example without a label, or pixels that are not the format's size.
Batch makeImageBatch(const std::vector<Example>& examples, ImageFormat format, const ImageStats& stats,
                     const ImageAugmentation* augment = nullptr);
// One image ([1, C, H, W] float32, normalised), for probes.
torch::Tensor imageTensor(const Image& image, const ImageStats& stats);

// Deterministic shuffled order over a dataset, epoch after epoch: the sequence of indices depends only on
// (seed, size). Epoch e is a permutation of 0..size-1 drawn from mixSeed(seed, e); a batch that runs past the end
// of an epoch continues with the next one, so every batch has batchSize indices.
// By a token budget instead, a batch takes the indices in the same order for as long
// as their costs (tokens) sum to at most the budget, and at least one.
class BatchSampler {
public:
    BatchSampler(std::int64_t datasetSize, std::int64_t batchSize, std::uint64_t seed);  // sizes >= 1
    // Example i costs costs[i] >= 0 tokens; budget >= 1; costs not empty.
    BatchSampler(std::vector<std::int64_t> costs, std::int64_t budget, std::uint64_t seed);

    std::vector<std::int64_t> next();  // the next batch's indices (reshuffles at each epoch end)
    std::int64_t position() const { return m_position; }  // indices handed out so far in total (for checkpoints)
    void seek(std::int64_t position);  // restores a position (>= 0), so a resumed run gets the same batches
    std::int64_t epoch() const { return m_position / m_size; }  // the epoch the next index comes from
    std::int64_t datasetSize() const { return m_size; }
    std::int64_t batchSize() const { return m_batchSize; }  // 0 with a token budget

private:
    void shuffle(std::int64_t epoch);

    std::int64_t m_size;
    std::int64_t m_batchSize;
    std::vector<std::int64_t> m_costs;  // with a token budget
    std::int64_t m_budget = 0;
    std::uint64_t m_seed;
    std::int64_t m_position = 0;
    std::int64_t m_orderEpoch = -1;  // the epoch `m_order` belongs to
    std::vector<std::int64_t> m_order;
};

}  // namespace widelab
