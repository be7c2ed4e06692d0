// defines: presetDirectories, listPresets, resolveConfigPath: where the shipped
// presets (resources/presets/*.json) are found, and lookup by name
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

std::vector<std::filesystem::path> presetDirectories();
// Preset names (file names without .json), sorted.
std::vector<std::string> listPresets();
// `nameOrPath` as given when it is an existing file, else the preset of that
// name; throws ConfigError naming the available presets when neither exists.
std::filesystem::path resolveConfigPath(const std::string& nameOrPath);

}  // namespace widelab
