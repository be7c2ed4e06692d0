// defines: jsonFileNames, firstFolderWithJson: the shipped folders of JSON
// documents (presets, studies) read one way: a folder's documents by name, and
// the first of several candidate folders that holds any
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

// The .json files of `directory`, by name (without .json), sorted; none when it
// cannot be read.
std::vector<std::string> jsonFileNames(const std::filesystem::path& directory);

// The first of `directories` that holds a .json file; empty when none does.
std::filesystem::path firstFolderWithJson(const std::vector<std::filesystem::path>& directories);

}  // namespace widelab
