// defines: studyDirectories, listStudies, resolveStudyPath: where the shipped
// studies (resources/studies/*.json) are found, and lookup by name, as presets are
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

// Where the shipped studies may be: $WIDELAB_STUDIES, the share folder installed
// beside the program, the source tree (shippedFolderCandidates says how). The
// first that holds studies is the one used.
std::vector<std::filesystem::path> studyDirectories();
// Shipped study names (file names without .json), sorted.
std::vector<std::string> listStudies();
// `nameOrPath` as given when it is an existing file, else the shipped study of that
// name; throws ConfigError naming the shipped studies when neither exists.
std::filesystem::path resolveStudyPath(const std::string& nameOrPath);

}  // namespace widelab
