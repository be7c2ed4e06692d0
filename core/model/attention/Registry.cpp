// The registration of every attention mechanism, and what the rest of WideLab
// asks of the registry. A new mechanism is one line in attentionMechanisms().
#include "Mechanisms.h"

#include <algorithm>
#include <stdexcept>

namespace widelab {

const std::vector<const MechanismSpec*>& attentionMechanisms()
{
    static const std::vector<const MechanismSpec*> all = {
        &fullMechanism(),
        &linearMechanism(),
        &performerMechanism(),
        &linformerMechanism(),
        &localMechanism(),
        &longformerMechanism(),
        &bigbirdMechanism(),
        &sparseMechanism(),
        &sinkhornMechanism(),
        &synthesizerMechanism(),
    };
    return all;
}

const MechanismSpec* findMechanism(const std::string& name)
{
    for (const MechanismSpec* spec : attentionMechanisms())
        if (spec->name == name)
            return spec;
    return nullptr;
}

std::vector<std::string> attentionChoices()
{
    std::vector<std::string> names;
    for (const MechanismSpec* spec : attentionMechanisms())
        names.push_back(spec->name);
    names.emplace_back(kMixedAttention);
    return names;
}

std::vector<std::string> headMechanisms(const ModelConfig& config)
{
    if (config.attention != kMixedAttention || config.attentionMix.empty())
        return std::vector<std::string>(static_cast<std::size_t>(config.heads), config.attention);
    // An equal share of consecutive heads per entry (the reader checks that the
    // list's length divides the heads).
    const auto entries = static_cast<std::int64_t>(config.attentionMix.size());
    const std::int64_t share = std::max<std::int64_t>(1, config.heads / entries);
    std::vector<std::string> heads;
    for (std::int64_t h = 0; h < config.heads; ++h)
        heads.push_back(config.attentionMix[static_cast<std::size_t>(std::min(h / share, entries - 1))]);
    return heads;
}

std::vector<MechanismUse> mechanismUses(const ModelConfig& config)
{
    std::vector<std::string> perHead = headMechanisms(config);
    perHead.resize(static_cast<std::size_t>(config.heads), config.attention);
    std::vector<MechanismUse> uses;
    for (const std::string& name : perHead) {
        if (std::any_of(uses.begin(), uses.end(), [&](const MechanismUse& u) { return u.spec->name == name; }))
            continue;
        MechanismUse use;
        use.spec = findMechanism(name);
        if (!use.spec)
            throw std::invalid_argument("model.attention: no attention mechanism called \"" + name + "\"");
        for (std::int64_t p = 0; p < config.paths; ++p)
            for (std::int64_t h = 0; h < config.heads; ++h)
                if (perHead[static_cast<std::size_t>(h)] == name)
                    use.heads.push_back(p * config.heads + h);
        use.shape.heads = static_cast<std::int64_t>(use.heads.size());
        use.shape.headDim = config.headDim;
        use.shape.positions = config.positions();
        use.shape.causal = config.causal();
        uses.push_back(std::move(use));
    }
    return uses;
}

void warnClsReach(const ModelConfig& config, std::int64_t reach, const std::string& how,
                  const std::function<void(const std::string&, std::string)>& report)
{
    const std::int64_t positions = config.positions();
    if (!config.usesClsToken() || reach >= positions)
        return;
    report("pooling", "\"cls\" with " + config.attention + " attention: the CLS token, all the classifier reads, sees only "
                          + std::to_string(reach) + " of the " + std::to_string(positions) + " positions (" + how
                          + "); \"mean\" pools every position");
}

MapKind mapKind(const std::string& mechanism)
{
    const MechanismSpec* spec = findMechanism(mechanism);
    return spec ? spec->map : MapKind::Exact;
}

std::string toString(MapKind kind)
{
    switch (kind) {
    case MapKind::Exact:
        return "exact";
    case MapKind::Pattern:
        return "sparse pattern";
    case MapKind::Implied:
        return "implied";
    }
    return "exact";
}

}  // namespace widelab
