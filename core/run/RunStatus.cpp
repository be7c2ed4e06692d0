#include "RunStatus.h"

#include "Checkpoint.h"
#include "RunLayout.h"
#include "vocab/JsonText.h"

#include <array>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <utility>

#include <signal.h>
#include <unistd.h>

namespace widelab {
namespace {

constexpr std::array<std::pair<RunState, const char*>, 5> kStates{{{RunState::Training, "training"},
                                                                   {RunState::Paused, "paused"},
                                                                   {RunState::Finished, "finished"},
                                                                   {RunState::Stopped, "stopped"},
                                                                   {RunState::Failed, "failed"}}};

// `key` of `json` as an integer, or the reason it is not one.
std::optional<std::string> readInteger(const nlohmann::json& json, const char* key, std::int64_t& into)
{
    if (!json.contains(key))
        return std::nullopt;  // absent: the default stands
    if (!json[key].is_number_integer())
        return std::string(key) + " is not an integer";
    into = json[key].get<std::int64_t>();
    return std::nullopt;
}

std::optional<std::string> readText(const nlohmann::json& json, const char* key, std::string& into)
{
    if (!json.contains(key))
        return std::nullopt;
    if (!json[key].is_string())
        return std::string(key) + " is not a string";
    into = json[key].get<std::string>();
    return std::nullopt;
}

}  // namespace

std::string toString(RunState state)
{
    for (const auto& [value, name] : kStates)
        if (value == state)
            return name;
    return "training";
}

std::optional<RunState> runStateFromString(const std::string& text)
{
    for (const auto& [value, name] : kStates)
        if (text == name)
            return value;
    return std::nullopt;
}

nlohmann::json toJson(const RunStatus& s)
{
    nlohmann::json json{{"host", s.host},   {"pid", s.pid},         {"state", toString(s.state)},
                        {"step", s.step},   {"total_steps", s.totalSteps}, {"updated", s.updated}};
    if (!s.message.empty())
        json["message"] = s.message;
    return json;
}

std::optional<RunStatus> parseRunStatus(const std::string& text, std::string* error)
{
    auto fail = [&](const std::string& reason) {
        if (error)
            *error = reason;
        return std::nullopt;
    };
    const std::optional<nlohmann::json> parsed = tryParseJsonText(text);
    if (!parsed || !parsed->is_object())
        return fail("not a JSON object");
    const nlohmann::json& json = *parsed;
    if (!json.contains("state") || !json["state"].is_string())
        return fail("state is missing");
    RunStatus status;
    const std::optional<RunState> state = runStateFromString(json["state"].get<std::string>());
    if (!state)
        return fail("state \"" + json["state"].get<std::string>()
                    + "\" is not training, paused, finished, stopped or failed");
    status.state = *state;
    for (const auto& problem : {readText(json, "host", status.host), readInteger(json, "pid", status.pid),
                                readInteger(json, "step", status.step), readInteger(json, "total_steps", status.totalSteps),
                                readInteger(json, "updated", status.updated), readText(json, "message", status.message)})
        if (problem)
            return fail(*problem);
    return status;
}

std::optional<RunStatus> readRunStatus(const std::filesystem::path& directory, std::string* error)
{
    const std::filesystem::path file = runlayout::statusFile(directory);
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::error_code ignored;
        if (error)
            *error = std::filesystem::exists(file, ignored) ? file.string() + ": cannot be read" : std::string();
        return std::nullopt;
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::string reason;
    std::optional<RunStatus> status = parseRunStatus(text.str(), &reason);
    if (!status && error)
        *error = file.string() + ": " + reason;
    return status;
}

void writeRunStatus(const std::filesystem::path& directory, const RunStatus& status)
{
    writeFileAtomically(runlayout::statusFile(directory), toJson(status).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::string localHostName()
{
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0)
        return "localhost";
    return name;
}

bool processExists(std::int64_t pid)
{
    if (pid <= 0)
        return false;
    // EPERM: it exists, as another user's process.
    return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace widelab
