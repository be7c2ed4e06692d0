// defines: CorpusArguments, corpusCommand: `widelab-cli corpus bible`, which writes a
// verse-aligned parallel corpus (source TAB target) from two of Debian's SWORD Bibles
// (core/data/BibleCorpus.h), and `widelab-cli corpus fortunes`, a classification file
// (category TAB text) from Debian's fortunes (core/data/FortunesCorpus.h); each lists
// what it can read
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace widelab {

struct CorpusArguments {
    std::vector<std::string> positional;  // "bible" or "fortunes"
    std::string from;                     // --from NAME
    std::string to;                       // --to NAME
    std::string out;                      // --out FILE.tsv
    bool keys = false;                    // --keys: a third column, the verse ("Genesis 1:1")
    bool list = false;                    // --list
    std::string categories;               // fortunes: --categories A,B,...
};

// The counts and the time taken on `out`. Throws RunUsageError (RunCommands.h) for wrong
// arguments (an unknown Bible's name or fortune category among them), BibleCorpusError when a
// module or mod2imp is missing and DataError when the fortunes are (each message names the
// Debian packages), std::runtime_error when FILE cannot be written.
int corpusCommand(const CorpusArguments& a, std::ostream& out, std::ostream& err);

}  // namespace widelab
