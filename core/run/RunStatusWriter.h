// defines: RunStatusWriter: the trainer's heartbeat, RUN_DIR/status.json kept up
// to date through a run (state changes at once, progress every few seconds)
#pragma once

#include "RunStatus.h"
#include "vocab/Snapshot.h"

#include <chrono>
#include <filesystem>

namespace widelab {

// Owned by a Trainer that writes its directory, and one of its observers. State
// changes (training, paused, the end) are written at once; progress (a step, a
// snapshot, an evaluation, a probe) at most once per `every`, so a step costs a
// clock read. A status that cannot be written is skipped: the heartbeat is a
// courtesy to whoever follows the run, never a reason to stop training.
class RunStatusWriter : public TrainingObserver {
public:
    // An empty `directory` writes nothing (a trainer that only reads its run).
    RunStatusWriter(std::filesystem::path directory, std::int64_t totalSteps,
                    std::chrono::milliseconds every = std::chrono::seconds(5));
    // A run left without ended() (an exception left Trainer::run) is recorded as failed.
    ~RunStatusWriter() override;
    RunStatusWriter(const RunStatusWriter&) = delete;
    RunStatusWriter& operator=(const RunStatusWriter&) = delete;

    void training(std::int64_t step);  // started or resumed
    void paused(std::int64_t step);
    void ended(RunState state, std::int64_t step, const std::string& message);
    void progress(std::int64_t step);  // rate-limited

    void onSnapshot(const TrainingSnapshot& snapshot) override { progress(snapshot.step); }
    void onEvaluation(const EvaluationResult& result) override { progress(result.step); }
    void onProbe(const ProbeResult& result) override { progress(result.step); }

    const RunStatus& status() const { return m_status; }

private:
    void write();

    std::filesystem::path m_directory;
    std::chrono::milliseconds m_every;
    std::chrono::steady_clock::time_point m_written{};
    bool m_started = false;  // training() was called and ended() not yet
    RunStatus m_status;
};

}  // namespace widelab
