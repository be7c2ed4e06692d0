#include "EvaluationText.h"

#include <cstdio>

namespace widelab {

std::string evaluationText(const EvaluationResult& result)
{
    char part[160];
    std::snprintf(part, sizeof part, "loss %.4f, accuracy %.1f%%", result.loss, 100.0 * result.accuracy);
    std::string text = part;
    if (result.perplexity > 0.0) {
        std::snprintf(part, sizeof part, ", perplexity %.2f", result.perplexity);
        text += part;
    }
    if (result.translated > 0) {
        std::snprintf(part, sizeof part, ", BLEU %.2f, chrF %.2f (%lld sentence%s translated)", result.bleu, result.chrf,
                      static_cast<long long>(result.translated), result.translated == 1 ? "" : "s");
        text += part;
    }
    return text;
}

}  // namespace widelab
