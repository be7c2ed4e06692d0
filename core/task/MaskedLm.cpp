// Masked language modelling (BERT's and ALBERT's pretraining) on any text file:
// the language model's token stream cut into sequences, of which each batch
// hides 15% of the tokens (data/Batch.h: TokenMasking) for the model to restore.
#include "TaskKinds.h"

#include "data/Bpe.h"

namespace widelab {

namespace {

TaskData prepareMaskedLanguageModel(const TaskSetup& setup)
{
    // A language model's sequences of the text (their next-token targets go unused).
    TaskData data = languageModelTask().prepare(setup);
    // A random replacement is any of the tokenizer's tokens but padding, unknown, <s> and </s>.
    const std::int64_t vocabulary = data.tokenizer.vocabSize();
    if (setup.run.model.vocabSize <= maskTokenId(data.tokenizer))
        throw ConfigError({{"model.vocab_size", std::to_string(setup.run.model.vocabSize) + " leaves no id for the mask "
                                                    "token after the " + toString(data.tokenizer.kind())
                                                    + " tokenizer's " + std::to_string(vocabulary)
                                                    + " tokens: masked_lm needs at least "
                                                    + std::to_string(maskTokenId(data.tokenizer) + 1)}});
    TokenMasking masking;
    masking.maskId = maskTokenId(data.tokenizer);
    masking.randomFirst = data.tokenizer.startId() ? bpe::kFirstByte : Tokenizer::kFirstToken;
    masking.randomEnd = vocabulary;
    data.masking = masking;
    return data;
}

}  // namespace

const TaskSpec& maskedLanguageModelTask()
{
    static const TaskSpec spec{TaskKind::MaskedLm, prepareMaskedLanguageModel};
    return spec;
}

}  // namespace widelab
