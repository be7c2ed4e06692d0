// defines: MapKind, MechanismShape, MechanismSpec (a mechanism's registration:
// name, keys, constructor, accounting) and the registry: attentionMechanisms,
// findMechanism, headMechanisms, mapKind, mechanismUses
//
// What the schema, the panel, the readers and the accounting know of attention
// mechanisms, without torch: a spec names the mechanism, its keys and its cost,
// and makes its module (AttentionMechanism.h's MechanismImpl, declared here
// only). Adding a mechanism is a new file in this folder defining its
// MechanismImpl and a `const MechanismSpec& xxxMechanism()`, plus one line in
// Registry.cpp; its keys reach the schema, the panel and the readers from the
// spec, and its cost reaches the accounting from the spec.
#pragma once

#include "config/ConfigSchema.h"
#include "config/ModelConfig.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace widelab {

class MechanismImpl;  // AttentionMechanism.h: the module, with torch

// What attention->map of a mechanism shows for inspection.
enum class MapKind {
    Exact,    // the probabilities the mechanism applied to the values
    Pattern,  // the same, for a sparse pattern: zero outside the keys a query may see
    Implied,  // kernel and low-rank mechanisms never form the map: the [T, T] weights their
              // computation is equivalent to, computed for probes only
};
std::string toString(MapKind kind);  // "exact", "sparse pattern", "implied"

// The size of one mechanism module.
struct MechanismShape {
    std::int64_t heads = 1;      // G: the heads it mixes, over every path
    std::int64_t headDim = 1;    // A
    std::int64_t positions = 1;  // the longest sequence (CLS included): sizes per-position parameters
    bool causal = false;         // the model is a language model
};

struct MechanismSpec {
    std::string name;    // the value of model.attention: "linformer"
    std::string title;   // "Linformer (Wang et al., 2020): keys and values projected to k positions"
    MapKind map = MapKind::Exact;
    bool causal = false;      // works with a language-model head
    bool linearCost = false;  // time and memory linear in the sequence (for the scaling benchmark)
    // Padding keys past the last real token change no real token's context: a
    // batch may be padded further than its longest example (train.cuda_graph
    // pads to a few lengths). False where the sequence's length shapes the
    // mixing (blocks, projections over positions) or was not shown not to.
    bool paddingFree = false;
    // Each query's context depends on its own q and on every key and value, not
    // on the other queries: mix answers a few leading queries (q [B, G, Q, A]
    // beside k and v [B, G, T, A]), so a classifier's last block may compute its
    // CLS token's row alone (AttentionImpl::forwardLeading).
    bool queriesApart = false;
    std::vector<KeySpec> keys;  // its own keys, "model.<name>_..."; read into ModelConfig::attentionOptions
    std::function<std::shared_ptr<MechanismImpl>(const MechanismShape&, const ModelConfig&)> make;
    // Trainable parameters of one module of this shape.
    std::function<std::int64_t(const MechanismShape&, const ModelConfig&)> parameters;
    // Forward FLOPs of the mixing step per token for all the module's heads, at
    // sequence length T (a multiply-add is 2; products only).
    std::function<double(const MechanismShape&, const ModelConfig&, std::int64_t T)> flopsPerToken;
    // Cross-key checks of its keys against the model (optional): report(key name without
    // "model.", reason).
    std::function<void(const ModelConfig&, const std::function<void(const std::string&, std::string)>&)> validate;
    // What it accepts but probably should not be (optional), as validate: warnings, e.g. a
    // classifier's CLS token that sees only part of the sequence.
    std::function<void(const ModelConfig&, const std::function<void(const std::string&, std::string)>&)> warn;
};

// For MechanismSpec::warn: a classifier read from its CLS token (model.pooling "cls") whose
// token sees only `reach` of the model's positions, said at model.pooling with `how` ("its
// block of model.local_block_size"); nothing when it sees them all.
void warnClsReach(const ModelConfig& config, std::int64_t reach, const std::string& how,
                  const std::function<void(const std::string&, std::string)>& report);

// Every registered mechanism, in the order of model.attention's choices.
const std::vector<const MechanismSpec*>& attentionMechanisms();
// nullptr when no mechanism is called so.
const MechanismSpec* findMechanism(const std::string& name);
// model.attention's choices: every mechanism's name, then "mixed".
std::vector<std::string> attentionChoices();
inline constexpr const char* kMixedAttention = "mixed";

// The mechanism of each head of one path (model.heads names): the same name
// for every head, or model.attention_mix spread evenly over the heads.
std::vector<std::string> headMechanisms(const ModelConfig& config);
MapKind mapKind(const std::string& mechanism);  // Exact for an unknown name

// The mechanisms of one attention module: one per mechanism its heads use, in
// the order they first appear, each with its heads among the n*H heads of every
// path (ascending) and the shape of its module. Throws std::invalid_argument
// naming model.attention for a name not registered.
struct MechanismUse {
    const MechanismSpec* spec = nullptr;
    MechanismShape shape;
    std::vector<std::int64_t> heads;
};
std::vector<MechanismUse> mechanismUses(const ModelConfig& config);

}  // namespace widelab
