#include "StepGraphs.h"

#include <torch/torch.h>

#include <algorithm>
#include <sstream>
#include <utility>

namespace widelab {

namespace {

// The tensors of a batch a step reads, each by its place in the static batch.
std::vector<torch::Tensor Batch::*> stepTensors()
{
    // Not `routed`: a batch with routed positions is never recorded.
    return {&Batch::ids,        &Batch::mask,   &Batch::targets,    &Batch::targetIds,
            &Batch::targetMask, &Batch::pixels, &Batch::mixTargets};
}

// Everything about a batch that a recorded step takes as fixed: each tensor's
// shape, and whether the model is given masks (modelMask, modelTargetMask).
std::string shapeKey(const Batch& batch, const torch::Tensor& mixWeights)
{
    std::ostringstream key;
    for (const auto member : stepTensors()) {
        const torch::Tensor& t = batch.*member;
        key << (t.defined() ? t.sizes() : c10::IntArrayRef{}) << (t.defined() ? '+' : '-');
    }
    key << modelMask(batch).defined() << modelTargetMask(batch).defined() << mixWeights.defined();
    return key.str();
}

}  // namespace

StepGraphs::StepGraphs(Recorder recorder, std::int64_t maxLength, bool padText)
    : m_recorder(std::move(recorder)), m_maxLength(maxLength), m_padText(padText)
{
}

std::int64_t StepGraphs::paddedLength(std::int64_t length) const
{
    if (!m_padText || length >= m_maxLength)
        return length;
    const std::int64_t unit = std::max<std::int64_t>(8, m_maxLength / 8);
    return std::min(m_maxLength, (length + unit - 1) / unit * unit);
}

void StepGraphs::pad(Batch& host) const
{
    if (!m_padText || !host.ids.defined())
        return;
    padBatch(host, paddedLength(host.ids.size(1)),
             host.targetIds.defined() ? paddedLength(host.targetIds.size(1)) : 0);
}

std::optional<StepOutputs> StepGraphs::replay(const Batch& batch, const torch::Tensor& mixWeights, const Step& step)
{
    if (m_failed)
        return std::nullopt;
    if (batch.routed.defined()) {
        if (!m_toldRouted)
            m_notices.push_back({"info", "train.cuda_graph: a padded batch of a model with experts routes a different number of "
                                "tokens each step; such steps run ordinarily"});
        m_toldRouted = true;
        return std::nullopt;
    }
    const std::string key = shapeKey(batch, mixWeights);
    auto found = m_graphs.find(key);
    if (found == m_graphs.end()) {
        if (m_graphs.size() >= kMaxGraphs) {
            if (!m_toldFull)
                m_notices.push_back({"info", "train.cuda_graph: batches come in more than " + std::to_string(kMaxGraphs)
                                                 + " shapes; steps of the shapes past them run ordinarily"});
            m_toldFull = true;
            return std::nullopt;
        }
        found = m_graphs.emplace(key, Graph{}).first;
    }
    Graph& graph = found->second;
    if (++graph.seen <= kOrdinaryFirst)
        return std::nullopt;
    if (!graph.run) {
        graph.batch = batch;
        for (const auto member : stepTensors())
            if ((batch.*member).defined())
                graph.batch.*member = (batch.*member).clone();
        if (mixWeights.defined())
            graph.mixWeights = mixWeights.clone();
        try {
            // The step kept by value: a recorder may run the work again later.
            graph.run = m_recorder([&graph, step] { graph.outputs = step(graph.batch, graph.mixWeights); });
        } catch (const std::exception& error) {
            m_failed = true;
            m_notices.push_back({"warning", std::string("train.cuda_graph: steps run ordinarily from now on: ") + error.what()});
            m_graphs.clear();
            return std::nullopt;
        }
    } else {
        for (const auto member : stepTensors())
            if ((batch.*member).defined())
                (graph.batch.*member).copy_(batch.*member);
        if (mixWeights.defined())
            graph.mixWeights.copy_(mixWeights);
    }
    graph.run();
    return graph.outputs;
}

std::vector<StepGraphs::Notice> StepGraphs::takeNotices() { return std::exchange(m_notices, {}); }

torch::Tensor mixupWeights(const Batch& batch, const torch::Device& device)
{
    if (!batch.mixTargets.defined())
        return {};
    // Each share in double, then float32, as a double factor of a float32 loss is taken.
    torch::Tensor weights = torch::empty({2}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
    weights[0].fill_(batch.mixWeight);
    weights[1].fill_(1.0 - batch.mixWeight);
    return weights;
}

}  // namespace widelab
