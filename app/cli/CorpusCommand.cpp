#include "CorpusCommand.h"

#include "RunCommands.h"
#include "data/BibleCorpus.h"
#include "data/FortunesCorpus.h"
#include "run/Checkpoint.h"
#include "runtime/SystemError.h"
#include "vocab/Format.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <stdexcept>

#include <unistd.h>

namespace widelab {
namespace {

const BibleModule& bibleOption(const std::string& option, const std::string& name)
{
    if (name.empty())
        throw RunUsageError(option + " is missing: the Bible to read (widelab-cli corpus bible --list)");
    try {
        return findBibleModule(name);
    } catch (const BibleCorpusError& error) {
        throw RunUsageError(option + ": " + error.what());
    }
}

// A verse on one line of one column: tabs and line breaks become spaces.
std::string oneField(std::string text)
{
    for (char& c : text)
        if (c == '\t' || c == '\n' || c == '\r')
            c = ' ';
    return text;
}

// --out: a file in a folder that exists and may be written, checked before anything is read.
std::filesystem::path outFile(const std::string& out)
{
    if (out.empty())
        throw RunUsageError("--out is missing: the TSV file to write");
    const std::filesystem::path file(out);
    const std::filesystem::path folder = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec))
        throw RunUsageError("--out: " + out + ": the folder " + folder.string() + " does not exist");
    if (std::filesystem::is_directory(file, ec))
        throw RunUsageError("--out: " + out + " is a folder, not a file");
    if (access(folder.c_str(), W_OK) != 0)
        throw RunUsageError("--out: " + out + ": cannot write in " + folder.string() + ": " + systemReason(errno));
    return file;
}

void writeOut(const std::filesystem::path& file, const std::string& text)
{
    try {
        writeFileAtomically(file, text);
    } catch (const CheckpointError& error) {
        throw std::runtime_error(std::string("--out: ") + error.what());
    }
}

std::string secondsSince(std::chrono::steady_clock::time_point start)
{
    char took[32];
    std::snprintf(took, sizeof took, "%.1f s", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return took;
}

// "a,b,c" -> {"a", "b", "c"}; empty: the default categories.
std::vector<std::string> categoryList(const std::string& text)
{
    if (text.empty())
        return defaultFortuneCategories();
    std::vector<std::string> names;
    std::size_t begin = 0;
    while (begin <= text.size()) {
        const std::size_t end = std::min(text.find(',', begin), text.size());
        const std::string name = text.substr(begin, end - begin);
        if (name.empty())
            throw RunUsageError("--categories: an empty name in \"" + text + "\" (names separated by commas)");
        names.push_back(name);
        begin = end + 1;
    }
    if (names.size() < 2)
        throw RunUsageError("--categories: " + text + " is one category; a classifier needs two or more");
    return names;
}

int fortunesCorpus(const CorpusArguments& a, std::ostream& out)
{
    if (!a.from.empty() || !a.to.empty() || a.keys)
        throw RunUsageError("corpus fortunes takes --out, --categories or --list (--from, --to and --keys are bible's)");
    if (a.list) {
        if (!a.out.empty() || !a.categories.empty())
            throw RunUsageError("--list takes no other option");
        for (const FortuneCategory& category : fortuneCategories())
            out << category.name << "\t" << groupDigits(static_cast<std::int64_t>(readFortunes(category.file).size()))
                << "\n";
        return 0;
    }
    const std::vector<std::string> categories = categoryList(a.categories);
    const std::filesystem::path file = outFile(a.out);
    const auto start = std::chrono::steady_clock::now();
    const FortunesTable table = fortunesTable(categories);  // DataError: the package missing, an unknown category
    writeOut(file, table.text);
    std::int64_t total = 0;
    std::string counts;
    for (std::size_t i = 0; i < categories.size(); ++i) {
        total += table.perCategory[i];
        counts += (i ? ", " : "") + categories[i] + " " + groupDigits(table.perCategory[i]);
    }
    out << "wrote " << a.out << ": " << groupDigits(total) << " fortunes (category, text) in "
        << categories.size() << " categories: " << counts << "; " << secondsSince(start) << "\n";
    return 0;
}

// One Bible's chapters, each labelled by the part of the Bible its book belongs to.
// A Bible's chapters, one a line: labelled by the section of its book (a
// classification file), or the text alone (for a language model's pretraining).
int bibleChaptersCorpus(const CorpusArguments& a, std::ostream& out, const char* corpus, bool labelled)
{
    if (a.list || a.keys || !a.to.empty() || !a.categories.empty())
        throw RunUsageError(std::string("corpus ") + corpus + " takes --from and --out only (widelab-cli corpus bible "
                                                              "--list lists the Bibles)");
    const BibleModule& bible = bibleOption("--from", a.from);
    const std::filesystem::path file = outFile(a.out);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<BibleChapter> chapters = bibleChapters(readBibleModule(bible));
    std::string text;
    std::map<std::string, std::int64_t> perSection;
    for (const BibleChapter& chapter : chapters) {
        text += (labelled ? chapter.section + '\t' : std::string()) + oneField(chapter.text) + '\n';
        ++perSection[chapter.section];
    }
    writeOut(file, text);
    out << "wrote " << a.out << ": " << groupDigits(static_cast<std::int64_t>(chapters.size())) << " chapters of "
        << bible.name << " (" << bible.module << ")";
    if (labelled) {
        std::string counts;
        for (const std::string& section : bibleSections())
            counts += (counts.empty() ? "" : ", ") + section + " " + groupDigits(perSection[section]);
        out << " as (section, text): " << counts;
    } else {
        out << ", one a line, " << formatBytes(static_cast<double>(text.size()));
    }
    out << "; " << secondsSince(start) << "\n";
    return 0;
}

int bibleSectionsCorpus(const CorpusArguments& a, std::ostream& out)
{
    return bibleChaptersCorpus(a, out, "bible-sections", true);
}

int bibleTextCorpus(const CorpusArguments& a, std::ostream& out) { return bibleChaptersCorpus(a, out, "bible-text", false); }

// Each verse of a Bible beside another, of its book or not; with --to, beside a verse of
// another Bible, the same verse or not: a pair task.
int biblePairsCorpus(const CorpusArguments& a, std::ostream& out)
{
    if (a.list || a.keys || !a.categories.empty())
        throw RunUsageError("corpus bible-pairs takes --from, --to and --out only (widelab-cli corpus bible --list "
                            "lists the Bibles)");
    const BibleModule& bible = bibleOption("--from", a.from);
    const BibleModule* other = a.to.empty() ? nullptr : &bibleOption("--to", a.to);
    if (other && other->name == bible.name)
        throw RunUsageError("--from and --to are both " + bible.name + ": the same verse in two Bibles needs two");
    const std::filesystem::path file = outFile(a.out);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<VerseCouple> couples =
        other ? translationCouples(alignVerses(readBibleModule(bible), readBibleModule(*other)).pairs, 0)
              : sameBookCouples(readBibleModule(bible), 0);
    std::string text;
    std::int64_t same = 0;
    for (const VerseCouple& couple : couples) {
        text += (couple.same ? "same\t" : "other\t") + oneField(couple.first) + '\t' + oneField(couple.second) + '\n';
        same += couple.same ? 1 : 0;
    }
    writeOut(file, text);
    out << "wrote " << a.out << ": " << groupDigits(static_cast<std::int64_t>(couples.size())) << " pairs of verses of "
        << bible.name << " (" << bible.module << ")"
        << (other ? " and " + other->name + " (" + other->module + ")" : std::string()) << " as (same|other, verse, verse): "
        << (other ? "the same verse " : "the same book ") << groupDigits(same) << ", other "
        << groupDigits(static_cast<std::int64_t>(couples.size()) - same) << "; " << secondsSince(start) << "\n";
    return 0;
}

int listBibles(std::ostream& out)
{
    for (const BibleModule& module : bibleModules())
        out << module.name << "\t" << module.module << "\t" << module.language << "\t" << module.title
            << " (Debian: " << module.package << ")\n";
    out << "mod2imp (libsword-utils) reads them; to install all: " << bibleInstallCommand() << "\n";
    return 0;
}

// Two Bibles' verses paired: a parallel corpus for translation.
int bibleCorpus(const CorpusArguments& a, std::ostream& out)
{
    if (!a.categories.empty())
        throw RunUsageError("--categories is fortunes' option, not bible's");
    if (a.list) {
        if (!a.from.empty() || !a.to.empty() || !a.out.empty() || a.keys)
            throw RunUsageError("--list takes no other option");
        return listBibles(out);
    }
    const BibleModule& source = bibleOption("--from", a.from);
    const BibleModule& target = bibleOption("--to", a.to);
    if (source.name == target.name)
        throw RunUsageError("--from and --to are both " + source.name + ": a parallel corpus needs two Bibles");
    // Refused before the modules are read: a folder that is not there or not writable.
    const std::filesystem::path file = outFile(a.out);

    const auto start = std::chrono::steady_clock::now();
    const std::vector<Verse> sourceVerses = readBibleModule(source);
    const std::vector<Verse> targetVerses = readBibleModule(target);
    const AlignedVerses aligned = alignVerses(sourceVerses, targetVerses);
    std::string text;
    for (const VersePair& pair : aligned.pairs) {
        text += oneField(pair.source);
        text += '\t';
        text += oneField(pair.target);
        if (a.keys) {
            text += '\t';
            text += pair.key;
        }
        text += '\n';
    }
    writeOut(file, text);
    const std::string took = secondsSince(start);
    out << "read " << source.name << " (" << source.module << "): " << groupDigits(static_cast<std::int64_t>(sourceVerses.size()))
        << " verses; " << target.name << " (" << target.module
        << "): " << groupDigits(static_cast<std::int64_t>(targetVerses.size())) << " verses\n"
        << "wrote " << a.out << ": " << groupDigits(static_cast<std::int64_t>(aligned.pairs.size())) << " pairs "
        << source.name << " -> " << target.name << (a.keys ? " (source, target, verse)" : " (source, target)")
        << "; " << groupDigits(static_cast<std::int64_t>(aligned.onlySource)) << " verses only in " << source.name << ", "
        << groupDigits(static_cast<std::int64_t>(aligned.onlyTarget)) << " only in " << target.name << ", "
        << groupDigits(static_cast<std::int64_t>(aligned.emptySkipped)) << " skipped as empty on a side; " << took
        << "\n";
    return 0;
}


// The corpora, each its name, what it writes (for the messages) and its command.
struct Corpus {
    const char* name;
    const char* what;
    int (*write)(const CorpusArguments&, std::ostream&);
};

constexpr Corpus kCorpora[] = {
    {"bible", "translation pairs", bibleCorpus},
    {"bible-sections", "a Bible's chapters by section", bibleSectionsCorpus},
    {"bible-text", "a Bible's chapters as plain text", bibleTextCorpus},
    {"bible-pairs", "pairs of verses, of one book or two", biblePairsCorpus},
    {"fortunes", "texts in categories", fortunesCorpus},
};

}  // namespace

int corpusCommand(const CorpusArguments& a, std::ostream& out, std::ostream& err)
{
    (void)err;
    std::string corpora;  // "bible (translation pairs), ... or fortunes (texts in categories)"
    for (std::size_t i = 0; i < std::size(kCorpora); ++i)
        corpora += std::string(i == 0 ? "" : i + 1 == std::size(kCorpora) ? " or " : ", ") + kCorpora[i].name + " ("
                   + kCorpora[i].what + ")";
    if (a.positional.empty())
        throw RunUsageError("which corpus? " + corpora);
    const std::string& name = a.positional.front();
    const auto corpus = std::find_if(std::begin(kCorpora), std::end(kCorpora),
                                     [&](const Corpus& c) { return name == c.name; });
    if (corpus == std::end(kCorpora))
        throw RunUsageError("unknown corpus \"" + name + "\": " + corpora);
    if (a.positional.size() > 1)
        throw RunUsageError("corpus " + name + " takes options only, not \"" + a.positional[1] + "\"");
    return corpus->write(a, out);
}

}  // namespace widelab
