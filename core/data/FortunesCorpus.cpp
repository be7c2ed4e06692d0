#include "FortunesCorpus.h"

#include "Tokenizer.h"  // DataError

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <system_error>

namespace widelab {
namespace {

std::string missingFolder(const std::filesystem::path& folder, const std::string& why)
{
    std::string text = folder.string() + ": " + why;
    if (folder == std::filesystem::path(kFortunesFolder))
        text += "; install Debian's packages: sudo apt install " + std::string(kFortunesPackages)
                + " (packaging/install-deps.sh does)";
    return text;
}

// One entry on one line: overstrikes resolved, line breaks and tabs as spaces, runs of spaces one, trimmed.
std::string oneLine(const std::string& entry)
{
    std::string struck;
    for (const char c : entry) {
        if (c == '\b') {
            if (!struck.empty())
                struck.pop_back();  // "_\bx" underlines x, "x\bx" emboldens it: the last character stays
        } else {
            struck += c;
        }
    }
    std::string line;
    for (const char c : struck) {
        const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (space) {
            if (!line.empty() && line.back() != ' ')
                line += ' ';
        } else {
            line += c;
        }
    }
    if (!line.empty() && line.back() == ' ')
        line.pop_back();
    return line;
}

}  // namespace

const std::vector<std::string>& defaultFortuneCategories()
{
    static const std::vector<std::string> names{"computers", "definitions", "politics", "science", "songs-poems", "work"};
    return names;
}

std::vector<FortuneCategory> fortuneCategories(const std::filesystem::path& folder)
{
    std::error_code error;
    if (!std::filesystem::is_directory(folder, error))
        throw DataError(missingFolder(folder, "no such folder"));
    std::vector<FortuneCategory> categories;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
        const std::filesystem::path& file = entry.path();
        std::error_code ignored;  // a file that vanished or a missing index: not a category
        if (file.has_extension() || !entry.is_regular_file(ignored))
            continue;
        if (std::filesystem::is_regular_file(file.string() + ".dat", ignored))
            categories.push_back({file.filename().string(), file});
    }
    if (error)
        throw DataError(folder.string() + ": cannot be listed: " + error.message());
    if (categories.empty())
        throw DataError(missingFolder(folder, "holds no fortune files (a file with its strfile index FILE.dat)"));
    std::sort(categories.begin(), categories.end(),
              [](const FortuneCategory& a, const FortuneCategory& b) { return a.name < b.name; });
    return categories;
}

std::vector<std::string> readFortunes(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw DataError(file.string() + ": cannot be read");
    std::vector<std::string> fortunes;
    std::string entry, line;
    auto finish = [&] {
        std::string text = oneLine(entry);
        if (!text.empty())
            fortunes.push_back(std::move(text));
        entry.clear();
    };
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line == "%")
            finish();
        else
            entry += line + '\n';
    }
    if (in.bad())
        throw DataError(file.string() + ": cannot be read to the end");
    finish();
    return fortunes;
}

FortunesTable fortunesTable(const std::vector<std::string>& categories, const std::filesystem::path& folder)
{
    const std::vector<FortuneCategory> known = fortuneCategories(folder);
    FortunesTable table;
    std::set<std::string> seen;
    for (const std::string& name : categories) {
        const auto found = std::find_if(known.begin(), known.end(), [&](const FortuneCategory& c) { return c.name == name; });
        if (found == known.end()) {
            std::string names;
            for (const FortuneCategory& c : known)
                names += (names.empty() ? "" : ", ") + c.name;
            throw DataError("no fortune category \"" + name + "\" in " + folder.string() + " (it has: " + names + ")");
        }
        if (!seen.insert(name).second)
            throw DataError("the fortune category \"" + name + "\" is given twice");
        const std::vector<std::string> fortunes = readFortunes(found->file);
        for (const std::string& fortune : fortunes)
            table.text += name + '\t' + fortune + '\n';
        table.perCategory.push_back(static_cast<std::int64_t>(fortunes.size()));
    }
    return table;
}

}  // namespace widelab
