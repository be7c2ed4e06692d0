#include "ResourceFolder.h"

#include <algorithm>

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

}  // namespace widelab
