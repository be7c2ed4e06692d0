// defines: JsonSection, a reader for one object of a configuration document that
// checks types and ranges, remembers which keys it read, and collects every problem
#pragma once

#include "vocab/ConfigError.h"
#include "ConfigSchema.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace widelab {

// Edit-distance suggestion for a misspelt key or value; empty when nothing is close.
std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates);

class JsonSection {
public:
    // `object` may be any JSON value; a non-object is reported once. `path` is the
    // dotted prefix used in messages ("model"). Issues go to `issues`.
    JsonSection(const nlohmann::json& object, std::string path, std::vector<ConfigIssue>& issues);

    // Whether the object holds `key`, null included (every reader reports a null).
    bool has(const std::string& key) const;

    // Each reader leaves `out` untouched when the key is absent or invalid. A
    // null value is an issue naming the default (`out` as it stands).
    void read(const std::string& key, std::int64_t& out, std::int64_t min, std::int64_t max);
    void read(const std::string& key, double& out, double min, double max);
    void read(const std::string& key, bool& out);
    void read(const std::string& key, std::string& out);
    void read(const std::string& key, std::vector<std::string>& out);  // an array of strings
    // An array of byte sequences, each as data/ByteText's bytesToJson writes it: a
    // string, or {"hex": "..."} for bytes that are not UTF-8.
    void readByteStrings(const std::string& key, std::vector<std::string>& out);

    // The key `spec` describes (its name inside this section), with the schema's
    // range or choices: the readers of model, task and train go through these.
    void read(const KeySpec& spec, std::int64_t& out);
    void read(const KeySpec& spec, double& out);
    void read(const KeySpec& spec, bool& out) { read(spec.name(), out); }
    void read(const KeySpec& spec, std::string& out) { read(spec.name(), out); }
    template <typename Enum>
    void readChoice(const KeySpec& spec, Enum& out)
    {
        readChoice(spec.name(), out, spec.choices);
    }

    // A string that must be one of `names`; stores the matching index in `out`.
    template <typename Enum>
    void readChoice(const std::string& key, Enum& out, const std::vector<std::string>& names)
    {
        if (auto index = choiceIndex(key, names, static_cast<std::size_t>(out)))
            out = static_cast<Enum>(*index);
    }

    // Reports every key of the object that no reader asked for, with a suggestion.
    void rejectUnknownKeys(const std::vector<std::string>& alsoAllowed = {});

    void addIssue(const std::string& key, std::string reason);
    std::string keyPath(const std::string& key) const;

private:
    // The value of `key`; nullptr when absent or null (a null is reported,
    // naming `defaultText` as the default).
    const nlohmann::json* find(const std::string& key, const std::string& defaultText);
    // An array of strings; `bytes`: also {"hex": ...} items (readByteStrings).
    void readStrings(const std::string& key, std::vector<std::string>& out, bool bytes);
    void read(const std::string& key, std::string& out, const std::string& defaultText);
    std::optional<std::size_t> choiceIndex(const std::string& key, const std::vector<std::string>& names,
                                           std::size_t current);

    const nlohmann::json& m_object;
    std::string m_path;
    std::vector<ConfigIssue>& m_issues;
    std::vector<std::string> m_known;
    bool m_valid = true;
};

}  // namespace widelab
