// The registration of every task kind, and what every kind's data is checked
// for. A new task kind is one line in taskKinds().
#include "TaskData.h"
#include "TaskKinds.h"

#include "config/ConfigSchema.h"
#include "run/RunDirectory.h"
#include "run/RunLayout.h"

#include <stdexcept>

namespace widelab {

const std::vector<const TaskSpec*>& taskKinds()
{
    static const std::vector<const TaskSpec*> all = {
        &listOpsTask(),
        &classificationTask(),
        &languageModelTask(),
        &imageFolderTask(),
        &cifar10Task(),
        &shapesTask(),
        &translationTask(),
        &fashionMnistTask(),
        &maskedLanguageModelTask(),
        &pairClassificationTask(),
    };
    return all;
}

const TaskSpec& findTask(TaskKind kind)
{
    for (const TaskSpec* spec : taskKinds())
        if (spec->kind == kind)
            return *spec;
    throw std::invalid_argument("task kind " + std::to_string(static_cast<int>(kind)) + " has no registered task");
}

TaskData prepareTaskData(const TaskSetup& setup)
{
    const RunDocument& run = setup.run;
    TaskData data = findTask(run.task.kind).prepare(setup);
    if (data.tokenizer.vocabSize() > run.model.vocabSize && !run.model.imageInput())
        throw ConfigError({{"model.vocab_size", std::to_string(run.model.vocabSize) + " is smaller than the "
                                                    + toString(data.tokenizer.kind()) + " tokenizer's vocabulary ("
                                                    + std::to_string(data.tokenizer.vocabSize())
                                                    + " tokens): it needs a vocab_size of at least "
                                                    + std::to_string(data.tokenizer.vocabSize())}});
    const std::string where = run.task.path.empty() ? std::string("the data") : run.task.path;
    if (data.train->size() == 0)
        throw DataError(where + ": the training split is empty: too few examples for the split fractions");
    if (data.validation->size() == 0)
        throw DataError(where + ": the validation split is empty: raise task.validation_fraction, or give more data "
                                "(a language model needs sequence_length + 1 tokens per example)");
    return data;
}

Tokenizer textTokenizer(const TaskSetup& setup, const std::function<void(VocabularyBuilder&)>& streamTexts)
{
    const TaskConfig& task = setup.run.task;
    if (setup.resume && std::filesystem::exists(runlayout::tokenizerFile(setup.directory)))
        return readRunTokenizer(setup.directory);
    if (!setup.tokenizerFrom.empty()) {
        Tokenizer pretrained = readRunTokenizer(setup.tokenizerFrom);
        const std::string& wanted = keySpec("task.tokenizer").choices.at(static_cast<std::size_t>(task.tokenizer));
        if (toString(pretrained.kind()) != wanted)
            throw ConfigError({{"task.tokenizer", "\"" + wanted + "\", but train.init_from's run "
                                                      + setup.tokenizerFrom.string() + " read its text with a \""
                                                      + toString(pretrained.kind())
                                                      + "\" tokenizer, which a model started from it keeps"}});
        return pretrained;
    }
    if (task.tokenizer == TokenizerChoice::Byte)
        return Tokenizer::bytes();
    if (task.tokenizer == TokenizerChoice::Bpe) {
        VocabularyBuilder builder(TokenizerKind::Bpe);
        streamTexts(builder);
        return builder.buildBpe(task.bpeMerges);
    }
    VocabularyBuilder builder(task.tokenizer == TokenizerChoice::Word ? TokenizerKind::Word : TokenizerKind::Character);
    streamTexts(builder);
    return builder.build(task.vocabLimit);
}

}  // namespace widelab
