#include "RunNotes.h"

#include "Checkpoint.h"
#include "RunLayout.h"
#include "vocab/JsonText.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace widelab {
namespace {

std::string trimmed(const std::string& text)
{
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return text.substr(first, last - first + 1);
}

// Trimmed, without empty ones and repeats, in order.
std::vector<std::string> cleanTags(const std::vector<std::string>& tags)
{
    std::vector<std::string> clean;
    for (const std::string& tag : tags) {
        std::string t = trimmed(tag);
        if (!t.empty() && std::find(clean.begin(), clean.end(), t) == clean.end())
            clean.push_back(std::move(t));
    }
    return clean;
}

}  // namespace

std::string runName(const RunNotes& notes, const std::filesystem::path& directory)
{
    return notes.name.empty() ? directory.filename().string() : notes.name;
}

std::vector<std::string> parseTags(const std::string& text)
{
    std::vector<std::string> parts;
    std::string::size_type start = 0;
    for (;;) {
        const auto comma = text.find(',', start);
        parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return cleanTags(parts);
}

RunNotes readRunNotes(const std::filesystem::path& directory, std::string* error)
{
    const std::filesystem::path file = runlayout::notesFile(directory);
    std::error_code ignored;
    if (!std::filesystem::exists(file, ignored))
        return {};
    const auto fail = [&](const std::string& reason) {
        if (error)
            *error = file.string() + ": " + reason;
        return RunNotes();
    };
    std::string reason;
    const std::optional<nlohmann::json> json = tryParseJsonText(readFileText(file), &reason);
    if (!json)
        return fail(reason.empty() ? "cannot be read" : reason);
    if (!json->is_object())
        return fail("not a JSON object");
    RunNotes notes;
    for (const auto& [key, into] : {std::pair{"name", &notes.name}, std::pair{"note", &notes.note}}) {
        if (!json->contains(key))
            continue;
        if (!json->at(key).is_string())
            return fail(std::string("\"") + key + "\" is not a string");
        *into = json->at(key).get<std::string>();
    }
    if (json->contains("tags")) {
        const nlohmann::json& tags = json->at("tags");
        if (!tags.is_array() || !std::all_of(tags.begin(), tags.end(), [](const auto& t) { return t.is_string(); }))
            return fail("\"tags\" is not a list of strings");
        notes.tags = cleanTags(tags.get<std::vector<std::string>>());
    }
    notes.name = trimmed(notes.name);
    return notes;
}

void writeRunNotes(const std::filesystem::path& directory, const RunNotes& notes)
{
    const std::filesystem::path file = runlayout::notesFile(directory);
    RunNotes clean{trimmed(notes.name), cleanTags(notes.tags), notes.note};
    if (clean.empty()) {
        std::error_code error;
        std::filesystem::remove(file, error);
        if (error)
            throw CheckpointError(file.string() + ": cannot be removed: " + error.message());
        return;
    }
    nlohmann::json json = nlohmann::json::object();
    if (!clean.name.empty())
        json["name"] = clean.name;
    if (!clean.tags.empty())
        json["tags"] = clean.tags;
    if (!clean.note.empty())
        json["note"] = clean.note;
    writeFileAtomically(file, json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace widelab
