#include "ExportSet.h"

#include "run/Checkpoint.h"
#include "vocab/JsonText.h"
#include "runtime/Sha256.h"
#include "runtime/SystemError.h"

#include <cerrno>
#include <optional>
#include <regex>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace widelab {
namespace {

// Staged files not yet renamed are removed when an export fails midway.
struct Staged {
    std::vector<std::pair<std::filesystem::path, std::filesystem::path>> files;  // temporary, final
    std::size_t committed = 0;
    ~Staged()
    {
        for (std::size_t i = committed; i < files.size(); ++i) {
            std::error_code ignored;
            std::filesystem::remove(files[i].first, ignored);
        }
    }
};

constexpr const char* kRecord = "export";

// The temporary files an export of these names that was killed midway left
// (stageFile's NAME.tmp-PID-N): with the folder's turn held, no export is
// writing them.
void removeInterruptedExport(const std::filesystem::path& folder, const std::vector<ExportFile>& files,
                             const std::string& documentName)
{
    static const std::regex suffix(R"(\.tmp-\d+-\d+)");
    std::vector<std::string> names = {documentName};
    for (const ExportFile& file : files)
        names.push_back(file.name);
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
        const std::string name = entry.path().filename().string();
        for (const std::string& exported : names) {
            if (name.size() > exported.size() && name.compare(0, exported.size(), exported) == 0
                && std::regex_match(name.substr(exported.size()), suffix)) {
                std::error_code ignored;
                std::filesystem::remove(entry.path(), ignored);
                break;
            }
        }
    }
}

}  // namespace

ExportTurn::ExportTurn(const std::filesystem::path& folder, const std::filesystem::path& target)
    : m_folder(folder), m_fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC))
{
    if (m_fd < 0)
        throw CheckpointError(target.string() + ": cannot open its folder " + folder.string() + ": "
                              + systemReason(errno));
    while (::flock(m_fd, LOCK_EX) != 0) {
        if (errno == EINTR)
            continue;
        const int error = errno;
        ::close(m_fd);
        throw CheckpointError(target.string() + ": cannot lock its folder " + folder.string() + ": "
                              + systemReason(error));
    }
}

ExportTurn::~ExportTurn()
{
    ::close(m_fd);
}

void writeExportSet(const ExportTurn& turn, const std::vector<ExportFile>& files, nlohmann::json document,
                    const std::string& documentName, const std::vector<std::string>& stale)
{
    const std::filesystem::path& folder = turn.folder();
    nlohmann::json record = nlohmann::json::object();
    for (const ExportFile& file : files)
        record[file.name] = sha256Hex(file.bytes);
    document[kRecord] = {{"files", record}};
    const std::filesystem::path documentFile = folder / documentName;
    removeInterruptedExport(folder, files, documentName);
    Staged staged;
    for (const ExportFile& file : files)
        staged.files.emplace_back(stageFile(folder / file.name, file.bytes), folder / file.name);
    staged.files.emplace_back(stageFile(documentFile, document.dump(2) + "\n"), documentFile);
    for (; staged.committed + 1 < staged.files.size(); ++staged.committed)
        commitStagedFile(staged.files[staged.committed].first, staged.files[staged.committed].second);
    for (const std::string& name : stale) {
        std::error_code error;
        std::filesystem::remove(folder / name, error);
        if (error)
            throw CheckpointError((folder / name).string() + ": an earlier export's file that this one replaces "
                                  "cannot be removed: " + systemReason(error.value()));
    }
    commitStagedFile(staged.files.back().first, staged.files.back().second);
    ++staged.committed;
    // Read back while the folder is still this export's.
    const std::vector<std::string> problems = exportProblems(documentFile);
    if (!problems.empty())
        throw CheckpointError(problems.front() + " (another program wrote into the export as it was made); export again");
}

namespace {

// The record of the export whose document is `documentFile`, or what is wrong
// with it (problems); neither when the document records nothing.
struct Record {
    std::vector<std::pair<std::string, std::string>> files;  // name, sha256
    std::vector<std::string> problems;
};

Record readRecord(const std::filesystem::path& documentFile)
{
    const std::string origin = documentFile.string();
    std::optional<nlohmann::json> document;
    try {
        document = tryParseJsonText(readFileBytes(documentFile));
    } catch (const FileError& error) {
        return {{}, {error.what()}};
    }
    if (!document)
        return {{}, {origin + ": not valid JSON"}};
    if (!document->is_object() || !document->contains(kRecord))
        return {};
    const nlohmann::json& record = document->at(kRecord);
    if (!record.is_object() || !record.contains("files") || !record.at("files").is_object())
        return {{}, {origin + ": its \"export\" record is not {\"files\": {name: sha256}}"}};
    static const std::regex digest("[0-9a-f]{64}");
    Record read;
    for (const auto& [name, hash] : record.at("files").items()) {
        if (!hash.is_string() || !std::regex_match(hash.get<std::string>(), digest)
            || name.find('/') != std::string::npos || name == "." || name == ".." || name.empty())
            read.problems.push_back(origin + ": its \"export\" record's entry \"" + name
                                    + "\" is not a file name with a SHA-256");
        else
            read.files.emplace_back(name, hash.get<std::string>());
    }
    return read;
}

}  // namespace

std::vector<std::string> exportRecordedFiles(const std::filesystem::path& documentFile)
{
    std::vector<std::string> names;
    for (const auto& [name, hash] : readRecord(documentFile).files)
        names.push_back(name);
    return names;
}

std::vector<std::string> exportProblems(const std::filesystem::path& documentFile)
{
    Record record = readRecord(documentFile);
    std::vector<std::string> problems = std::move(record.problems);
    for (const auto& [name, hash] : record.files) {
        const std::filesystem::path file = documentFile.parent_path() / name;
        std::string bytes;
        try {
            bytes = readFileBytes(file);
        } catch (const FileError& error) {
            problems.push_back(error.what());
            continue;
        }
        if (const std::string found = sha256Hex(bytes); found != hash)
            problems.push_back(file.string() + ": its contents are not the ones " + documentFile.filename().string()
                               + " records for this export (sha256 " + hash.substr(0, 12) + "... recorded, "
                               + found.substr(0, 12) + "... found)");
    }
    return problems;
}

}  // namespace widelab
