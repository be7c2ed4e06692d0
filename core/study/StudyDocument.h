// defines: StudyAxis, StudyDocument, StudyOverrides, StudyMember, parseStudyDocument,
// loadStudyDocument, expandStudy, solveWidth: a study's JSON document (a base run
// document, axes, seeds, what to report), read and checked with every problem
// named, and its expansion into members, each an ordinary run document
#pragma once

#include "vocab/ConfigError.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace widelab {

// One axis: one key ("model.heads") or several set together ("model.layers" and
// "model.heads"), over values; each value holds one entry per key. A
// fixed-parameter axis also names an integer width key to solve for (`solve`),
// keeping the base's stored parameter count (`keep` "parameters").
struct StudyAxis {
    std::vector<std::string> keys;              // dotted run-document keys
    std::vector<std::vector<nlohmann::json>> values;  // [value][key]
    std::string label;                          // what the axis is called ("aspect ratio"); may be empty
    std::vector<std::string> names;             // what each value is called ("ViT-MoE"); empty, or one per value
    std::string solve;                          // a width key solved for, or empty
};

struct StudyDocument {
    std::string name;
    std::string description;
    nlohmann::json base;            // the base run document (a preset's contents when named)
    std::string baseName;           // the preset or file named, empty when given inline
    nlohmann::json set;             // dotted key -> value, applied to every member (an object, maybe empty)
    std::vector<StudyAxis> axes;
    bool paired = false;            // "combine": "paired" (zip) rather than "grid" (Cartesian product)
    std::vector<std::int64_t> seeds;  // train.seed of each member of an axis point
    std::string metric = "accuracy";  // report.metric: "accuracy", "loss" or "bleu" (translation)
    nlohmann::json source;          // the document as given

    // The document as given with `base` replaced by the base itself: what a study
    // directory records, and what a continuation is compared with.
    nlohmann::json toJson() const;
};

// What the command line changes for a quick look: every member's train.steps and
// the number of seeds (the document's first N seeds, then the next integers).
struct StudyOverrides {
    std::optional<std::int64_t> steps;
    std::optional<std::int64_t> seeds;

    nlohmann::json toJson() const;  // {"steps": N or null, "seeds": N or null}
};

// One member: an axis point at one seed.
struct StudyMember {
    std::string name;    // "layers=6,heads=8,seed=1": its directory under runs/
    std::string point;   // the same without the seed: members of one point differ only by seed
    std::int64_t seed = 0;
    // Each axis key with its value, then each solved key with the width found, in axis order.
    std::vector<std::pair<std::string, nlohmann::json>> settings;
    nlohmann::json document;  // the member's run document (base, set, settings, seed, overrides)

    nlohmann::json toJson() const;  // name, point, seed, settings (an object keeping the keys' order as a list)
};

// Reads a study document; throws ConfigError listing every problem, each with its
// key path ("axes[1].values: ..."; unknown keys named). `origin` names the file in
// the first line. A base given by name is looked up as presets are (resolveConfigPath).
StudyDocument parseStudyDocument(const std::string& text, const std::string& origin = "");
StudyDocument loadStudyDocument(const std::filesystem::path& file);

// The members, in order: for each seed, every axis point (the Cartesian product of
// the axes, first axis outermost, or the axes zipped when paired). Every member's
// document is checked as the trainer checks a run (parseRunDocument; data files
// are checked when the member starts); throws ConfigError naming each problem with
// the axis values that cause it ("axes[1] value 7: model.heads: ...").
std::vector<StudyMember> expandStudy(const StudyDocument& study, const StudyOverrides& overrides = {});

// The value of the integer model key `widthKey` that brings the stored parameter
// count (core/model/ParameterCount) of `document`'s model closest to `target`,
// among the values from 1 to four times the document's own (or the key's default)
// for which the model validates; nullopt when none does.
std::optional<std::int64_t> solveWidth(const nlohmann::json& document, const std::string& widthKey, std::int64_t target);

// Sets a dotted key ("model.heads") in a run document, making the section when absent.
void setDottedKey(nlohmann::json& document, const std::string& key, const nlohmann::json& value);

// "heads=8", "attention=linear": a setting as a member's name writes it.
std::string settingText(const std::string& key, const nlohmann::json& value);

// A member's settings (each axis key with its value, as StudyMember holds them).
using StudySettings = std::vector<std::pair<std::string, nlohmann::json>>;

// The index of the value of `axis` that `settings` hold; -1 when they hold none.
int axisValueIndex(const StudyAxis& axis, const StudySettings& settings);

// What a point is called where its axes have names: each named axis's name for
// the point's value, each other axis's settings as a member's name writes them,
// joined by ", " ("WideNet, heads=8"). Empty when no axis has names (the point's
// own text says it then) or when a named axis's value is not among its values.
std::string pointLabel(const std::vector<StudyAxis>& axes, const StudySettings& settings);

}  // namespace widelab
