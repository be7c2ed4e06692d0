// defines: MetricsWriter: the observer of a trainer that writes RUN_DIR/metrics.jsonl,
// one line (MetricsCodec.h) per snapshot, evaluation, probe and validation insight
#pragma once

#include "Snapshot.h"

#include <cstdint>
#include <filesystem>
#include <fstream>

namespace widelab {

class MetricsWriter : public TrainingObserver {
public:
    enum class Start {
        NewRun,   // whatever an earlier, checkpoint-less attempt left goes
        Resumed,  // lines after the checkpoint's step describe steps that run again: they go
    };
    // Appends to `file`; an empty path writes nothing (a trainer that only reads its run).
    // Resumed at `step`: keeps the lines up to that step (and drops a line cut short by
    // a kill), rewriting the file atomically first.
    MetricsWriter(std::filesystem::path file, Start start, std::int64_t step = 0);

    // A provisional snapshot (a stopped run's last steps) is shown, not recorded.
    void onSnapshot(const TrainingSnapshot& snapshot) override;
    void onEvaluation(const EvaluationResult& result) override;
    void onProbe(const ProbeResult& result) override;
    void onValidationInsights(const ValidationInsights& insights) override;

private:
    void write(const std::string& line);

    std::ofstream m_out;
};

}  // namespace widelab
