// Classification of texts read from a file (data/Datasets.h: ClassificationFile).
#include "TaskKinds.h"

#include "run/RunDirectory.h"

namespace widelab {

namespace {

TaskData prepareClassification(const TaskSetup& setup)
{
    const TaskConfig& task = setup.run.task;
    // A run keeps the classes it started with (labels.json): a file that gained
    // a label must not renumber them under the trained model.
    const std::vector<std::string> classes = setup.resume ? readRunLabels(setup.directory) : std::vector<std::string>();
    const ClassificationFile file(task.path, {task.validationFraction, task.testFraction},
                                  static_cast<std::uint64_t>(task.seed), classes);
    TaskData data;
    data.tokenizer = textTokenizer(setup, [&](VocabularyBuilder& builder) { file.addTrainingTexts(builder); });
    data.labels = file.labels();
    const std::int64_t numClasses = setup.run.model.numClasses;
    if (static_cast<std::int64_t>(data.labels.size()) > numClasses)
        throw ConfigError({{"model.num_classes", std::to_string(numClasses) + " is fewer than the "
                                                     + std::to_string(data.labels.size()) + " labels in " + task.path}});
    const std::int64_t length = setup.run.sequenceLength();
    data.train = file.dataset(Split::Train, data.tokenizer, length);
    data.validation = file.dataset(Split::Validation, data.tokenizer, length);
    data.test = file.dataset(Split::Test, data.tokenizer, length);
    return data;
}

}  // namespace

const TaskSpec& classificationTask()
{
    static const TaskSpec spec{TaskKind::Classification, prepareClassification};
    return spec;
}

}  // namespace widelab
