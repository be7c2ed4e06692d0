#include "Embedding.h"

#include "Init.h"

namespace widelab {

EmbeddingImpl::EmbeddingImpl(const ModelConfig& config)
{
    token = register_module("token", torch::nn::Embedding(config.vocabSize, config.tokenEmbeddingDim()));
    if (config.factorisedEmbedding())
        project = register_module("project", torch::nn::Linear(config.embeddingDim, config.dModel));
    position = register_module("position", torch::nn::Embedding(config.positions(), config.dModel));
    if (config.usesClsToken())
        cls = register_parameter("cls", torch::zeros({config.dModel}));  // zero-initialised, as in the papers

    torch::NoGradGuard noGrad;
    token->weight.normal_(0.0, 0.02);
    position->weight.normal_(0.0, 0.02);
    if (project) {
        xavierUniformStacked(project->weight);
        project->bias.zero_();
    }
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& ids)
{
    torch::Tensor h = token(ids);  // [B, T, E or D]
    if (project)
        h = project(h);
    if (cls.defined())
        h = torch::cat({cls.to(h.dtype()).expand({h.size(0), 1, h.size(2)}), h}, 1);
    const torch::Tensor where = torch::arange(h.size(1), ids.options().dtype(torch::kLong));
    return h + position(where).unsqueeze(0);
}

}  // namespace widelab
