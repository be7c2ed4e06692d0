#include "Batch.h"

#include "ListOps.h"
#include "RandAugment.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace widelab {

Batch makeBatch(const std::vector<Example>& examples, bool languageModel)
{
    if (examples.empty())
        throw std::invalid_argument("makeBatch: no examples");
    std::int64_t longest = 0;
    for (std::size_t b = 0; b < examples.size(); ++b) {
        const Example& example = examples[b];
        const std::string which = "makeBatch: example " + std::to_string(b);
        if (example.ids.empty())
            throw std::invalid_argument(which + " has no token");
        if (languageModel && example.targets.size() != example.ids.size())
            throw std::invalid_argument(which + " has " + std::to_string(example.targets.size()) + " targets for "
                                        + std::to_string(example.ids.size()) + " tokens");
        if (!languageModel && example.label < 0)
            throw std::invalid_argument(which + " has no label");
        longest = std::max(longest, static_cast<std::int64_t>(example.ids.size()));
    }
    // B = batch, T = longest example
    const auto B = static_cast<std::int64_t>(examples.size());
    const std::int64_t T = longest;
    Batch batch;
    batch.ids = torch::full({B, T}, Tokenizer::kPad, torch::kInt64);
    batch.mask = torch::zeros({B, T}, torch::kBool);
    batch.targets = languageModel ? torch::zeros({B, T}, torch::kInt64) : torch::empty({B}, torch::kInt64);
    auto* ids = batch.ids.data_ptr<std::int64_t>();
    auto* mask = batch.mask.data_ptr<bool>();
    auto* targets = batch.targets.data_ptr<std::int64_t>();
    for (std::int64_t b = 0; b < B; ++b) {
        const Example& example = examples[static_cast<std::size_t>(b)];
        const auto length = static_cast<std::int64_t>(example.ids.size());
        std::copy(example.ids.begin(), example.ids.end(), ids + b * T);
        std::fill(mask + b * T, mask + b * T + length, true);
        if (languageModel)
            std::copy(example.targets.begin(), example.targets.end(), targets + b * T);
        else
            targets[b] = example.label;
        batch.tokens += length;
    }
    return batch;
}

std::int64_t maskTokenId(const Tokenizer& tokenizer) { return tokenizer.vocabSize(); }

Batch makeMaskedBatch(const std::vector<Example>& examples, const TokenMasking& masking)
{
    if (examples.empty())
        throw std::invalid_argument("makeMaskedBatch: no examples");
    std::int64_t longest = 0;
    for (std::size_t b = 0; b < examples.size(); ++b) {
        if (examples[b].ids.empty())
            throw std::invalid_argument("makeMaskedBatch: example " + std::to_string(b) + " has no token");
        longest = std::max(longest, static_cast<std::int64_t>(examples[b].ids.size()));
    }
    const auto B = static_cast<std::int64_t>(examples.size());
    const std::int64_t T = longest;
    Batch batch;
    batch.ids = torch::full({B, T}, Tokenizer::kPad, torch::kInt64);
    batch.mask = torch::zeros({B, T}, torch::kBool);
    batch.targets = torch::zeros({B, T}, torch::kInt64);
    batch.targetMask = torch::zeros({B, T}, torch::kBool);
    auto* ids = batch.ids.data_ptr<std::int64_t>();
    auto* mask = batch.mask.data_ptr<bool>();
    auto* targets = batch.targets.data_ptr<std::int64_t>();
    auto* chosen = batch.targetMask.data_ptr<bool>();
    const auto randomTokens = static_cast<std::uint64_t>(std::max<std::int64_t>(1, masking.randomEnd - masking.randomFirst));
    std::vector<std::int64_t> order;
    for (std::int64_t b = 0; b < B; ++b) {
        const std::vector<std::int64_t>& tokens = examples[static_cast<std::size_t>(b)].ids;
        const auto length = static_cast<std::int64_t>(tokens.size());
        std::int64_t* row = ids + b * T;
        std::copy(tokens.begin(), tokens.end(), row);
        std::copy(tokens.begin(), tokens.end(), targets + b * T);
        std::fill(mask + b * T, mask + b * T + length, true);
        batch.tokens += length;

        DataRandom random(mixSeed(masking.seed, static_cast<std::uint64_t>(masking.first + b)));
        const auto picks = std::clamp<std::int64_t>(std::llround(masking.rate * static_cast<double>(length)), 1, length);
        order.resize(static_cast<std::size_t>(length));
        std::iota(order.begin(), order.end(), std::int64_t{0});
        for (std::int64_t i = 0; i < picks; ++i) {  // the first `picks` of a random permutation
            const auto j = i + static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(length - i)));
            std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
        }
        // Then what becomes of each: the positions are the same whatever the shares.
        for (std::int64_t i = 0; i < picks; ++i) {
            const std::int64_t t = order[static_cast<std::size_t>(i)];
            chosen[b * T + t] = true;
            const double u = random.uniform();
            if (u < masking.maskShare)
                row[t] = masking.maskId;
            else if (u < masking.maskShare + masking.randomShare)
                row[t] = masking.randomFirst + static_cast<std::int64_t>(random.below(randomTokens));
        }
    }
    return batch;
}

Batch makeTranslationBatch(const std::vector<Example>& examples, std::int64_t startId)
{
    if (examples.empty())
        throw std::invalid_argument("makeTranslationBatch: no examples");
    std::int64_t longestSource = 0, longestTarget = 0;
    for (std::size_t b = 0; b < examples.size(); ++b) {
        const Example& example = examples[b];
        if (example.ids.empty() || example.targets.empty())
            throw std::invalid_argument("makeTranslationBatch: example " + std::to_string(b) + " has no "
                                        + (example.ids.empty() ? "source token" : "target"));
        longestSource = std::max(longestSource, static_cast<std::int64_t>(example.ids.size()));
        longestTarget = std::max(longestTarget, static_cast<std::int64_t>(example.targets.size()));
    }
    // B = batch, S = longest source, U = longest target (with its end token)
    const auto B = static_cast<std::int64_t>(examples.size());
    const std::int64_t S = longestSource, U = longestTarget;
    Batch batch;
    batch.ids = torch::full({B, S}, Tokenizer::kPad, torch::kInt64);
    batch.mask = torch::zeros({B, S}, torch::kBool);
    batch.targetIds = torch::full({B, U}, Tokenizer::kPad, torch::kInt64);
    batch.targetMask = torch::zeros({B, U}, torch::kBool);
    batch.targets = torch::zeros({B, U}, torch::kInt64);
    auto* ids = batch.ids.data_ptr<std::int64_t>();
    auto* mask = batch.mask.data_ptr<bool>();
    auto* targetIds = batch.targetIds.data_ptr<std::int64_t>();
    auto* targetMask = batch.targetMask.data_ptr<bool>();
    auto* targets = batch.targets.data_ptr<std::int64_t>();
    for (std::int64_t b = 0; b < B; ++b) {
        const Example& example = examples[static_cast<std::size_t>(b)];
        const auto source = static_cast<std::int64_t>(example.ids.size());
        const auto target = static_cast<std::int64_t>(example.targets.size());
        std::copy(example.ids.begin(), example.ids.end(), ids + b * S);
        std::fill(mask + b * S, mask + b * S + source, true);
        // The decoder reads <s> and the target, and predicts the target and </s>.
        targetIds[b * U] = startId;
        std::copy(example.targets.begin(), example.targets.end() - 1, targetIds + b * U + 1);
        std::fill(targetMask + b * U, targetMask + b * U + target, true);
        std::copy(example.targets.begin(), example.targets.end(), targets + b * U);
        batch.tokens += source + target;
        batch.targetTokens += target;
    }
    return batch;
}

// Counted on the host when the batch was made: reading a mask on a GPU would wait for it.
void padBatch(Batch& batch, std::int64_t length, std::int64_t targetLength)
{
    const auto pad = [](torch::Tensor& t, std::int64_t to, double value) {
        if (t.defined() && t.dim() == 2 && t.size(1) < to)
            t = torch::constant_pad_nd(t, {0, to - t.size(1)}, value);
    };
    if (!batch.ids.defined())
        return;
    const bool translation = batch.targetIds.defined();
    pad(batch.ids, length, static_cast<double>(Tokenizer::kPad));
    pad(batch.mask, length, 0.0);
    if (translation) {
        pad(batch.targetIds, targetLength, static_cast<double>(Tokenizer::kPad));
        pad(batch.targetMask, targetLength, 0.0);
        pad(batch.targets, targetLength, 0.0);
    } else {
        pad(batch.targetMask, length, 0.0);  // a masked language model's
        pad(batch.targets, length, 0.0);     // a language model's (a classifier's are [B])
    }
}

torch::Tensor modelMask(const Batch& batch)
{
    const bool full = batch.tokens - batch.targetTokens == batch.ids.numel();
    return !batch.mask.defined() || full ? torch::Tensor() : batch.mask;
}

torch::Tensor modelTargetMask(const Batch& batch)
{
    const bool full = batch.targetTokens == batch.targetIds.numel();
    return !batch.targetMask.defined() || full ? torch::Tensor() : batch.targetMask;
}

const torch::Tensor& targetPositions(const Batch& batch)
{
    return batch.targetMask.defined() ? batch.targetMask : batch.mask;
}

torch::Tensor correctCounts(const torch::Tensor& logits, const Batch& batch, bool languageModel)
{
    const torch::Tensor predicted = logits.argmax(-1);
    if (!languageModel) {
        const torch::Tensor hits = predicted.eq(batch.targets).sum().to(torch::kFloat64);
        return torch::stack({hits, torch::full_like(hits, static_cast<double>(batch.targets.size(0)))});
    }
    const torch::Tensor& counted = targetPositions(batch);
    const torch::Tensor hits = predicted.eq(batch.targets).logical_and(counted);
    return torch::stack({hits.sum().to(torch::kFloat64), counted.sum().to(torch::kFloat64)});
}

namespace {

// HWC bytes -> CHW floats, normalised, into `out` (C * H * W floats).
void normalise(const Image& image, const ImageStats& stats, float* out)
{
    const std::int64_t C = image.channels, HW = image.width * image.height;
    for (std::int64_t c = 0; c < C; ++c) {
        const double mean = stats.mean[static_cast<std::size_t>(c)], std = stats.std[static_cast<std::size_t>(c)];
        for (std::int64_t i = 0; i < HW; ++i)
            out[c * HW + i] = static_cast<float>((image.pixels[static_cast<std::size_t>(i * C + c)] / 255.0 - mean) / std);
    }
}

void checkStats(const ImageStats& stats, std::int64_t channels)
{
    if (static_cast<std::int64_t>(stats.mean.size()) != channels || static_cast<std::int64_t>(stats.std.size()) != channels)
        throw std::invalid_argument("image batch: normalisation for " + std::to_string(stats.mean.size())
                                    + " channels, images of " + std::to_string(channels));
}

}  // namespace

Batch makeImageBatch(const std::vector<Example>& examples, ImageFormat format, const ImageStats& stats,
                     const ImageAugmentation* augment)
{
    if (examples.empty())
        throw std::invalid_argument("makeImageBatch: no examples");
    checkStats(stats, format.channels);
    // B = batch, C = channels, S = side
    const auto B = static_cast<std::int64_t>(examples.size());
    const std::int64_t C = format.channels, S = format.side;
    Batch batch;
    batch.pixels = torch::empty({B, C, S, S}, torch::kFloat32);
    batch.targets = torch::empty({B}, torch::kInt64);
    float* pixels = batch.pixels.data_ptr<float>();
    auto* targets = batch.targets.data_ptr<std::int64_t>();
    for (std::int64_t b = 0; b < B; ++b) {
        const Example& example = examples[static_cast<std::size_t>(b)];
        if (example.label < 0)
            throw std::invalid_argument("makeImageBatch: example " + std::to_string(b) + " has no label");
        if (static_cast<std::int64_t>(example.pixels.size()) != C * S * S)
            throw std::invalid_argument("makeImageBatch: example " + std::to_string(b) + " has "
                                        + std::to_string(example.pixels.size()) + " pixel bytes, expected "
                                        + std::to_string(C * S * S));
        Image image = exampleImage(example, format);
        if (augment) {
            DataRandom random(mixSeed(augment->seed, static_cast<std::uint64_t>(augment->first + b)));
            if (augment->cropScale > 0.0)
                image = inceptionCrop(image, augment->cropScale, random);
            image = augmentImage(image, augment->padding, augment->flip, random);
            image = randAugment(image, augment->randAugment, augment->randAugmentMagnitude, random);
        }
        normalise(image, stats, pixels + b * C * S * S);
        targets[b] = example.label;
    }
    batch.tokens = B;
    if (augment && augment->mixup > 0.0 && B >= 2) {
        DataRandom random(mixSeed(augment->seed, 0x6d69787570));  // the batch's one draw
        const double lambda = symmetricBeta(augment->mixup, random);
        batch.mixWeight = std::max(lambda, 1.0 - lambda);
        batch.mixTargets = torch::roll(batch.targets, 1, 0);
        batch.pixels = batch.pixels * batch.mixWeight + torch::roll(batch.pixels, 1, 0) * (1.0 - batch.mixWeight);
    }
    return batch;
}

double symmetricBeta(double alpha, DataRandom& random)
{
    if (!(alpha > 0.0 && alpha <= 1.0))
        throw std::invalid_argument("symmetricBeta: alpha " + std::to_string(alpha) + " is not in (0, 1]");
    // Johnk: x = u^(1/a), y = v^(1/a); given x + y <= 1, x / (x + y) ~ Beta(a, a).
    // Accepted with probability above 0.5 for a <= 1.
    while (true) {
        const double x = std::pow(random.uniform(), 1.0 / alpha), y = std::pow(random.uniform(), 1.0 / alpha);
        if (x + y <= 1.0 && x + y > 0.0)
            return x / (x + y);
    }
}

torch::Tensor imageTensor(const Image& image, const ImageStats& stats)
{
    checkStats(stats, image.channels);
    torch::Tensor pixels = torch::empty({1, image.channels, image.height, image.width}, torch::kFloat32);
    normalise(image, stats, pixels.data_ptr<float>());
    return pixels;
}

BatchSampler::BatchSampler(std::int64_t datasetSize, std::int64_t batchSize, std::uint64_t seed)
    : m_size(datasetSize), m_batchSize(batchSize), m_seed(seed)
{
    if (datasetSize < 1)
        throw std::invalid_argument("BatchSampler: dataset size " + std::to_string(datasetSize) + " is below 1");
    if (batchSize < 1)
        throw std::invalid_argument("BatchSampler: batch size " + std::to_string(batchSize) + " is below 1");
}

BatchSampler::BatchSampler(std::vector<std::int64_t> costs, std::int64_t budget, std::uint64_t seed)
    : m_size(static_cast<std::int64_t>(costs.size())), m_batchSize(0), m_costs(std::move(costs)), m_budget(budget),
      m_seed(seed)
{
    if (m_costs.empty())
        throw std::invalid_argument("BatchSampler: no examples");
    if (budget < 1)
        throw std::invalid_argument("BatchSampler: token budget " + std::to_string(budget) + " is below 1");
    for (const std::int64_t cost : m_costs)
        if (cost < 0)
            throw std::invalid_argument("BatchSampler: negative cost " + std::to_string(cost));
}

void BatchSampler::shuffle(std::int64_t epoch)
{
    // Fisher-Yates with the data layer's portable generator (std::shuffle's output is implementation-defined).
    m_order.resize(static_cast<std::size_t>(m_size));
    std::iota(m_order.begin(), m_order.end(), std::int64_t(0));
    DataRandom random(mixSeed(m_seed, static_cast<std::uint64_t>(epoch)));
    for (std::int64_t i = m_size - 1; i > 0; --i) {
        const auto j = static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(i + 1)));
        std::swap(m_order[static_cast<std::size_t>(i)], m_order[static_cast<std::size_t>(j)]);
    }
    m_orderEpoch = epoch;
}

std::vector<std::int64_t> BatchSampler::next()
{
    std::vector<std::int64_t> indices;
    indices.reserve(static_cast<std::size_t>(m_batchSize));
    std::int64_t spent = 0;
    for (;; ++m_position) {
        if (m_budget == 0 && static_cast<std::int64_t>(indices.size()) == m_batchSize)
            break;
        const std::int64_t epoch = m_position / m_size;
        if (epoch != m_orderEpoch)
            shuffle(epoch);
        const std::int64_t index = m_order[static_cast<std::size_t>(m_position % m_size)];
        if (m_budget > 0) {
            const std::int64_t cost = m_costs[static_cast<std::size_t>(index)];
            if (!indices.empty() && spent + cost > m_budget)
                break;
            spent += cost;
        }
        indices.push_back(index);
    }
    return indices;
}

void BatchSampler::seek(std::int64_t position)
{
    if (position < 0)
        throw std::invalid_argument("BatchSampler: negative position " + std::to_string(position));
    m_position = position;
}

}  // namespace widelab
