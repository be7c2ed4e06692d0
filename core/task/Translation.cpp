// Translation: pairs of texts (data/TranslationPairs.h), a joint byte-pair
// vocabulary learned from the training pairs, and the Multi-Path paper's length filter.
#include "TaskKinds.h"

#include "data/TranslationPairs.h"

namespace widelab {

namespace {

TaskData prepareTranslation(const TaskSetup& setup)
{
    const TaskConfig& task = setup.run.task;
    const TranslationPairs pairs({task.path, task.targetPath}, {task.validationFraction, task.testFraction},
                                 static_cast<std::uint64_t>(task.seed), task.skipBadInputs, setup.warn);
    TaskData data;
    data.tokenizer = textTokenizer(setup, [&](VocabularyBuilder& builder) { pairs.addTrainingTexts(builder); });
    if (!data.tokenizer.endId())
        throw ConfigError(
            {{"task.tokenizer", std::string("translation needs \"bpe\", whose <s> and </s> start and end a target")}});
    for (const Split split : {Split::Train, Split::Validation, Split::Test}) {
        std::int64_t tooLong = 0;
        std::unique_ptr<Dataset> dataset = pairs.dataset(split, data.tokenizer, task.maxSubwords, &tooLong);
        if (tooLong > 0 && setup.warn)
            setup.warn("left out " + std::to_string(tooLong) + " of the " + std::to_string(pairs.pairs(split)) + " "
                       + toString(split) + " pairs: a side longer than task.max_subwords ("
                       + std::to_string(task.maxSubwords) + " subword units)");
        if (split != Split::Test && dataset->size() == 0 && tooLong > 0)
            throw DataError(task.path + ": every " + toString(split) + " pair has a side longer than "
                            "task.max_subwords (" + std::to_string(task.maxSubwords) + " subword units)");
        (split == Split::Train ? data.train : split == Split::Validation ? data.validation : data.test) =
            std::move(dataset);
    }
    return data;
}

}  // namespace

const TaskSpec& translationTask()
{
    static const TaskSpec spec{TaskKind::Translation, prepareTranslation};
    return spec;
}

}  // namespace widelab
