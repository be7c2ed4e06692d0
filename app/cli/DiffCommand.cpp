#include "DiffCommand.h"

#include "TextTable.h"
#include "config/Presets.h"
#include "run/RunLayout.h"
#include "train/RunConfig.h"
#include "vocab/ConfigError.h"
#include "vocab/JsonText.h"

namespace widelab {

std::filesystem::path diffSource(const std::string& runFileOrPreset)
{
    std::error_code error;
    if (std::filesystem::is_directory(runFileOrPreset, error)) {
        const std::filesystem::path config = runlayout::configFile(runFileOrPreset);
        if (!std::filesystem::is_regular_file(config, error))
            throw ConfigError({{"", runFileOrPreset + ": a folder without config.json, so not a run"}});
        return config;
    }
    return resolveConfigPath(runFileOrPreset);  // a file, or a preset; else an error naming the presets
}

int diffCommand(const std::string& a, const std::string& b, bool json, std::ostream& out)
{
    const std::filesystem::path fileA = diffSource(a), fileB = diffSource(b);
    const nlohmann::json documentA = parseJsonText(readFileText(fileA), fileA.string());
    const nlohmann::json documentB = parseJsonText(readFileText(fileB), fileB.string());
    const std::vector<ConfigDifference> differences = configurationDiff(documentA, documentB);
    if (json) {
        nlohmann::json list = nlohmann::json::array();
        auto value = [](const std::string& text) { return text.empty() ? nlohmann::json() : nlohmann::json::parse(text); };
        for (const ConfigDifference& difference : differences)
            list.push_back({{"key", difference.key}, {"a", value(difference.a)}, {"b", value(difference.b)}});
        out << nlohmann::json{{"a", fileA.string()}, {"b", fileB.string()}, {"differences", list}}.dump(2) << "\n";
        return 0;
    }
    if (differences.empty()) {
        out << "No key differs between " << a << " and " << b << " (defaults filled in).\n";
        return 0;
    }
    out << differences.size() << (differences.size() == 1 ? " key differs" : " keys differ") << " between A = " << a
        << " and B = " << b << " (defaults filled in):\n";
    TextTable table({"key", "A", "B"});
    for (const ConfigDifference& difference : differences)
        table.addRow({difference.key, difference.a.empty() ? "(none)" : difference.a,
                      difference.b.empty() ? "(none)" : difference.b});
    out << table.render();
    return 0;
}

}  // namespace widelab
