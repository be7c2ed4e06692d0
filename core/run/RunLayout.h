// defines: runlayout: the names of a run directory's files (config.json,
// metrics.jsonl, log.txt, status.json, tokenizer.json, labels.json, image.json, notes.json, lock, cache,
// checkpoints/step-NNNNNNNN.pt, checkpoints/best.pt, checkpoints/average-last-N.pt), the one place that spells them
// (docs/run-directory.md describes what each holds). The app spells none itself: it
// joins these names to its QString paths.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace widelab::runlayout {

inline constexpr std::string_view kConfig = "config.json";        // the run document, resolved
inline constexpr std::string_view kMetrics = "metrics.jsonl";     // one JSON line per measurement (MetricsCodec.h)
inline constexpr std::string_view kLog = "log.txt";               // what the trainer said, one line each
inline constexpr std::string_view kStatus = "status.json";        // who trains the run, how far (RunStatus.h)
inline constexpr std::string_view kTokenizer = "tokenizer.json";  // the vocabulary the run was started with
inline constexpr std::string_view kLabels = "labels.json";        // class names, in class order
inline constexpr std::string_view kImageStats = "image.json";     // image tasks: the per-channel normalisation
inline constexpr std::string_view kNotes = "notes.json";          // the user's name, tags and note for the run (RunNotes.h)
inline constexpr std::string_view kLock = "lock";                 // held by the process that writes the run
inline constexpr std::string_view kCache = "cache";               // a language model's tokenised text
inline constexpr std::string_view kCheckpoints = "checkpoints";
inline constexpr std::string_view kBestCheckpoint = "best.pt";    // in checkpoints/: the best validation loss

inline std::filesystem::path configFile(const std::filesystem::path& run) { return run / kConfig; }
inline std::filesystem::path metricsFile(const std::filesystem::path& run) { return run / kMetrics; }
inline std::filesystem::path logFile(const std::filesystem::path& run) { return run / kLog; }
inline std::filesystem::path statusFile(const std::filesystem::path& run) { return run / kStatus; }
inline std::filesystem::path tokenizerFile(const std::filesystem::path& run) { return run / kTokenizer; }
inline std::filesystem::path labelsFile(const std::filesystem::path& run) { return run / kLabels; }
inline std::filesystem::path imageStatsFile(const std::filesystem::path& run) { return run / kImageStats; }
inline std::filesystem::path notesFile(const std::filesystem::path& run) { return run / kNotes; }
inline std::filesystem::path lockFile(const std::filesystem::path& run) { return run / kLock; }
inline std::filesystem::path cacheDirectory(const std::filesystem::path& run) { return run / kCache; }
// A distributed run's other ranks log here (rank 0 writes log.txt).
inline std::filesystem::path rankLogFile(const std::filesystem::path& run, int rank)
{
    return run / "logs" / ("rank-" + std::to_string(rank) + ".txt");
}
inline std::filesystem::path checkpointsDirectory(const std::filesystem::path& run) { return run / kCheckpoints; }
inline std::filesystem::path bestCheckpointFile(const std::filesystem::path& run)
{
    return checkpointsDirectory(run) / kBestCheckpoint;
}

// "step-NNNNNNNN.pt": the step after which it was saved, eight digits or more, so
// that names sort as steps do up to 10^8 (stepFiles sorts by the number past that).
std::string checkpointFileName(std::int64_t step);
inline std::filesystem::path checkpointFile(const std::filesystem::path& run, std::int64_t step)
{
    return checkpointsDirectory(run) / checkpointFileName(step);
}
// The step a checkpoint file name stands for; nullopt for any other name
// (best.pt, NAME.unreadable, a temporary file, fewer than eight digits).
std::optional<std::int64_t> stepOfCheckpoint(std::string_view fileName);
// "average-last-N.pt", in checkpoints/: the mean of the last N step checkpoints
// (CheckpointAverage.h). Not a step file's name: "latest", train.keep_last and
// resuming never pick, count or delete it.
inline std::string averageCheckpointFileName(std::int64_t last)
{
    return "average-last-" + std::to_string(last) + ".pt";
}

}  // namespace widelab::runlayout
