#include "RunEvaluation.h"

#include "RunDirectory.h"
#include "train/Trainer.h"

namespace widelab {

RunEvaluation evaluateRun(const std::filesystem::path& directory, Split split, const std::string& checkpoint,
                          const std::optional<std::string>& device, const std::optional<std::int64_t>& threads,
                          const std::vector<TrainingObserver*>& observers, std::int64_t beamSize,
                          double lengthPenalty)
{
    // Checks the run's files as inspect does; the trainer says what it passes over.
    const RunDocument run = openRun(directory, checkpoint).document;
    TrainerOptions options;
    options.observers = observers;
    options.resume = true;
    options.readOnly = true;
    options.checkpoint = checkpoint;
    options.device = device;
    options.threads = threads;
    options.beamSize = beamSize;
    options.lengthPenalty = lengthPenalty;
    Trainer trainer(run, directory, options);
    RunEvaluation evaluation;
    evaluation.result = trainer.evaluate(split, 0, /*reportProgress=*/true);
    evaluation.device = trainer.device().str();
    return evaluation;
}

}  // namespace widelab
