// defines: fortuneCategories, readFortunes, fortunesTable: short human-written texts in about forty categories,
// from Debian's fortunes package (/usr/share/games/fortunes), as a classification file (label TAB text)
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

inline constexpr const char* kFortunesFolder = "/usr/share/games/fortunes";
inline constexpr const char* kFortunesPackages = "fortunes fortunes-min";
// What `widelab-cli corpus fortunes` takes without --categories: six large categories of unlike subjects
// (computers, definitions, politics, science, songs-poems, work: about 4,800 texts).
const std::vector<std::string>& defaultFortuneCategories();

struct FortuneCategory {
    std::string name;             // the file's name: "science"
    std::filesystem::path file;
};

// The categories of a fortunes folder, by name: every file beside which strfile's index NAME.dat lies.
// DataError (data/Tokenizer.h) naming the folder, and for Debian's folder the packages to install, when it is
// missing or holds none.
std::vector<FortuneCategory> fortuneCategories(const std::filesystem::path& folder = kFortunesFolder);

// The texts of one fortune file: the entries between lines holding only "%", each on one line (its line breaks and
// tabs become spaces, runs of spaces one, a character struck over by a backspace the character alone), empty
// entries skipped, in file order. DataError naming the file when it cannot be read.
std::vector<std::string> readFortunes(const std::filesystem::path& file);

// The classification file of `categories` (names of fortuneCategories(folder)): a line "category TAB text" per
// fortune, the categories in the order given, each one's fortunes in file order. DataError naming an unknown
// category (and the known ones) or a category given twice.
struct FortunesTable {
    std::string text;                     // the TSV
    std::vector<std::int64_t> perCategory;  // fortunes written, in the order of `categories`
};
FortunesTable fortunesTable(const std::vector<std::string>& categories,
                            const std::filesystem::path& folder = kFortunesFolder);

}  // namespace widelab
