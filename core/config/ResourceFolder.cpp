#include "ResourceFolder.h"

#include <algorithm>
#include <cstdlib>

namespace widelab {

std::vector<std::string> jsonFileNames(const std::filesystem::path& directory)
{
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
        std::error_code typeError;
        if (entry.path().extension() == ".json" && entry.is_regular_file(typeError))
            names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::filesystem::path firstFolderWithJson(const std::vector<std::filesystem::path>& directories)
{
    for (const auto& directory : directories)
        if (!jsonFileNames(directory).empty())
            return directory;
    return {};
}

std::filesystem::path programDirectory()
{
    std::error_code error;
    const std::filesystem::path program = std::filesystem::canonical("/proc/self/exe", error);
    return error ? std::filesystem::path() : program.parent_path();
}

std::vector<std::filesystem::path> shippedFolderCandidates(const std::string& name, const char* variable)
{
    std::vector<std::filesystem::path> folders;
    if (const char* value = std::getenv(variable); value != nullptr && *value != '\0')
        folders.emplace_back(value);
    // WIDELAB_DATA_FROM_BIN: the share folder relative to the installed bin
    // folder ("../share/widelab" for the usual layout); core/CMakeLists.txt.
    if (const std::filesystem::path bin = programDirectory(); !bin.empty())
        folders.push_back((bin / WIDELAB_DATA_FROM_BIN / name).lexically_normal());
    folders.push_back(std::filesystem::path(WIDELAB_SOURCE_RESOURCES) / name);
    return folders;
}

std::filesystem::path documentationFolder(std::vector<std::filesystem::path>* lookedIn)
{
    std::vector<std::filesystem::path> folders;
    if (const char* value = std::getenv("WIDELAB_DOCS"); value != nullptr && *value != '\0')
        folders.emplace_back(value);
    // WIDELAB_DOC_FROM_BIN: as WIDELAB_DATA_FROM_BIN, for the documentation folder.
    if (const std::filesystem::path bin = programDirectory(); !bin.empty())
        folders.push_back((bin / WIDELAB_DOC_FROM_BIN).lexically_normal());
    folders.push_back(std::filesystem::path(WIDELAB_SOURCE_RESOURCES).parent_path());
    if (lookedIn != nullptr)
        *lookedIn = folders;
    for (const auto& folder : folders) {
        std::error_code error;
        if (std::filesystem::is_regular_file(folder / "README.md", error))
            return folder;
    }
    return {};
}

}  // namespace widelab
