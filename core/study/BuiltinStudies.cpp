#include "BuiltinStudies.h"

#include "vocab/ConfigError.h"
#include "config/JsonSection.h"
#include "config/ResourceFolder.h"

#include <algorithm>

namespace widelab {
namespace {

std::filesystem::path shippedDirectory() { return firstFolderWithJson(studyDirectories()); }

}  // namespace

std::vector<std::filesystem::path> studyDirectories()
{
    return shippedFolderCandidates("studies", "WIDELAB_STUDIES");
}

std::vector<std::string> listStudies()
{
    const std::filesystem::path directory = shippedDirectory();
    return directory.empty() ? std::vector<std::string>{} : jsonFileNames(directory);
}

std::filesystem::path resolveStudyPath(const std::string& nameOrPath)
{
    std::error_code error;
    if (std::filesystem::is_regular_file(nameOrPath, error))
        return nameOrPath;
    if (const std::filesystem::path directory = shippedDirectory(); !directory.empty()) {
        const auto candidate = directory / (nameOrPath + ".json");
        if (std::filesystem::is_regular_file(candidate, error))
            return candidate;
    }
    const std::vector<std::string> studies = listStudies();
    std::string reason = "no such file, and no built-in study of that name";
    if (const std::string guess = closestMatch(nameOrPath, studies); !guess.empty())
        reason += " (did you mean \"" + guess + "\"?)";
    std::string names;
    for (const auto& name : studies)
        names += (names.empty() ? "" : ", ") + name;
    reason += "; built-in studies: " + (names.empty() ? std::string("none found") : names);
    throw ConfigError({{"", nameOrPath + ": " + reason}});
}

}  // namespace widelab
