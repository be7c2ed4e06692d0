// defines: BleuArguments, bleuCommand: `widelab-cli bleu`, corpus BLEU and chrF
// of two line-aligned files as sacreBLEU's command prints them, with its
// defaults (measure/Bleu.h)
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace widelab {

struct BleuArguments {
    std::vector<std::string> positional;
    std::string hypotheses;  // --hyp FILE
    std::string references;  // --ref FILE
    int width = 2;           // --width N: decimals of the scores, as sacreBLEU's -w
    bool json = false;
};

// The BLEU line and the chrF line on `out` (or one JSON object). Throws
// RunUsageError for wrong arguments, FileError for a file that cannot be read,
// BleuInputError for files that are not line-aligned or not UTF-8.
int bleuCommand(const BleuArguments& a, std::ostream& out);

}  // namespace widelab
