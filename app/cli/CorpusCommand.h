// defines: CorpusArguments, corpusCommand: `widelab-cli corpus bible`, which writes a
// verse-aligned parallel corpus (source TAB target) from two of Debian's SWORD Bibles
// (core/data/BibleCorpus.h), and lists the Bibles it knows
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace widelab {

struct CorpusArguments {
    std::vector<std::string> positional;  // "bible"
    std::string from;                     // --from NAME
    std::string to;                       // --to NAME
    std::string out;                      // --out FILE.tsv
    bool keys = false;                    // --keys: a third column, the verse ("Genesis 1:1")
    bool list = false;                    // --list
};

// The counts and the time taken on `out`. Throws RunUsageError (RunCommands.h) for wrong
// arguments (an unknown Bible's name among them), BibleCorpusError when a module or mod2imp
// is missing (the message names the Debian packages), CheckpointError when FILE cannot be
// written.
int corpusCommand(const CorpusArguments& a, std::ostream& out, std::ostream& err);

}  // namespace widelab
