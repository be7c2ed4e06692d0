#include "Embedding.h"

#include "BatchedMatmul.h"
#include "Init.h"

#include "data/PairInput.h"

namespace widelab {

EmbeddingImpl::EmbeddingImpl(const ModelConfig& config)
{
    if (config.imageInput()) {
        const std::int64_t P = config.patchSize;
        patch = register_module("patch", torch::nn::Conv2d(torch::nn::Conv2dOptions(config.channels, config.dModel, P)
                                                               .stride(P)
                                                               .bias(true)));
    } else {
        token = register_module("token", torch::nn::Embedding(config.vocabSize, config.tokenEmbeddingDim()));
        if (config.factorisedEmbedding())
            project = register_module("project", torch::nn::Linear(config.embeddingDim, config.dModel));
    }
    position = register_module("position", torch::nn::Embedding(config.positions(), config.dModel));
    if (config.usesClsToken())
        cls = register_parameter("cls", torch::zeros({config.dModel}));  // zero-initialised, as in the papers
    if (config.segments > 0) {
        segment = register_module("segment", torch::nn::Embedding(config.segments, config.dModel));
        separator = separatorId(config.vocabSize);
    }

    torch::NoGradGuard noGrad;
    if (token)
        token->weight.normal_(0.0, 0.02);
    position->weight.normal_(0.0, 0.02);
    if (segment)
        segment->weight.normal_(0.0, 0.02);  // as BERT's token types
    if (project) {
        xavierUniformStacked(project->weight);
        project->bias.zero_();
    }
    if (patch) {
        // ViT: the patch projection is a linear map of the flattened C*P*P pixels.
        xavierUniformStacked(patch->weight.view({config.dModel, config.patchInputs()}));
        patch->bias.zero_();
    }
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& input, std::int64_t firstPosition)
{
    torch::Tensor h;
    if (patch) {
        // B = batch, D = width, G = patches per side: [B, C, H, W] -> [B, D, G, G] -> [B, G*G, D]
        h = patch(input).flatten(2).transpose(1, 2);
    } else {
        h = token(input);  // [B, T, E or D]
        if (project)
            h = linearLayer(project, h);
        if (segment) {
            const torch::Tensor separators = input.eq(separator).to(torch::kLong);
            h = h + segment((separators.cumsum(1) - separators).clamp_max(segment->weight.size(0) - 1));
        }
    }
    if (cls.defined())
        h = torch::cat({cls.to(h.dtype()).expand({h.size(0), 1, h.size(2)}), h}, 1);
    const torch::Tensor where =
        torch::arange(firstPosition, firstPosition + h.size(1), torch::TensorOptions(torch::kLong).device(h.device()));
    return h + position(where).unsqueeze(0);
}

}  // namespace widelab
