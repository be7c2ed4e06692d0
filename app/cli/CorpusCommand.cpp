#include "CorpusCommand.h"

#include "RunCommands.h"
#include "data/BibleCorpus.h"
#include "run/Checkpoint.h"
#include "runtime/SystemError.h"
#include "vocab/Format.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
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

int listBibles(std::ostream& out)
{
    for (const BibleModule& module : bibleModules())
        out << module.name << "\t" << module.module << "\t" << module.language << "\t" << module.title
            << " (Debian: " << module.package << ")\n";
    out << "mod2imp (libsword-utils) reads them; to install all: " << bibleInstallCommand() << "\n";
    return 0;
}

}  // namespace

int corpusCommand(const CorpusArguments& a, std::ostream& out, std::ostream& err)
{
    (void)err;
    if (a.positional.empty())
        throw RunUsageError("which corpus? The one corpus is bible");
    if (a.positional.front() != "bible")
        throw RunUsageError("unknown corpus \"" + a.positional.front() + "\": the one corpus is bible");
    if (a.positional.size() > 1)
        throw RunUsageError("corpus bible takes options only, not \"" + a.positional[1] + "\"");
    if (a.list) {
        if (!a.from.empty() || !a.to.empty() || !a.out.empty() || a.keys)
            throw RunUsageError("--list takes no other option");
        return listBibles(out);
    }
    const BibleModule& source = bibleOption("--from", a.from);
    const BibleModule& target = bibleOption("--to", a.to);
    if (source.name == target.name)
        throw RunUsageError("--from and --to are both " + source.name + ": a parallel corpus needs two Bibles");
    if (a.out.empty())
        throw RunUsageError("--out is missing: the TSV file to write");
    // Refused before the modules are read: a folder that is not there or not writable.
    const std::filesystem::path file(a.out);
    const std::filesystem::path folder = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec))
        throw RunUsageError("--out: " + a.out + ": the folder " + folder.string() + " does not exist");
    if (std::filesystem::is_directory(file, ec))
        throw RunUsageError("--out: " + a.out + " is a folder, not a file");
    if (access(folder.c_str(), W_OK) != 0)
        throw RunUsageError("--out: " + a.out + ": cannot write in " + folder.string() + ": " + systemReason(errno));

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
    try {
        writeFileAtomically(file, text);
    } catch (const CheckpointError& error) {
        throw std::runtime_error(std::string("--out: ") + error.what());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char took[32];
    std::snprintf(took, sizeof took, "%.1f s", seconds);
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

}  // namespace widelab
