// defines: KeyType, KeySpec, configSchema, keySpec: every key of a run document
// (name, description, model, task, train) with its type, range, default, choices,
// a one-line description and, for a default computed from other keys, the rule
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

// RunFolder: a run directory, optionally followed by :STEP, :best or :latest.
enum class KeyType { Integer, Number, Boolean, Choice, Text, FilePath, TextList, Device, RunFolder };

struct KeySpec {
    std::string key;                      // dotted: "model.head_dim"; top-level keys have no dot
    KeyType type = KeyType::Integer;
    double min = 0;                       // Integer and Number: the accepted range
    double max = 0;
    nlohmann::json defaultValue;          // what an absent key reads as (derived: with every other key at its default)
    std::vector<std::string> choices;     // Choice: the accepted values, in order
    std::string description;              // one line
    std::string derivedRule;              // a default computed from other keys ("d_model / heads"); empty if none
    std::vector<std::string> dependsOn;   // the dotted keys derivedRule reads

    std::string section() const;          // "model"; empty for a top-level key
    std::string name() const;             // the key inside its section: "head_dim"
    bool derived() const { return !derivedRule.empty(); }
};

// Every key of a run document, in the order of the document (top level, model,
// task, train). The readers take their ranges and choices from here.
const std::vector<KeySpec>& configSchema();

// The spec of a dotted key; throws std::out_of_range for a key not in the schema.
const KeySpec& keySpec(const std::string& key);

std::string toString(KeyType type);  // "integer", "number", ...

// Builders of key specs, for the schema and for the parts that declare keys of
// their own (each attention mechanism, core/model/attention/). `dotted` is the
// full key ("model.linformer_k"); a choice's default is choices[defaultIndex].
KeySpec integerKey(std::string dotted, double min, double max, std::int64_t value, std::string description);
KeySpec numberKey(std::string dotted, double min, double max, double value, std::string description);
KeySpec booleanKey(std::string dotted, bool value, std::string description);
KeySpec choiceKey(std::string dotted, std::vector<std::string> choices, std::string description,
                  std::size_t defaultIndex = 0);

}  // namespace widelab
