#include "Decoding.h"

#include <stdexcept>

namespace widelab {

std::vector<std::vector<std::int64_t>> greedyDecode(WideTransformerImpl& model, const torch::Tensor& source,
                                                    const torch::Tensor& sourceMask, const DecodeOptions& options)
{
    const ModelConfig& c = model.config();
    if (!c.isTranslation())
        throw std::invalid_argument("decoding: the model is not a translation model (model.head \"translation\")");
    if (model.is_training())
        throw std::invalid_argument("decoding: the model is in training mode; call eval() first");
    const std::int64_t limit =
        options.maxLength > 0 && options.maxLength < c.maxLen ? options.maxLength : c.maxLen;
    torch::NoGradGuard noGrad;
    const std::int64_t B = source.size(0);
    const auto ids = torch::TensorOptions(torch::kLong).device(source.device());

    DecoderState state;
    if (options.cache)
        state = model.beginDecoding(source, sourceMask, limit);
    torch::Tensor prefix = torch::full({B, 1}, options.startId, ids);  // the decoder's input so far
    std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(B));
    std::vector<bool> finished(static_cast<std::size_t>(B), false);
    std::int64_t open = B;
    for (std::int64_t t = 0; t < limit && open > 0; ++t) {
        const torch::Tensor logits = options.cache ? model.decodeStep(state, prefix.select(1, t))
                                                   : model.forward(source, sourceMask, {prefix, {}}).logits.select(1, t);
        const torch::Tensor next = logits.argmax(-1);  // [B]
        const torch::Tensor onHost = next.to(torch::kCPU);
        const auto* chosen = onHost.data_ptr<std::int64_t>();
        for (std::int64_t b = 0; b < B; ++b) {
            if (finished[static_cast<std::size_t>(b)])
                continue;
            if (chosen[b] == options.endId) {
                finished[static_cast<std::size_t>(b)] = true;
                --open;
            } else {
                out[static_cast<std::size_t>(b)].push_back(chosen[b]);
            }
        }
        prefix = torch::cat({prefix, next.unsqueeze(1)}, 1);
    }
    return out;
}

}  // namespace widelab
