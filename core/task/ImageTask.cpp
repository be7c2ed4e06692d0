#include "ImageTask.h"
#include "TaskKinds.h"

#include "data/FashionMnist.h"
#include "run/RunLayout.h"
#include "vocab/JsonText.h"
#include "data/Tokenizer.h"
#include "run/RunDirectory.h"

#include <fstream>
#include <sstream>

namespace widelab {

ImageFormat imageFormat(const ModelConfig& model) { return {model.imageSize, model.channels}; }

ImageTask prepareImageTask(const RunDocument& run, const std::vector<std::string>& classes, const ImageStats* savedStats,
                           const std::vector<std::string>* probes, const ImageChecks& checks)
{
    const TaskConfig& task = run.task;
    ImageTask data;
    data.format = imageFormat(run.model);
    const auto seed = static_cast<std::uint64_t>(task.seed);
    switch (task.kind) {
    case TaskKind::Shapes:
        data.labels = shapeNames();
        data.train = makeShapesDataset(task.trainSize, seed, Split::Train, data.format);
        data.validation = makeShapesDataset(task.validationSize, seed, Split::Validation, data.format);
        data.test = makeShapesDataset(task.testSize, seed, Split::Test, data.format);
        break;
    case TaskKind::Cifar10: {
        const Cifar10 cifar(task.path, task.validationFraction, seed, data.format);
        data.labels = Cifar10::classNames();
        data.train = cifar.dataset(Split::Train);
        data.validation = cifar.dataset(Split::Validation);
        data.test = cifar.dataset(Split::Test);
        break;
    }
    case TaskKind::FashionMnist: {
        const FashionMnist fashion(FashionMnist::folderOf(task.path), task.validationFraction, seed, data.format);
        data.labels = FashionMnist::classNames();
        data.train = fashion.dataset(Split::Train);
        data.validation = fashion.dataset(Split::Validation);
        data.test = fashion.dataset(Split::Test);
        break;
    }
    case TaskKind::ImageFolder: {
        ImageFolder folder(task.path, {task.validationFraction, task.testFraction}, seed, data.format, classes);
        if (checks.decodeNow || task.skipBadInputs)
            data.leftOut = folder.decodeAll(task.skipBadInputs, checks.progress);
        data.labels = folder.labels();
        if (static_cast<std::int64_t>(data.labels.size()) > run.model.numClasses)
            throw ConfigError({{"model.num_classes", std::to_string(run.model.numClasses) + " is fewer than the "
                                                         + std::to_string(data.labels.size()) + " class folders in "
                                                         + task.path}});
        data.train = folder.dataset(Split::Train);
        data.validation = folder.dataset(Split::Validation);
        data.test = folder.dataset(Split::Test);
        break;
    }
    default:
        throw std::invalid_argument("prepareImageTask: task.kind " + toString(task.kind) + " is not an image task");
    }
    const std::string where = task.path.empty() ? std::string("the images") : task.path;
    if (data.train->size() == 0)
        throw DataError(where + ": the training split is empty: too few images for the split fractions");
    if (data.validation->size() == 0)
        throw DataError(where + ": the validation split is empty: raise task.validation_fraction, or give more images");
    // Probe entries are checked now, so that a typo is an error naming it, not a warning at every probe.
    for (std::size_t i = 0; probes && i < probes->size(); ++i) {
        try {
            std::int64_t label = -1;
            probeImage((*probes)[i], data.validation.get(), data.format, label);
        } catch (const DataError& error) {
            throw ConfigError({{"train.probes[" + std::to_string(i) + "]", error.what()}});
        }
    }
    data.stats = savedStats ? *savedStats : imageStats(*data.train, data.format.channels);
    return data;
}

std::optional<ImageStats> readRunImageStats(const std::filesystem::path& directory, std::int64_t channels)
{
    const std::filesystem::path file = runlayout::imageStatsFile(directory);
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    const auto json = tryParseJsonText(text.str());
    if (!json)
        throw DataError(file.string() + ": not JSON");
    return ImageStats::fromJson(*json, channels, file.string());
}

namespace {

// The three image kinds share one preparation: prepareImageTask picks by kind.
TaskData prepareImages(const TaskSetup& setup)
{
    std::optional<ImageStats> saved;
    std::vector<std::string> classes;
    if (setup.resume) {
        saved = readRunImageStats(setup.directory, setup.run.model.channels);
        classes = readRunLabels(setup.directory);
    }
    ImageTask images = prepareImageTask(setup.run, classes, saved ? &*saved : nullptr, setup.probes,
                                        {.decodeNow = true, .progress = setup.progress});
    if (!images.leftOut.empty() && setup.warn) {
        std::string first;
        for (std::size_t i = 0; i < images.leftOut.size() && i < 3; ++i)
            first += (i ? "; " : "") + images.leftOut[i];
        setup.warn("task.skip_bad_inputs: left out " + std::to_string(images.leftOut.size())
                   + " image(s) that cannot be decoded: " + first + (images.leftOut.size() > 3 ? "; ..." : ""));
    }
    TaskData data;
    data.tokenizer = Tokenizer::bytes();  // tokens play no part; the run directory keeps a tokenizer.json as for text
    data.labels = std::move(images.labels);
    data.train = std::move(images.train);
    data.validation = std::move(images.validation);
    data.test = std::move(images.test);
    data.imageStats = images.stats;
    return data;
}

}  // namespace

const TaskSpec& imageFolderTask()
{
    static const TaskSpec spec{TaskKind::ImageFolder, prepareImages};
    return spec;
}

const TaskSpec& cifar10Task()
{
    static const TaskSpec spec{TaskKind::Cifar10, prepareImages};
    return spec;
}

const TaskSpec& shapesTask()
{
    static const TaskSpec spec{TaskKind::Shapes, prepareImages};
    return spec;
}

const TaskSpec& fashionMnistTask()
{
    static const TaskSpec spec{TaskKind::FashionMnist, prepareImages};
    return spec;
}

}  // namespace widelab
