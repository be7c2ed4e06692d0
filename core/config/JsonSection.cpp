#include "JsonSection.h"

#include "vocab/ByteText.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace widelab {
namespace {

std::size_t editDistance(const std::string& a, const std::string& b)
{
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
            diagonal = above;
        }
    }
    return row[b.size()];
}

bool isSubsequence(const std::string& short_, const std::string& long_)
{
    std::size_t at = 0;
    for (const char c : long_)
        if (at < short_.size() && short_[at] == c)
            ++at;
    return at == short_.size();
}

std::string describe(const nlohmann::json& value)
{
    std::string text = value.dump();
    if (text.size() > 40)
        text = text.substr(0, 37) + "...";
    return text;
}

template <typename T>
std::string numberText(T value)
{
    std::ostringstream out;
    out << value;
    return out.str();
}

}  // namespace

std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates)
{
    // An abbreviation ("share_attn", "head_dm") has all its letters, in order, in
    // the key it stands for; among such keys the nearest wins. Otherwise the
    // nearest key within a small edit distance, if any.
    std::string best;
    std::size_t bestDistance = std::max<std::size_t>(2, word.size() / 3) + 1;
    bool bestAbbreviates = false;
    for (const auto& candidate : candidates) {
        const bool abbreviates = word.size() >= 3 && isSubsequence(word, candidate);
        const std::size_t distance = editDistance(word, candidate);
        if ((abbreviates && !bestAbbreviates) || (abbreviates == bestAbbreviates && distance < bestDistance)) {
            best = candidate;
            bestDistance = distance;
            bestAbbreviates = abbreviates;
        }
    }
    return best;
}

JsonSection::JsonSection(const nlohmann::json& object, std::string path, std::vector<ConfigIssue>& issues)
    : m_object(object), m_path(std::move(path)), m_issues(issues)
{
    if (!m_object.is_object()) {
        m_valid = false;
        m_issues.push_back({m_path, "expected an object, got " + describe(m_object)});
    }
}

std::string JsonSection::keyPath(const std::string& key) const
{
    return m_path.empty() ? key : m_path + "." + key;
}

void JsonSection::addIssue(const std::string& key, std::string reason)
{
    m_issues.push_back({keyPath(key), std::move(reason)});
}

bool JsonSection::has(const std::string& key) const
{
    return m_valid && m_object.contains(key);
}

const nlohmann::json* JsonSection::find(const std::string& key, const std::string& defaultText)
{
    m_known.push_back(key);
    if (!has(key))
        return nullptr;
    const nlohmann::json& value = m_object.at(key);
    if (value.is_null()) {
        // null is not "the default": a document that says null for a key most
        // likely meant something, and silently training with the default would hide it.
        addIssue(key, "null is not allowed; remove the key to use the default"
                          + (defaultText.empty() ? std::string() : " " + defaultText));
        return nullptr;
    }
    return &value;
}

void JsonSection::read(const std::string& key, std::int64_t& out, std::int64_t min, std::int64_t max)
{
    const nlohmann::json* value = find(key, numberText(out));
    if (!value)
        return;
    std::int64_t number = 0;
    if (value->is_number_unsigned() && value->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
        // Past 2^63 - 1 an int64 would wrap to a negative number: say what the document holds.
        addIssue(key, value->dump() + " is outside the allowed range " + numberText(min) + ".." + numberText(max));
        return;
    }
    if (value->is_number_integer()) {
        number = value->get<std::int64_t>();
    } else if (value->is_number_float() && std::nearbyint(value->get<double>()) == value->get<double>()
               && std::abs(value->get<double>()) < 9.0e15) {
        number = static_cast<std::int64_t>(value->get<double>());
    } else {
        addIssue(key, "expected an integer, got " + describe(*value));
        return;
    }
    if (number < min || number > max) {
        addIssue(key, numberText(number) + " is outside the allowed range " + numberText(min) + ".."
                          + numberText(max));
        return;
    }
    out = number;
}

void JsonSection::read(const KeySpec& spec, std::int64_t& out)
{
    read(spec.name(), out, static_cast<std::int64_t>(spec.min), static_cast<std::int64_t>(spec.max));
}

void JsonSection::read(const KeySpec& spec, double& out) { read(spec.name(), out, spec.min, spec.max); }

void JsonSection::read(const std::string& key, double& out, double min, double max)
{
    const nlohmann::json* value = find(key, numberText(out));
    if (!value)
        return;
    if (!value->is_number()) {
        addIssue(key, "expected a number, got " + describe(*value));
        return;
    }
    const double number = value->get<double>();
    if (!(number >= min && number <= max)) {
        addIssue(key, numberText(number) + " is outside the allowed range " + numberText(min) + ".."
                          + numberText(max));
        return;
    }
    out = number;
}

void JsonSection::read(const std::string& key, bool& out)
{
    const nlohmann::json* value = find(key, out ? "true" : "false");
    if (!value)
        return;
    if (!value->is_boolean()) {
        addIssue(key, "expected true or false, got " + describe(*value));
        return;
    }
    out = value->get<bool>();
}

void JsonSection::read(const std::string& key, std::string& out)
{
    read(key, out, out.empty() ? std::string() : nlohmann::json(out).dump());
}

void JsonSection::read(const std::string& key, std::string& out, const std::string& defaultText)
{
    const nlohmann::json* value = find(key, defaultText);
    if (!value)
        return;
    if (!value->is_string()) {
        addIssue(key, "expected a string, got " + describe(*value));
        return;
    }
    out = value->get<std::string>();
}

void JsonSection::read(const std::string& key, std::vector<std::string>& out) { readStrings(key, out, false); }

void JsonSection::readByteStrings(const std::string& key, std::vector<std::string>& out)
{
    readStrings(key, out, true);
}

void JsonSection::readStrings(const std::string& key, std::vector<std::string>& out, bool bytes)
{
    const nlohmann::json* value = find(key, out.empty() ? std::string() : nlohmann::json(out).dump());
    if (!value)
        return;
    if (!value->is_array()) {
        addIssue(key, "expected an array of strings, got " + describe(*value));
        return;
    }
    std::vector<std::string> strings;
    for (std::size_t i = 0; i < value->size(); ++i) {
        const nlohmann::json& item = (*value)[i];
        std::optional<std::string> text = bytes ? bytesFromJson(item)
                                          : item.is_string() ? std::optional<std::string>(item.get<std::string>())
                                                             : std::nullopt;
        if (!text) {
            addIssue(key, "item " + std::to_string(i) + ": expected a string"
                              + (bytes ? std::string(" or {\"hex\": \"...\"} (two hex digits a byte)") : "")
                              + ", got " + describe(item));
            return;
        }
        strings.push_back(std::move(*text));
    }
    out = std::move(strings);
}

std::optional<std::size_t> JsonSection::choiceIndex(const std::string& key, const std::vector<std::string>& names,
                                                    std::size_t current)
{
    std::string text;
    const std::size_t before = m_issues.size();
    read(key, text, current < names.size() ? "\"" + names[current] + "\"" : std::string());
    if (m_issues.size() != before || !has(key))
        return std::nullopt;
    const auto it = std::find(names.begin(), names.end(), text);
    if (it != names.end())
        return static_cast<std::size_t>(it - names.begin());
    std::string allowed;
    for (const auto& name : names)
        allowed += (allowed.empty() ? "" : ", ") + name;
    std::string reason = "\"" + text + "\" is not one of " + allowed;
    if (const std::string guess = closestMatch(text, names); !guess.empty())
        reason += " (did you mean \"" + guess + "\"?)";
    addIssue(key, reason);
    return std::nullopt;
}

void JsonSection::rejectUnknownKeys(const std::vector<std::string>& alsoAllowed)
{
    if (!m_valid)
        return;
    std::vector<std::string> known = m_known;
    known.insert(known.end(), alsoAllowed.begin(), alsoAllowed.end());
    for (const auto& item : m_object.items()) {
        if (std::find(known.begin(), known.end(), item.key()) != known.end())
            continue;
        std::string reason = "unknown key";
        if (const std::string guess = closestMatch(item.key(), known); !guess.empty())
            reason += " (did you mean \"" + guess + "\"?)";
        addIssue(item.key(), reason);
    }
}

}  // namespace widelab
