#include "JsonText.h"

#include <fstream>
#include <sstream>
#include <unordered_set>
#include <vector>

namespace widelab {
namespace {

std::string prefixed(const std::string& origin, const std::string& reason)
{
    return origin.empty() ? reason : origin + ": " + reason;
}

std::string tooDeep() { return "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels"; }

// The line of the first bracket that opens level kMaxJsonDepth + 1, if any. A
// plain scan (no recursion, nothing built), so that a document of 100000 nested
// arrays is refused before the parser sees it; strings are skipped, escapes and all.
std::optional<std::size_t> lineTooDeep(const std::string& text)
{
    int depth = 0;
    std::size_t line = 1;
    bool inString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n')
            ++line;
        if (inString) {
            if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n')
                ++i;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth)
                return line;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return std::nullopt;
}

struct TooDeep {};

// nlohmann's parser callback: follows the containers being parsed to name each
// key by its dotted path ("model.heads", "train.probes[2]"), and records a key
// seen twice in one object (nlohmann itself keeps the last silently). Also
// refuses depth on its own, should the scan above and the parser ever disagree.
class KeyTracker {
public:
    explicit KeyTracker(std::vector<ConfigIssue>& repeated) : m_repeated(repeated) {}

    bool operator()(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed)
    {
        using Event = nlohmann::json::parse_event_t;
        switch (event) {
        case Event::object_start:
        case Event::array_start: {
            if (depth >= kMaxJsonDepth)
                throw TooDeep{};
            Frame frame;
            frame.object = event == Event::object_start;
            frame.path = m_frames.empty() ? std::string() : childPath(m_frames.back());
            m_frames.push_back(std::move(frame));
            break;
        }
        case Event::key: {
            Frame& frame = m_frames.back();
            frame.key = parsed.get<std::string>();
            if (!frame.keys.insert(frame.key).second)
                m_repeated.push_back({childPath(frame), "repeated key (each key may appear once in an object)"});
            break;
        }
        case Event::object_end:
        case Event::array_end:
            m_frames.pop_back();
            break;
        case Event::value:
            if (!m_frames.empty() && !m_frames.back().object)
                ++m_frames.back().index;
            break;
        }
        return true;
    }

private:
    struct Frame {
        bool object = true;
        std::string path;
        std::string key;          // objects: the key being read
        std::size_t index = 0;    // arrays: the next item's index
        std::unordered_set<std::string> keys;
    };

    // The path of the value about to be read in `frame` (an array counts it).
    static std::string childPath(Frame& frame)
    {
        if (!frame.object)
            return frame.path + "[" + std::to_string(frame.index++) + "]";
        return frame.path.empty() ? frame.key : frame.path + "." + frame.key;
    }

    std::vector<Frame> m_frames;
    std::vector<ConfigIssue>& m_repeated;
};

}  // namespace

nlohmann::json parseJsonText(const std::string& text, const std::string& origin)
{
    if (const auto line = lineTooDeep(text))
        throw ConfigError({{"", prefixed(origin, tooDeep() + " at line " + std::to_string(*line))}});
    std::vector<ConfigIssue> repeated;
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(text, KeyTracker(repeated));
    } catch (const TooDeep&) {
        throw ConfigError({{"", prefixed(origin, tooDeep())}});
    } catch (const nlohmann::json::exception& error) {
        // nlohmann's message carries line and column; drop its "[json.exception...]" prefix.
        std::string message = error.what();
        if (const auto cut = message.find("] "); cut != std::string::npos)
            message = message.substr(cut + 2);
        throw ConfigError({{"", prefixed(origin, "not valid JSON: " + message)}});
    }
    if (!repeated.empty()) {
        if (!origin.empty())
            repeated.insert(repeated.begin(), {"", origin + ": invalid configuration"});
        throw ConfigError(std::move(repeated));
    }
    return json;
}

std::optional<nlohmann::json> tryParseJsonText(const std::string& text, std::string* error)
{
    try {
        return parseJsonText(text, "");
    } catch (const ConfigError& problem) {
        if (error)
            *error = problem.what();
        return std::nullopt;
    }
}

std::string readFileText(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace widelab
