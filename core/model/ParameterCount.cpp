#include "ParameterCount.h"

#include "model/attention/MechanismSpec.h"
#include "runtime/FastPaths.h"

#include <algorithm>
#include <stdexcept>

namespace widelab {
namespace {

struct ModuleSizes {
    std::int64_t attention = 0;  // one attention module (all paths)
    std::int64_t cross = 0;      // one cross-attention module (a decoder's; all paths)
    std::int64_t ffnStored = 0;  // one FFN module (all paths or all experts)
    std::int64_t ffnActive = 0;  // the same with top_k experts
    std::int64_t router = 0;
    std::int64_t layerNormSet = 0;  // the two LayerNorms of one block
    std::int64_t pathSet = 0;       // the two path combiners of one block
};

ModuleSizes moduleSizes(const ModelConfig& c)
{
    const std::int64_t D = c.dModel, W = c.attentionWidth(), n = c.paths, M = c.ffnDim;
    ModuleSizes s;
    s.attention = 3 * n * W * D + 3 * n * W + n * D * W + n * D;
    s.cross = s.attention;  // q, then k and v of the source, and the output: the full mechanism has no parameters
    for (const MechanismUse& use : mechanismUses(c))
        s.attention += use.spec->parameters(use.shape, c);
    const std::int64_t unit = 2 * D * M + M + D;  // one FFN path or one expert
    s.ffnStored = (c.isMoe() ? c.experts : n) * unit;
    s.ffnActive = (c.isMoe() ? c.topK : n) * unit;
    s.router = c.isMoe() ? c.experts * D : 0;
    s.layerNormSet = 2 * 2 * D;
    if (c.isMultiPath()) {
        const std::int64_t m = c.pathFeatures();
        const std::int64_t one = (c.pathNorm ? 2 * m * D : 0) + (c.learnablePathWeights ? m + 1 : 0);
        s.pathSet = 2 * one;
    }
    return s;
}

}  // namespace

const CostRow& ModelCost::part(const std::string& name) const
{
    for (const auto& row : parts)
        if (row.part == name)
            return row;
    throw std::out_of_range("no cost row named " + name);
}

nlohmann::json ModelCost::toJson() const
{
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : parts)
        rows.push_back({{"part", row.part},
                        {"stored", row.stored},
                        {"active", row.active},
                        {"applied", row.applied},
                        {"flops_per_token", row.flopsPerToken}});
    return {
        {"parameters", {{"stored", total.stored}, {"active", total.active}, {"applied", total.applied}}},
        {"breakdown", rows},
        {"encoder_matrix_parameters", encoderMatrixParameters},
        {"flops_per_token", flopsPerToken},
        {"flops_per_token_at_capacity", flopsPerTokenAtCapacity},
        {"inference_flops_per_token", inferenceFlopsPerToken},
        {"sequence_length", sequenceLength},
    };
}

ModelCost modelCost(const ModelConfig& c)
{
    const ModuleSizes s = moduleSizes(c);
    const std::int64_t D = c.dModel, L = c.layers;
    ModelCost cost;

    CostRow embeddings{"embeddings"};
    // Tokens: the vocabulary's table (and the factorisation's projection); images:
    // the patch convolution, C*P*P*D weights and D biases.
    const std::int64_t input = c.imageInput() ? c.patchInputs() * D + D
                                              : c.vocabSize * c.tokenEmbeddingDim()
                                                    + (c.factorisedEmbedding() ? c.embeddingDim * D + D : 0);
    embeddings.stored = input + c.positions() * D + (c.usesClsToken() ? D : 0) + c.segments * D;
    embeddings.active = embeddings.applied = embeddings.stored;

    CostRow attention{"attention", c.attentionModules() * s.attention, c.attentionModules() * s.attention,
                      L * s.attention, 0.0};
    CostRow ffn{c.isMoe() ? "experts" : "ffn", c.ffnModules() * s.ffnStored, c.ffnModules() * s.ffnActive,
                L * s.ffnActive, 0.0};
    CostRow router{"router", c.routerModules() * s.router, c.routerModules() * s.router, c.routingCalls() * s.router, 0.0};
    CostRow norms{"layernorms", c.layerNormSets() * s.layerNormSet + 2 * D, 0, L * s.layerNormSet + 2 * D, 0.0};
    norms.active = norms.stored;
    CostRow paths{"path weights", c.layerNormSets() * s.pathSet, c.layerNormSets() * s.pathSet, L * s.pathSet,
                   0.0};
    CostRow head{"head"};
    head.stored = (c.pooler ? D * D + D : 0) + D * c.outputSize() + c.outputSize();
    head.active = head.applied = head.stored;

    const std::int64_t W = c.attentionWidth(), n = c.paths, M = c.ffnDim;
    const std::int64_t ffnUnits = c.isMoe() ? c.topK : n;
    cost.encoderMatrixParameters = L * (4 * n * W * D + ffnUnits * 2 * D * M);

    // FLOPs per token, by part.
    const std::int64_t T = c.positions();
    cost.sequenceLength = T;
    // Projections, then each mechanism's mixing step at a sequence of T.
    double attentionFlops = 2.0 * (4.0 * n * W * D);
    for (const MechanismUse& use : mechanismUses(c))
        attentionFlops += use.spec->flopsPerToken(use.shape, c, T);
    const double unitFlops = 2.0 * 2.0 * D * M;
    const double routerFlops = 2.0 * D * (c.isMoe() ? c.experts : 0);
    embeddings.flopsPerToken = c.imageInput()            ? 2.0 * static_cast<double>(c.patchInputs()) * D
                               : c.factorisedEmbedding() ? 2.0 * c.embeddingDim * D
                                                         : 0.0;
    attention.flopsPerToken = static_cast<double>(L) * attentionFlops;
    ffn.flopsPerToken = static_cast<double>(L * ffnUnits) * unitFlops;
    router.flopsPerToken = static_cast<double>(c.routingCalls()) * routerFlops;
    head.flopsPerToken = c.predictsTokens()
                             ? 2.0 * D * c.vocabSize
                             : (2.0 * D * c.numClasses + (c.pooler ? 2.0 * D * D : 0.0)) / static_cast<double>(T);

    if (c.isTranslation()) {
        // The decoder: its blocks (self-attention, cross-attention, FFN or experts,
        // three LayerNorms and three path combiners each) and final LayerNorm; the
        // output is the token embedding's transpose, no parameter of its own.
        const ModelConfig d = c.decoderSide();
        const ModuleSizes ds = moduleSizes(d);
        const std::int64_t Ld = d.layers;
        const std::int64_t attentionModules = d.attentionModules() * (ds.attention + ds.cross);
        attention.stored += attentionModules;
        attention.active += attentionModules;
        attention.applied += Ld * (ds.attention + ds.cross);
        ffn.stored += d.ffnModules() * ds.ffnStored;
        ffn.active += d.ffnModules() * ds.ffnActive;
        ffn.applied += Ld * ds.ffnActive;
        router.stored += d.routerModules() * ds.router;
        router.active += d.routerModules() * ds.router;
        router.applied += d.routingCalls() * ds.router;
        const std::int64_t normSets = d.layerNormSets() * 3 * 2 * D + 2 * D;
        norms.stored += normSets;
        norms.active += normSets;
        norms.applied += Ld * 3 * 2 * D + 2 * D;
        const std::int64_t pathSets = d.layerNormSets() * ds.pathSet / 2 * 3;
        paths.stored += pathSets;
        paths.active += pathSets;
        paths.applied += Ld * ds.pathSet / 2 * 3;
        head = CostRow{"head"};

        // Per target token, with a source as long as the target: the decoder's
        // projections and mixing (self-attention and cross-attention, whose keys and
        // values are the source tokens'), FFN or experts and routing.
        // The decoder's own paths (decoder_paths), not the encoder's.
        const std::int64_t nd = d.paths, decoderUnits = d.isMoe() ? d.topK : nd;
        double decoderAttention = 2.0 * (4.0 * nd * W * D);
        for (const MechanismUse& use : mechanismUses(d))
            decoderAttention += use.spec->flopsPerToken(use.shape, d, T);
        const double crossAttention = decoderAttention;  // the same products, keys and values from the source
        attention.flopsPerToken += static_cast<double>(Ld) * (decoderAttention + crossAttention);
        ffn.flopsPerToken += static_cast<double>(Ld * decoderUnits) * unitFlops;
        router.flopsPerToken += static_cast<double>(d.routingCalls()) * routerFlops;
        head.flopsPerToken = 2.0 * D * c.vocabSize;
    }

    cost.parts = {embeddings, attention, ffn, router, norms, paths, head};
    cost.total.part = "total";
    for (const auto& row : cost.parts) {
        cost.total.stored += row.stored;
        cost.total.active += row.active;
        cost.total.applied += row.applied;
        cost.total.flopsPerToken += row.flopsPerToken;
    }
    cost.flopsPerToken = cost.total.flopsPerToken;
    // Buffer slots per token: K * C, but never more than one per expert (capacity
    // is at most S), and E when nothing is ever dropped.
    const double slots = c.capacityFactor > 0.0 ? std::min(c.topK * c.capacityFactor, static_cast<double>(c.experts))
                                                : static_cast<double>(c.experts);
    // Units a token's FFN runs, per block: the buffer's slots with experts, else every path (each side its own).
    auto atCapacity = [&](std::int64_t units) { return c.isMoe() ? slots : static_cast<double>(units); };
    double ffnAtCapacity = static_cast<double>(L) * atCapacity(ffnUnits) * unitFlops;
    if (c.isTranslation())
        ffnAtCapacity += static_cast<double>(c.decoderLayers) * atCapacity(c.decoderPaths) * unitFlops;
    cost.flopsPerTokenAtCapacity = cost.flopsPerToken - ffn.flopsPerToken + ffnAtCapacity;

    // In inference the last block's other T - 1 rows skip their query and output
    // projections, mixing and FFN; their keys and values stay.
    cost.inferenceFlopsPerToken = cost.flopsPerToken;
    if (lastBlockReadsClsRowOnly(c)) {
        const double skippedPerRow = attentionFlops - 2.0 * (2.0 * n * W * D) + ffnUnits * unitFlops;
        cost.inferenceFlopsPerToken -= skippedPerRow * static_cast<double>(T - 1) / static_cast<double>(T);
    }
    return cost;
}

bool lastBlockReadsClsRowOnly(const ModelConfig& c)
{
    if (!c.usesClsToken() || c.isMoe() || !fastPathEnabled(FastPath::ClsRowOnly))
        return false;
    const std::vector<MechanismUse> uses = mechanismUses(c);
    return uses.size() == 1 && uses.front().spec->queriesApart;
}

}  // namespace widelab
