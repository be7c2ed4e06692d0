#include "BleuCommand.h"

#include "RunCommands.h"
#include "measure/Bleu.h"

#include <nlohmann/json.hpp>

namespace widelab {

int bleuCommand(const BleuArguments& a, std::ostream& out)
{
    if (!a.positional.empty() || a.hypotheses.empty() || a.references.empty())
        throw RunUsageError("usage: widelab-cli bleu --hyp FILE --ref FILE [--width N] [--json]");
    const std::vector<std::string> hypotheses = readScoringLines(a.hypotheses);
    const std::vector<std::string> references = readScoringLines(a.references);
    if (hypotheses.size() != references.size())
        throw BleuInputError(a.hypotheses + " has " + std::to_string(hypotheses.size()) + " lines and "
                             + a.references + " has " + std::to_string(references.size())
                             + ": hypotheses and references must be line-aligned, one reference a line");
    if (hypotheses.empty())
        throw BleuInputError(a.hypotheses + " and " + a.references + " have no lines to score");
    const BleuScore bleu = corpusBleu(hypotheses, references);
    const ChrfScore chrf = corpusChrf(hypotheses, references);
    if (a.json) {
        nlohmann::json json = {
            {"lines", hypotheses.size()},
            {"bleu",
             {{"score", bleu.score},
              {"precisions", bleu.precisions},
              {"counts", bleu.correct},
              {"totals", bleu.total},
              {"bp", bleu.brevityPenalty},
              {"ratio", bleu.ratio()},
              {"sys_len", bleu.sysLen},
              {"ref_len", bleu.refLen},
              {"text", formatBleu(bleu, a.width)},
              {"signature", "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp"}}},
            {"chrf",
             {{"score", chrf.score},
              {"hypothesis_ngrams", chrf.hypothesis},
              {"reference_ngrams", chrf.reference},
              {"matched_ngrams", chrf.matched},
              {"text", formatChrf(chrf, a.width)},
              {"signature", "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no"}}},
        };
        out << json.dump(2) << "\n";
        return 0;
    }
    out << formatBleu(bleu, a.width) << "\n" << formatChrf(chrf, a.width) << "\n";
    return 0;
}

}  // namespace widelab
