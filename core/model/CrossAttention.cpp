#include "CrossAttention.h"

#include "BatchedMatmul.h"
#include "Init.h"
#include "runtime/Autocast.h"
#include "model/attention/AttentionMechanism.h"

namespace widelab {

CrossAttentionImpl::CrossAttentionImpl(const AttentionOptions& options_, const ModelConfig& config) : options(options_)
{
    const std::int64_t n = options.paths;
    const std::int64_t width = options.heads * options.headDim;
    q = register_module("q", torch::nn::Linear(options.dModel, n * width));
    kv = register_module("kv", torch::nn::Linear(options.dModel, 2 * n * width));
    outWeight = register_parameter("out_weight", torch::empty({n, options.dModel, width}));
    outBias = register_parameter("out_bias", torch::zeros({n, options.dModel}));
    MechanismShape shape;
    shape.heads = n * options.heads;
    shape.headDim = options.headDim;
    shape.positions = config.positions();
    mixer = register_module("mix", findMechanism("full")->make(shape, config));

    torch::NoGradGuard noGrad;
    // Each (q|k|v, path) block is its own [A*H, D] projection, as in self-attention.
    xavierUniformStacked(q->weight.view({n, width, options.dModel}));
    xavierUniformStacked(kv->weight.view({2 * n, width, options.dModel}));
    q->bias.zero_();
    kv->bias.zero_();
    xavierUniformStacked(outWeight);
}

torch::Tensor CrossAttentionImpl::keysValues(const torch::Tensor& memory)
{
    // B = batch, S = source length, n*H = heads over the paths, A = head_dim
    const std::int64_t B = memory.size(0), S = memory.size(1);
    const std::int64_t heads = options.paths * options.heads, A = options.headDim;
    return linearLayer(kv, memory).view({B, S, 2, heads, A}).permute({2, 0, 3, 1, 4});
}

torch::Tensor CrossAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& keysAndValues,
                                          const torch::Tensor& memoryBias, const torch::Tensor& memoryValid,
                                          torch::Tensor* weights)
{
    // B = batch, T = target length, D = width, n = paths, H = heads, A = head_dim
    const std::int64_t B = x.size(0), T = x.size(1), D = x.size(2);
    const std::int64_t n = options.paths, H = options.heads, A = options.headDim;
    MixInput in;
    in.q = linearLayer(q, x).view({B, T, n * H, A}).transpose(1, 2);  // [B, n*H, T, A]
    const std::vector<torch::Tensor> kvHeads = keysAndValues.unbind(0);
    in.k = kvHeads[0];
    in.v = kvHeads[1];
    in.keyValid = memoryValid;
    in.bias = memoryBias;
    in.dropout = is_training() ? options.dropout : 0.0;
    const torch::Tensor context = mixer->mix(in, weights);  // [B, n*H, T, A]
    const torch::Tensor perPath = context.view({B, n, H, T, A}).permute({1, 0, 3, 2, 4}).reshape({n, B * T, H * A});
    return batchedAddMatmul(autocastWeight(outBias).unsqueeze(1), perPath, autocastWeight(outWeight).transpose(1, 2))
        .view({n, B, T, D});
}

}  // namespace widelab
