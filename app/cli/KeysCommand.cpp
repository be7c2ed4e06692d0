#include "KeysCommand.h"

#include "config/ConfigSchema.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

namespace widelab {
namespace {

std::string number(double value)
{
    if (value == std::floor(value) && std::abs(value) < 1e15)
        return std::to_string(static_cast<std::int64_t>(value));
    std::ostringstream text;
    text << value;
    return text.str();
}

// What a key accepts beyond its type: a range or the choices.
std::string accepted(const KeySpec& spec)
{
    if (spec.type == KeyType::Integer || spec.type == KeyType::Number)
        return number(spec.min) + " to " + number(spec.max);
    std::string list;
    for (const std::string& choice : spec.choices)
        list += (list.empty() ? "" : ", ") + choice;
    return list;
}

}  // namespace

int keysCommand(bool json, std::ostream& out)
{
    if (json) {
        nlohmann::json keys = nlohmann::json::array();
        for (const KeySpec& spec : configSchema()) {
            nlohmann::json key = {{"key", spec.key}, {"type", toString(spec.type)}, {"default", spec.defaultValue},
                                  {"description", spec.description}};
            if (spec.type == KeyType::Integer || spec.type == KeyType::Number)
                key["range"] = {spec.min, spec.max};
            if (!spec.choices.empty())
                key["choices"] = spec.choices;
            if (spec.derived()) {
                key["derived"] = spec.derivedRule;
                key["depends_on"] = spec.dependsOn;
            }
            keys.push_back(std::move(key));
        }
        out << nlohmann::json{{"keys", keys}}.dump(2) << "\n";
        return 0;
    }
    std::size_t width = 0;
    for (const KeySpec& spec : configSchema())
        width = std::max(width, spec.key.size());
    std::string section = "-";
    for (const KeySpec& spec : configSchema()) {
        if (spec.section() != section) {
            section = spec.section();
            out << (section.empty() ? std::string("document") : section) << "\n";
        }
        const bool text = spec.defaultValue.is_string() && !spec.defaultValue.get<std::string>().empty();
        const std::string value = spec.derived() ? spec.derivedRule
                                  : text         ? spec.defaultValue.get<std::string>()
                                                 : spec.defaultValue.dump();
        const std::string range = accepted(spec);
        out << "  " << spec.key << std::string(width - spec.key.size() + 2, ' ') << toString(spec.type) << ", default "
            << value << (range.empty() ? "" : " (" + range + ")") << ": " << spec.description << "\n";
    }
    out << "\nAn absent key reads as its default; `widelab-cli check CONFIG` prints a document resolved.\n";
    return 0;
}

}  // namespace widelab
