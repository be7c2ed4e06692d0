// defines: MixInput, MechanismImpl (the pluggable mixing step of attention),
// MechanismShape, MapKind, MechanismSpec (a mechanism's registration: name, keys,
// constructor, accounting) and the registry: attentionMechanisms, findMechanism,
// headMechanisms, mapKind
//
// Attention in WideLab is projections (q, k, v in, one output projection out,
// core/model/Attention.h) around a mixing step that turns q, k and v into a
// context per head. The projections are shared by every mechanism; the mixing
// step is the mechanism. Adding one is a new file in this folder defining its
// MechanismImpl and a `const MechanismSpec& xxxMechanism()`, plus one line in
// Registry.cpp; its keys reach the schema, the panel and the readers from the
// spec, and its cost reaches the accounting from the spec.
#pragma once

#include "config/ConfigSchema.h"
#include "config/ModelConfig.h"

#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace widelab {

// What one mechanism mixes. B = batch, G = the heads this mechanism owns (of
// every path), T = sequence (CLS first when used), A = head_dim.
struct MixInput {
    torch::Tensor q, k, v;   // [B, G, T, A]
    torch::Tensor keyValid;  // [B, T] bool, true for real tokens; undefined when all are real
    torch::Tensor bias;      // fp32 additive mask broadcastable to [B, 1, T, T]: -1e9 where a query may
                             // not look (padding keys; future keys when causal); undefined when none
    bool causal = false;     // a language model: query i sees keys j <= i only
    double dropout = 0.0;    // on attention probabilities, where the mechanism has them (0 in evaluation)
};

class MechanismImpl : public torch::nn::Module {
public:
    // The context [B, G, T, A]. When `map` is given (inspection of a probe) it
    // receives the [B, G, T, T] map that mapKind(spec) describes: row = query.
    virtual torch::Tensor mix(const MixInput& in, torch::Tensor* map) = 0;
    // Before every training step (0-based `step`): schedules such as the
    // Performer's feature redraw. Not called in evaluation.
    virtual void beginStep(std::int64_t step) { (void)step; }
};

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
