// defines: jsonFileNames, firstFolderWithJson, programDirectory,
// shippedFolderCandidates, documentationFolder: the shipped folders of JSON
// documents (presets, studies) read one way: a folder's documents by name, the
// first of several candidate folders that holds any, and the one rule for where
// those candidates are (installed beside the program, else the source tree); the
// documentation found by the same rule
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

// The folder of the running program's executable (from /proc/self/exe), with
// symbolic links resolved; empty where the system does not say.
std::filesystem::path programDirectory();

// Where the shipped folder `name` (presets, studies) may be, in the order to
// look: $`variable` when set and not empty; the installed share folder found
// from the program's own location (BIN/../share/widelab/NAME, so that a package
// installed or unpacked under any prefix reads its own copy); the source tree
// (resources/NAME), for programs run from the build tree. Callers use the first
// that holds a document (firstFolderWithJson).
std::vector<std::filesystem::path> shippedFolderCandidates(const std::string& name, const char* variable);

// The folder holding README.md and docs/ (the user's guide, as the source tree
// lays them out), by the same rule: $WIDELAB_DOCS; the installed documentation
// folder seen from the program's own (BIN/../share/doc/widelab); the source tree.
// The first that holds README.md; empty when none does (a system that drops
// /usr/share/doc). `lookedIn`, when given, receives every candidate, for the
// message that says where the documentation was looked for.
std::filesystem::path documentationFolder(std::vector<std::filesystem::path>* lookedIn = nullptr);

}  // namespace widelab
