#include "Presets.h"

#include "vocab/ConfigError.h"
#include "JsonSection.h"
#include "ResourceFolder.h"

#include <algorithm>
#include <cstdlib>

namespace widelab {
namespace {

std::string environment(const char* name)
{
    const char* value = std::getenv(name);
    return value != nullptr ? std::string(value) : std::string();
}

}  // namespace

std::vector<std::filesystem::path> presetDirectories()
{
    return shippedFolderCandidates("presets", "WIDELAB_PRESETS");
}

std::filesystem::path shippedPresetDirectory() { return firstFolderWithJson(presetDirectories()); }

std::vector<std::string> listPresets()
{
    const std::filesystem::path directory = shippedPresetDirectory();
    return directory.empty() ? std::vector<std::string>{} : jsonFileNames(directory);
}

std::filesystem::path userPresetDirectory()
{
    if (const std::string env = environment("WIDELAB_USER_PRESETS"); !env.empty())
        return env;
    if (const std::string config = environment("XDG_CONFIG_HOME"); !config.empty())
        return std::filesystem::path(config) / "widelab" / "presets";
#ifdef _WIN32
    if (const std::string appData = environment("APPDATA"); !appData.empty())
        return std::filesystem::path(appData) / "widelab" / "presets";
#endif
    if (const std::string home = environment("HOME"); !home.empty())
        return std::filesystem::path(home) / ".config" / "widelab" / "presets";
    return {};
}

std::vector<std::string> listUserPresets()
{
    const std::filesystem::path directory = userPresetDirectory();
    return directory.empty() ? std::vector<std::string>{} : jsonFileNames(directory);
}

bool isShippedPreset(const std::filesystem::path& file)
{
    std::error_code error;
    const std::filesystem::path folder = std::filesystem::weakly_canonical(file, error).parent_path();
    if (error)
        return false;
    for (const auto& directory : presetDirectories()) {
        std::error_code same;
        if (std::filesystem::equivalent(folder, directory, same))
            return true;
    }
    return false;
}

std::filesystem::path resolveConfigPath(const std::string& nameOrPath)
{
    std::error_code error;
    if (std::filesystem::is_regular_file(nameOrPath, error))
        return nameOrPath;
    std::vector<std::filesystem::path> folders = presetDirectories();
    if (const std::filesystem::path user = userPresetDirectory(); !user.empty())
        folders.push_back(user);
    for (const auto& directory : folders) {
        const auto candidate = directory / (nameOrPath + ".json");
        if (std::filesystem::is_regular_file(candidate, error))
            return candidate;
    }
    std::vector<std::string> presets = listPresets();
    const std::vector<std::string> mine = listUserPresets();
    presets.insert(presets.end(), mine.begin(), mine.end());
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
