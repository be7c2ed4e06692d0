// defines: RunNotes, runName, readRunNotes, writeRunNotes, parseTags: RUN_DIR/notes.json, what
// the user says about a run (a name, tags, a note), kept with the run so that every
// window and program that reads the run shows the same words
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

struct RunNotes {
    std::string name;               // shown instead of the directory's name; empty: the directory's
    std::vector<std::string> tags;  // distinct, trimmed, none empty, in the user's order
    std::string note;               // free text, any number of lines

    bool empty() const { return name.empty() && tags.empty() && note.empty(); }
    bool operator==(const RunNotes&) const = default;
};

// What a run is called wherever it appears: the user's name for it, else its
// directory's name.
std::string runName(const RunNotes& notes, const std::filesystem::path& directory);

// Tags from what a user types: split at commas, each trimmed of spaces, empty
// ones and repeats left out ("a, b,,a " -> {"a", "b"}).
std::vector<std::string> parseTags(const std::string& text);

// RUN_DIR/notes.json. Empty notes when the file is missing (most runs have none,
// `error` stays empty); when it is damaged, empty notes and `error` naming the
// file and the reason (not a JSON object, "tags" not a list of strings, ...).
// Never throws.
RunNotes readRunNotes(const std::filesystem::path& directory, std::string* error = nullptr);

// Writes RUN_DIR/notes.json atomically, or removes it when `notes` is empty.
// The name and tags are stored trimmed (a tag without text left out). Throws
// CheckpointError naming the file when the directory cannot be written.
void writeRunNotes(const std::filesystem::path& directory, const RunNotes& notes);

}  // namespace widelab
