#include "CheckpointAverage.h"

#include "CheckpointDirectory.h"
#include "RunDirectory.h"
#include "RunLayout.h"
#include "train/Optimizers.h"

#include <stdexcept>

namespace widelab {

CheckpointAverage averageCheckpoints(const std::filesystem::path& runDirectory, std::int64_t last)
{
    if (last < 1)
        throw std::invalid_argument("averaging checkpoints: the last " + std::to_string(last)
                                    + " checkpoints? At least 1");
    const RunDocument document = readRunDocument(runDirectory);
    const CheckpointDirectory checkpoints(runDirectory, /*mayWrite=*/false);
    std::vector<std::filesystem::path> files = checkpoints.stepFiles();
    const auto found = static_cast<std::int64_t>(files.size());
    if (found == 0)
        throw CheckpointError(runDirectory.string() + " has no step checkpoint to average");
    if (found < last)
        throw CheckpointError(runDirectory.string() + " has " + std::to_string(found) + " step checkpoint"
                              + (found == 1 ? "" : "s") + ", fewer than the " + std::to_string(last)
                              + " to average; --last " + std::to_string(found) + " averages "
                              + (found == 1 ? "it" : "those"));
    files.erase(files.begin(), files.end() - last);

    WideTransformer model(document.model);
    const std::unique_ptr<torch::optim::Optimizer> optimizer = makeOptimizer(document.train, *model);
    std::vector<torch::Tensor> averaged;  // the model's floating-point tensors
    for (const auto& item : model->named_parameters())
        averaged.push_back(item.value());
    for (const auto& item : model->named_buffers())
        if (item.value().is_floating_point())
            averaged.push_back(item.value());

    CheckpointAverage result{checkpoints.path() / runlayout::averageCheckpointFileName(last), files, {}};
    std::vector<torch::Tensor> sums(averaged.size());
    torch::NoGradGuard noGrad;
    for (std::size_t i = 0; i < files.size(); ++i) {
        const bool newest = i + 1 == files.size();  // loaded last: what is not averaged stays its
        result.state = loadCheckpoint(files[i], *model, newest ? optimizer.get() : nullptr);
        for (std::size_t j = 0; j < averaged.size(); ++j) {
            const torch::Tensor value = averaged[j].detach().to(torch::kFloat64, false, /*copy=*/true);
            sums[j] = i == 0 ? value : sums[j].add_(value);
        }
    }
    for (std::size_t j = 0; j < averaged.size(); ++j)
        averaged[j].copy_(sums[j] / static_cast<double>(last));
    saveCheckpoint(result.file, *model, *optimizer, result.state);
    return result;
}

}  // namespace widelab
