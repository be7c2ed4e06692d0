// defines: MetricsWriter: the observer of a trainer that writes RUN_DIR/metrics.jsonl,
// one line (MetricsCodec.h) per snapshot, evaluation, probe and validation insight
#pragma once

#include "vocab/Snapshot.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace widelab {

// Appends one line to a metrics file (a probe kept by a window, outside a
// trainer), whole or not at all, as MetricsWriter does; throws
// std::runtime_error naming the file and the system's reason.
void appendMetricsLine(const std::filesystem::path& file, const std::string& line);

class MetricsWriter : public TrainingObserver {
public:
    enum class Start {
        NewRun,   // whatever an earlier, checkpoint-less attempt left goes
        Resumed,  // lines after the checkpoint's step describe steps that run again: they go
    };
    // Appends to `file`; an empty path writes nothing (a trainer that only reads its run).
    // Resumed at `step`: keeps the lines up to that step (and drops a line cut short by
    // a kill), rewriting the file atomically first. Throws std::runtime_error naming
    // the file and the system's reason when it cannot be opened.
    MetricsWriter(std::filesystem::path file, Start start, std::int64_t step = 0);
    ~MetricsWriter() override;
    MetricsWriter(const MetricsWriter&) = delete;
    MetricsWriter& operator=(const MetricsWriter&) = delete;

    // A provisional snapshot (a stopped run's last steps) is shown, not recorded.
    void onSnapshot(const TrainingSnapshot& snapshot) override;
    void onEvaluation(const EvaluationResult& result) override;
    void onProbe(const ProbeResult& result) override;
    void onValidationInsights(const ValidationInsights& insights) override;

private:
    // Appends one line, whole or not at all. A line that cannot be written (the
    // disk full, the file system read-only) throws std::runtime_error naming the
    // file and the system's reason, and the file is cut back to its last whole line:
    // the run stops there, before any later checkpoint, and resumed it writes every
    // line from its last checkpoint on once.
    void write(const std::string& line);

    std::filesystem::path m_file;
    int m_fd = -1;
};

}  // namespace widelab
