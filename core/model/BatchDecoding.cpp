#include "BatchDecoding.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace widelab {

DecodeOptions decodingFor(const Tokenizer& tokenizer)
{
    if (!tokenizer.startId() || !tokenizer.endId())
        throw std::invalid_argument("the " + toString(tokenizer.kind())
                                    + " tokenizer has no start and end tokens to translate with (bpe has)");
    DecodeOptions options;
    options.startId = *tokenizer.startId();
    options.endId = *tokenizer.endId();
    options.vocabulary = tokenizer.vocabSize();
    return options;
}

std::vector<std::vector<std::int64_t>> decodeAll(WideTransformerImpl& model,
                                                 const std::vector<std::vector<std::int64_t>>& sources,
                                                 const DecodeOptions& options, std::int64_t batchSize,
                                                 const std::function<void()>& betweenBatches)
{
    if (batchSize < 1)
        throw std::invalid_argument("decodeAll: batch size " + std::to_string(batchSize) + " is below 1");
    torch::NoGradGuard noGrad;
    model.eval();
    const torch::Device device = model.parameters().front().device();
    std::vector<std::vector<std::int64_t>> translations;
    translations.reserve(sources.size());
    const auto count = static_cast<std::int64_t>(sources.size());
    for (std::int64_t start = 0; start < count; start += batchSize) {
        if (betweenBatches)
            betweenBatches();
        const std::int64_t end = std::min(count, start + batchSize);
        std::size_t longest = 0;
        for (std::int64_t i = start; i < end; ++i) {
            if (sources[static_cast<std::size_t>(i)].empty())
                throw std::invalid_argument("decodeAll: source " + std::to_string(i) + " has no token");
            longest = std::max(longest, sources[static_cast<std::size_t>(i)].size());
        }
        // B = this batch, S = its longest source; padding is id 0, masked out.
        const std::int64_t B = end - start, S = static_cast<std::int64_t>(longest);
        torch::Tensor ids = torch::zeros({B, S}, torch::kInt64);
        torch::Tensor mask = torch::zeros({B, S}, torch::kBool);
        bool padded = false;
        for (std::int64_t b = 0; b < B; ++b) {
            const std::vector<std::int64_t>& source = sources[static_cast<std::size_t>(start + b)];
            const auto length = static_cast<std::int64_t>(source.size());
            std::copy(source.begin(), source.end(), ids.data_ptr<std::int64_t>() + b * S);
            std::fill(mask.data_ptr<bool>() + b * S, mask.data_ptr<bool>() + b * S + length, true);
            padded = padded || length < S;
        }
        DecodeOptions batchOptions = options;
        const std::int64_t rule = S + 50;
        batchOptions.maxLength = options.maxLength > 0 ? std::min(options.maxLength, rule) : rule;
        const torch::Tensor sourceMask = padded ? mask.to(device) : torch::Tensor();
        for (std::vector<std::int64_t>& translation :
             options.beamSize > 1 ? beamDecode(model, ids.to(device), sourceMask, batchOptions)
                                  : greedyDecode(model, ids.to(device), sourceMask, batchOptions))
            translations.push_back(std::move(translation));
    }
    return translations;
}

}  // namespace widelab
