// defines: TranslateArguments, translateCommand: `widelab-cli translate`, a
// translation run's translations of a text or of a file's lines, by beam search
// (the Multi-Path paper's beam 4 and length penalty 0.6 by default) or greedily
#pragma once

#include "model/PaperSearch.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace widelab {

struct TranslateArguments {
    std::vector<std::string> positional;  // RUN_DIR
    std::string text;                     // --text "...": one source
    std::string file;                     // --file FILE: one source a line
    std::string checkpoint = "latest";    // --checkpoint latest|best|FILE
    std::int64_t batch = 32;              // --batch N: sources decoded together
    std::int64_t beam = kPaperBeamSize;   // --beam N: beam search's hypotheses a source; 1: greedy
    double lengthPenalty = kPaperLengthPenalty;  // --length-penalty A: alpha of ((5 + length) / 6)^alpha
    bool json = false;                    // one JSON object a source
};

// Each translation on a line of `out`, in the order of the sources (an empty
// source line gives an empty line); warnings (a source cut to the model's
// length, checkpoints passed over) on `err`. Throws RunUsageError for wrong
// arguments or a run that does not translate, FileError or BleuInputError for
// a file that cannot be read or is not UTF-8.
int translateCommand(const TranslateArguments& a, std::ostream& out, std::ostream& err);

}  // namespace widelab
