// Classification of texts read from a file (data/Datasets.h: ClassificationFile), one text a row or, BERT's
// sentence-pair input (MNLI's premise and hypothesis), two: "label TAB first TAB second", read as
// first <sep> second <sep> with segment embeddings (data/PairInput.h).
#include "TaskKinds.h"

#include "data/PairInput.h"
#include "run/RunDirectory.h"

namespace widelab {

namespace {

TaskData prepareClassification(const TaskSetup& setup, bool pairs)
{
    const TaskConfig& task = setup.run.task;
    const ModelConfig& model = setup.run.model;
    // A run keeps the classes it started with (labels.json): a file that gained
    // a label must not renumber them under the trained model.
    const std::vector<std::string> classes = setup.resume ? readRunLabels(setup.directory) : std::vector<std::string>();
    const ClassificationFile file(task.path, {task.validationFraction, task.testFraction},
                                  static_cast<std::uint64_t>(task.seed), classes, pairs);
    TaskData data;
    data.tokenizer = textTokenizer(setup, [&](VocabularyBuilder& builder) { file.addTrainingTexts(builder); });
    std::optional<std::int64_t> separator;
    if (pairs) {
        separator = separatorId(model.vocabSize);
        if (*separator < data.tokenizer.vocabSize())
            throw ConfigError({{"model.vocab_size", std::to_string(model.vocabSize) + " leaves no id for the separator "
                                                        "of a pair, the vocabulary's last, past the "
                                                        + toString(data.tokenizer.kind()) + " tokenizer's "
                                                        + std::to_string(data.tokenizer.vocabSize())
                                                        + " ids: it needs at least "
                                                        + std::to_string(data.tokenizer.vocabSize() + 1)}});
    }
    data.labels = file.labels();
    if (static_cast<std::int64_t>(data.labels.size()) > model.numClasses)
        throw ConfigError({{"model.num_classes", std::to_string(model.numClasses) + " is fewer than the "
                                                     + std::to_string(data.labels.size()) + " labels in " + task.path}});
    const std::int64_t length = setup.run.sequenceLength();
    data.train = file.dataset(Split::Train, data.tokenizer, length, separator);
    data.validation = file.dataset(Split::Validation, data.tokenizer, length, separator);
    data.test = file.dataset(Split::Test, data.tokenizer, length, separator);
    return data;
}

}  // namespace

const TaskSpec& classificationTask()
{
    static const TaskSpec spec{TaskKind::Classification, [](const TaskSetup& setup) { return prepareClassification(setup, false); }};
    return spec;
}

const TaskSpec& pairClassificationTask()
{
    static const TaskSpec spec{TaskKind::PairClassification,
                               [](const TaskSetup& setup) { return prepareClassification(setup, true); }};
    return spec;
}

}  // namespace widelab
