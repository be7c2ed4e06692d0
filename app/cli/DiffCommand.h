// defines: diffCommand, `widelab-cli diff A B`: the keys whose values differ
// between two run documents (runs, configuration files or presets), each
// resolved first so that defaults and derived keys are compared as they apply
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

namespace widelab {

// A run directory's config.json, a configuration file, or a preset by name;
// throws ConfigError naming the argument when it is none of them.
std::filesystem::path diffSource(const std::string& runFileOrPreset);

// The table (key, A's value, B's value), or with `json` a list of {key, a, b}
// (a side's value null when it lacks the key). Exit status 0 whether or not
// they differ.
int diffCommand(const std::string& a, const std::string& b, bool json, std::ostream& out);

}  // namespace widelab
