// defines: presetDirectories, shippedPresetDirectory, listPresets, userPresetDirectory, listUserPresets,
// isShippedPreset, resolveConfigPath: where the shipped presets
// (resources/presets/*.json) and the user's own presets are found, and lookup
// by name. The one rule for where user presets live is userPresetDirectory():
// the CLI and the desktop app both ask it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

// Where the shipped presets may be: $WIDELAB_PRESETS, the share folder installed
// beside the program, the source tree (shippedFolderCandidates says how). The
// first that holds presets is the one used.
std::vector<std::filesystem::path> presetDirectories();
// The folder the shipped presets are read from; empty when none holds any.
std::filesystem::path shippedPresetDirectory();
// Shipped preset names (file names without .json), sorted.
std::vector<std::string> listPresets();

// The folder of the user's own presets (it need not exist yet):
// $WIDELAB_USER_PRESETS when set, else $XDG_CONFIG_HOME/widelab/presets, else
// ~/.config/widelab/presets (%APPDATA%\widelab\presets on Windows). Empty when
// none of these variables is set.
std::filesystem::path userPresetDirectory();
// The user's preset names, sorted (none when the folder does not exist).
std::vector<std::string> listUserPresets();

// Whether `file` is one of the shipped presets: those are read-only, a
// changed one is saved elsewhere.
bool isShippedPreset(const std::filesystem::path& file);

// `nameOrPath` as given when it is an existing file, else the shipped preset of
// that name, else the user's preset of that name (a shipped preset wins over a
// user's preset of the same name); throws ConfigError naming the available
// presets when none exists.
std::filesystem::path resolveConfigPath(const std::string& nameOrPath);

}  // namespace widelab
