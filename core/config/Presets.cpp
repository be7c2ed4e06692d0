#include "Presets.h"

#include "ConfigError.h"
#include "JsonSection.h"

#include <algorithm>
#include <cstdlib>

namespace widelab {

std::vector<std::filesystem::path> presetDirectories()
{
    std::vector<std::filesystem::path> directories;
    if (const char* env = std::getenv("WIDELAB_PRESETS"); env && *env)
        directories.emplace_back(env);
    directories.emplace_back(WIDELAB_SOURCE_PRESETS);
    directories.emplace_back(WIDELAB_INSTALLED_PRESETS);
    return directories;
}

std::vector<std::string> listPresets()
{
    std::vector<std::string> names;
    for (const auto& directory : presetDirectories()) {
        std::error_code error;
        for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
            if (entry.path().extension() == ".json")
                names.push_back(entry.path().stem().string());
        }
        if (!names.empty())
            break;  // the first directory that has presets wins
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::filesystem::path resolveConfigPath(const std::string& nameOrPath)
{
    std::error_code error;
    if (std::filesystem::is_regular_file(nameOrPath, error))
        return nameOrPath;
    for (const auto& directory : presetDirectories()) {
        const auto candidate = directory / (nameOrPath + ".json");
        if (std::filesystem::is_regular_file(candidate, error))
            return candidate;
    }
    const std::vector<std::string> presets = listPresets();
    std::string reason = "no such file, and no preset of that name";
    if (const std::string guess = closestMatch(nameOrPath, presets); !guess.empty())
        reason += " (did you mean \"" + guess + "\"?)";
    std::string names;
    for (const auto& name : presets)
        names += (names.empty() ? "" : ", ") + name;
    reason += "; presets: " + (names.empty() ? std::string("none found") : names);
    throw ConfigError({{"", nameOrPath + ": " + reason}});
}

}  // namespace widelab
