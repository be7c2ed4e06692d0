// defines: ImageTask, prepareImageTask, readRunImageStats: an image task's datasets,
// classes and normalisation, set up from a run document (the trainer's data part for images)
#pragma once

#include "train/RunConfig.h"
#include "data/Images.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace widelab {

struct ImageTask {
    ImageFormat format;
    std::vector<std::string> labels;  // class names, in class order
    std::unique_ptr<Dataset> train, validation, test;
    ImageStats stats;                 // the normalisation every image goes through
    std::vector<std::string> leftOut; // task.skip_bad_inputs: the folder's images that could not be decoded ("FILE: why")
};

// How prepareImageTask treats an image folder's files.
struct ImageChecks {
    // Decode every image before returning (ImageFolder::decodeAll), as a trainer does, so that a file that cannot be
    // decoded is named now, not at some later step. Readers (inspect, ablate) decode when asked, except that with
    // task.skip_bad_inputs they decode all too, to leave out the same files, so that validation:N means the same.
    bool decodeNow = false;
    std::function<void(const std::string&)> progress;  // decodeAll's
};

ImageFormat imageFormat(const ModelConfig& model);

// The datasets of task.kind image_folder, cifar10, shapes or fashion_mnist at the model's image size and channels. `classes`
// (a run's labels.json, when resuming) must match an image folder's. The normalisation is `savedStats` when
// given (a run's image.json), else computed from the training split (imageStats). Throws DataError naming the
// folder or file, ConfigError for model.num_classes fewer than the folder's classes and, when `probes` is given
// (a run's train.probes), for an entry that is neither validation:N within the split nor a readable image
// (naming train.probes[i]).
ImageTask prepareImageTask(const RunDocument& run, const std::vector<std::string>& classes,
                           const ImageStats* savedStats, const std::vector<std::string>* probes = nullptr,
                           const ImageChecks& checks = {});

// RUN_DIR/image.json as written by the trainer; nullopt when absent; DataError naming the file when malformed.
std::optional<ImageStats> readRunImageStats(const std::filesystem::path& directory, std::int64_t channels);

}  // namespace widelab
