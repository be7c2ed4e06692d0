// defines: ExportFile, ExportTurn, writeExportSet, exportProblems, exportRecordedFiles: an export's files
// (weights, run document, sidecars) written as one unit, and checked as one.
// The run document NAME.json, renamed into place last, records under "export"
// the SHA-256 of every other file; docs/run-directory.md, "Export".
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

// One file of an export: its name in the export's folder and its bytes.
struct ExportFile {
    std::string name;
    std::string bytes;
};

// An export's turn at its folder: an exclusive flock on the folder, held while
// it lives. Exports into one folder take turns, so two at once do not mix; an
// export holds its turn from its first look at what the folder holds (is this
// name an earlier export?) to its last rename, so that it never sees another's
// set half renamed. `target`: the file the export is for, named in messages.
// Throws CheckpointError when the folder cannot be opened or locked.
class ExportTurn {
public:
    ExportTurn(const std::filesystem::path& folder, const std::filesystem::path& target);
    ~ExportTurn();
    ExportTurn(const ExportTurn&) = delete;
    ExportTurn& operator=(const ExportTurn&) = delete;
    const std::filesystem::path& folder() const { return m_folder; }

private:
    std::filesystem::path m_folder;
    int m_fd;
};

// Writes `files` and then `document` (as NAME.json, `documentName`) into the
// turn's folder as one set. `document` gains "export": {"files": {name: sha256
// hex}}. Every file is first written under a temporary name; then the files are
// renamed into place, the `stale` names (an earlier export's sidecars that this
// one does not write) are removed, and the document comes last, so that a kill
// at any point leaves either the earlier set or a document whose record the
// files fail. Afterwards the set on disk is checked against the record (a
// writer that is not WideLab). Throws CheckpointError naming the file and the reason.
void writeExportSet(const ExportTurn& turn, const std::vector<ExportFile>& files, nlohmann::json document,
                    const std::string& documentName, const std::vector<std::string>& stale);

// What is wrong with the export whose run document is `documentFile`: each
// file its record lists that is missing or whose contents differ. Empty when
// the set is whole, and when the document records no files (an export of an
// earlier WideLab). A record that is not {"files": {name: 64 hex digits}} is a
// problem too.
std::vector<std::string> exportProblems(const std::filesystem::path& documentFile);

// The names the document's record lists (empty when it records none).
std::vector<std::string> exportRecordedFiles(const std::filesystem::path& documentFile);

}  // namespace widelab
