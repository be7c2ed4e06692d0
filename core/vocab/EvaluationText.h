// defines: evaluationText: an evaluation's measures as the log, the terminal and
// `widelab-cli eval` write them
#pragma once

#include "Snapshot.h"

#include <string>

namespace widelab {

// "loss 3.5936, accuracy 32.7%, perplexity 36.36, BLEU 7.51, chrF 25.78 (100
// sentences translated)": perplexity when measured (language and translation
// models), the scores when sentences were translated.
std::string evaluationText(const EvaluationResult& result);

}  // namespace widelab
