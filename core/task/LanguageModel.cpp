// Language modelling on any text file, tokenized once into the run's cache
// (data/Datasets.h: TextFile).
#include "TaskKinds.h"

#include "run/RunLayout.h"

namespace widelab {

namespace {

TaskData prepareLanguageModel(const TaskSetup& setup)
{
    const TaskConfig& task = setup.run.task;
    const TextFile file(task.path, runlayout::cacheDirectory(setup.directory), setup.progress);
    TaskData data;
    data.tokenizer = textTokenizer(setup, [&](VocabularyBuilder& builder) { file.addTexts(builder); });
    const std::int64_t length = setup.run.sequenceLength();
    const SplitFractions fractions{task.validationFraction, task.testFraction};
    data.train = file.dataset(Split::Train, data.tokenizer, length, fractions);
    data.validation = file.dataset(Split::Validation, data.tokenizer, length, fractions);
    data.test = file.dataset(Split::Test, data.tokenizer, length, fractions);
    return data;
}

}  // namespace

const TaskSpec& languageModelTask()
{
    static const TaskSpec spec{TaskKind::LanguageModel, prepareLanguageModel};
    return spec;
}

}  // namespace widelab
