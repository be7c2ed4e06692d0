// defines: KeyLookup, sectionsLookup, WhenUnused, KeyRule, keyRules, KeyState, keyState, UnusedKey,
// unusedKeys: when a configuration key has an effect, given the document's other values. One
// table, read by the core (its "has no effect ..." warnings) and by the configuration panel
// (which field it hides, which it greys out and why)
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace widelab {

// A document's value by dotted key ("model.experts"): resolved (the core) or as being edited
// (the panel). Null for a key the caller does not know. A rule compares only values of the
// right type: an unknown number makes no comparison true, an unknown text equals no choice.
using KeyLookup = std::function<nlohmann::json(const std::string& dottedKey)>;

// A lookup into a document of sections, {"model": {...}, "task": {...}, "train": {...}}:
// "task.kind" is document["task"]["kind"]. `document` must outlive the lookup.
KeyLookup sectionsLookup(const nlohmann::json& document);

// What the configuration panel does with a field its rule finds without effect: grey it out
// with the reason in its tool tip, or hide it (it belongs to another kind of task or input,
// and showing it would only crowd the form).
enum class WhenUnused { Greyed, Hidden };

struct KeyRule {
    std::vector<std::string> keys;                  // dotted, "model.top_k"
    std::function<bool(const KeyLookup&)> applies;  // false: none of `keys` has an effect
    // Why not: completes "has no effect ..." (the core) and "Not used now: ..." (the panel).
    std::string reason;
    WhenUnused form = WhenUnused::Greyed;
    // false: a document that gives the keys is not warned; the rule says why where it is made.
    bool warns = true;
    // When the reason names a value of the document: the reason, instead of `reason`.
    std::function<std::string(const KeyLookup&)> reasonFrom = {};

    std::string why(const KeyLookup& value) const { return reasonFrom ? reasonFrom(value) : reason; }
};

// Every rule, model, task and train in that order, each section's in the order its warnings
// are written. A key no rule names always has an effect. Not here: limits between values
// ("warmup_steps exceeds train.steps") and each attention mechanism's own keys and warnings,
// which its registration carries (core/model/attention).
const std::vector<KeyRule>& keyRules();

// One key under the document's values: without effect when some rule that names it does not
// apply; then hidden when any such rule hides it, and the first such rule's reason.
struct KeyState {
    bool applicable = true;
    bool visible = true;
    std::string reason;  // when not applicable
};
KeyState keyState(const std::string& key, const KeyLookup& value);

// The keys of `section` ("model", "task" or "train") without effect that a document is warned
// about, each once, with its first such rule's reason, in the table's order. The caller warns
// only of those the document gives, at another value than its absence gives.
struct UnusedKey {
    std::string key;  // dotted
    std::string reason;
};
std::vector<UnusedKey> unusedKeys(const std::string& section, const KeyLookup& value);

}  // namespace widelab
