#include "Attention.h"

#include "BatchedMatmul.h"
#include "Init.h"
#include "runtime/Autocast.h"

#include <torch/nn/init.h>

#include <algorithm>

namespace widelab {

AttentionOptions AttentionOptions::fromConfig(const ModelConfig& c)
{
    AttentionOptions o;
    o.dModel = c.dModel;
    o.heads = c.heads;
    o.headDim = c.headDim;
    o.paths = c.paths;
    o.dropout = c.dropout;
    return o;
}

namespace {

// An index tensor kept on the device it was last used on: moved once, not
// copied to the GPU on every forward pass (the module's .to() leaves it be,
// as it is not a buffer: checkpoints and exports hold no such entries).
const torch::Tensor& onDevice(torch::Tensor& index, const torch::Device& device)
{
    if (index.device() != device)
        index = index.to(device);
    return index;
}

}  // namespace

AttentionImpl::AttentionImpl(const AttentionOptions& options_, const ModelConfig& config)
    : options(options_), causal(config.causal())
{
    const std::int64_t n = options.paths;
    const std::int64_t width = options.heads * options.headDim;
    qkv = register_module("qkv", torch::nn::Linear(options.dModel, 3 * n * width));
    outWeight = register_parameter("out_weight", torch::empty({n, options.dModel, width}));
    outBias = register_parameter("out_bias", torch::zeros({n, options.dModel}));

    mixers = register_module("mix", torch::nn::ModuleList());
    std::vector<std::int64_t> concatenated;
    // The heads of this module as its options give them (tests build modules
    // whose size differs from the configuration's).
    ModelConfig shaped = config;
    shaped.heads = options.heads;
    shaped.headDim = options.headDim;
    shaped.paths = options.paths;
    for (MechanismUse& use : mechanismUses(shaped)) {
        Group group;
        group.spec = use.spec;
        group.count = static_cast<std::int64_t>(use.heads.size());
        group.first = use.heads.front();
        group.contiguous = use.heads.back() - use.heads.front() + 1 == group.count;
        group.heads = torch::tensor(use.heads, torch::kLong);
        group.mechanism = group.spec->make(use.shape, config);
        mixers->push_back(group.mechanism);
        concatenated.insert(concatenated.end(), use.heads.begin(), use.heads.end());
        groups.push_back(std::move(group));
    }
    if (groups.size() > 1)
        order = torch::argsort(torch::tensor(concatenated, torch::kLong));

    torch::NoGradGuard noGrad;
    // Each (q|k|v, path) block is its own [A*H, D] projection: Xavier per block.
    xavierUniformStacked(qkv->weight.view({3 * n, width, options.dModel}));
    qkv->bias.zero_();
    xavierUniformStacked(outWeight);
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& bias, const torch::Tensor& keyValid,
                                     torch::Tensor* weights, const std::vector<Ablation>& ablated)
{
    // B = batch, T = sequence, D = model width, n = paths, H = heads, A = head_dim
    const std::int64_t B = x.size(0), T = x.size(1);
    const std::int64_t n = options.paths, H = options.heads, A = options.headDim;

    // [B, T, 3, n*H, A]: q, k and v are split off before their heads are
    // moved ahead of the tokens, so that the split's backward stacks their
    // gradients straight into this layout, the one qkv's own backward reads
    // (split after the move, the stack wrote [3, B, n*H, T, A] and a copy
    // put it back: on a GPU a 0.1 ms copy of the gradient per layer).
    const torch::Tensor qkvAll = linearLayer(qkv, x).view({B, T, 3, n * H, A});

    MixInput in;
    in.keyValid = keyValid;
    in.bias = bias;
    in.causal = causal;
    in.dropout = is_training() ? options.dropout : 0.0;
    std::vector<torch::Tensor> contexts, maps;
    for (Group& group : groups) {
        // [B, T, 3, G, A] for the group's heads: all of them when one mechanism has them all
        const torch::Tensor heads = groups.size() == 1 ? qkvAll
                                    : group.contiguous ? qkvAll.narrow(3, group.first, group.count)
                                                       : qkvAll.index_select(3, onDevice(group.heads, x.device()));
        // unbind, not three selects: its backward stacks the three gradients
        // once, where each select's would fill a zero tensor of all three and
        // copy into it, and the three be added up (on the GPU four fills, four
        // copies and two additions of the [B, T, 3, G, A] gradient per layer).
        const std::vector<torch::Tensor> qkvHeads = heads.unbind(2);
        // Each [B, G, T, A], a view of the product
        in.q = qkvHeads[0].transpose(1, 2);
        in.k = qkvHeads[1].transpose(1, 2);
        in.v = qkvHeads[2].transpose(1, 2);
        torch::Tensor map;
        contexts.push_back(group.mechanism->mix(in, weights ? &map : nullptr));
        if (weights)
            maps.push_back(map);
    }
    // [B, n*H, T, A] in head order
    const torch::Tensor& unmix = groups.size() == 1 ? order : onDevice(order, x.device());
    torch::Tensor context = contexts.size() == 1 ? contexts.front() : torch::cat(contexts, 1).index_select(1, unmix);
    if (weights)
        *weights = maps.size() == 1 ? maps.front() : torch::cat(maps, 1).index_select(1, unmix);
    for (const Ablation& a : ablated) {
        if (a.part != AblationPart::Head || a.index < 0 || a.index >= n * H)
            continue;
        // The head's context [B*T, A], over the real tokens for a mean.
        const torch::Tensor head = context.select(1, a.index).reshape({B * T, A});
        const torch::Tensor replaced = ablatedValue(head, a.mode, keyValid.defined() ? keyValid.reshape({-1}) : torch::Tensor());
        context = context.clone();
        context.select(1, a.index).copy_(replaced.view({B, T, A}));
    }

    return project(context);
}

torch::Tensor AttentionImpl::project(const torch::Tensor& context) const
{
    // B = batch, T = sequence, D = model width, n = paths, H = heads, A = head_dim
    const std::int64_t B = context.size(0), T = context.size(2), D = options.dModel;
    const std::int64_t n = options.paths, H = options.heads, A = options.headDim;
    // Per path: its H heads side by side, [n, B*T, H*A], through its own output projection.
    const torch::Tensor perPath =
        context.reshape({B, n, H, T, A}).permute({1, 0, 3, 2, 4}).reshape({n, B * T, H * A});
    const torch::Tensor out =
        batchedAddMatmul(autocastWeight(outBias).unsqueeze(1), perPath, autocastWeight(outWeight).transpose(1, 2));
    return out.view({n, B, T, D});
}

torch::Tensor AttentionImpl::forwardStep(const torch::Tensor& x, torch::Tensor& keys, torch::Tensor& values,
                                         std::int64_t position)
{
    if (groups.size() != 1 || groups.front().spec->name != "full" || !causal)
        throw std::logic_error("cached decoding steps need a causal layer of full attention");
    const std::int64_t B = x.size(0), heads = options.paths * options.heads, A = options.headDim;
    // [B, 1, 3, n*H, A] -> 3 x [B, n*H, 1, A]
    const std::vector<torch::Tensor> now =
        linearLayer(qkv, x).view({B, 1, 3, heads, A}).permute({2, 0, 3, 1, 4}).unbind(0);
    keys.narrow(2, position, 1).copy_(now[1]);
    values.narrow(2, position, 1).copy_(now[2]);
    MixInput in;  // the cache holds only this position and the earlier ones: nothing to hide
    in.q = now[0];
    in.k = keys.narrow(2, 0, position + 1);
    in.v = values.narrow(2, 0, position + 1);
    return project(groups.front().mechanism->mix(in, nullptr));
}

torch::Tensor AttentionImpl::forwardLeading(const torch::Tensor& x, std::int64_t queries, const torch::Tensor& bias,
                                            const torch::Tensor& keyValid)
{
    if (!answersLeading())
        throw std::logic_error("leading queries alone need one mechanism that answers queries apart");
    const std::int64_t B = x.size(0), T = x.size(1), heads = options.paths * options.heads, A = options.headDim;
    const std::int64_t width = heads * A;  // qkv's rows: q's first, then k's and v's
    // The leading rows copied: a few rows, which the product then takes whole.
    const torch::Tensor q = linearProduct(x.narrow(1, 0, queries).contiguous(), qkv->weight.narrow(0, 0, width),
                                          qkv->bias.narrow(0, 0, width));
    const std::vector<torch::Tensor> kv = linearProduct(x, qkv->weight.narrow(0, width, 2 * width),
                                                        qkv->bias.narrow(0, width, 2 * width))
                                              .view({B, T, 2, heads, A})
                                              .unbind(2);
    MixInput in;
    in.q = q.view({B, queries, heads, A}).transpose(1, 2);  // [B, n*H, queries, A]
    in.k = kv[0].transpose(1, 2);
    in.v = kv[1].transpose(1, 2);
    in.keyValid = keyValid;
    // The rows of a per-query mask (the causal rule's) for these queries; a per-key one as it is.
    in.bias = bias.defined() && bias.size(-2) > 1 ? bias.narrow(-2, 0, queries) : bias;
    in.causal = causal;
    in.dropout = is_training() ? options.dropout : 0.0;
    return project(groups.front().mechanism->mix(in, nullptr));
}

void AttentionImpl::beginStep(std::int64_t step)
{
    for (Group& group : groups)
        group.mechanism->beginStep(step);
}

}  // namespace widelab
