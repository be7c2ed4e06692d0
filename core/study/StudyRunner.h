// defines: StudyProgress, StudyObserver, StudyOptions, StudySummary, StudyRunner,
// measureMember: runs a study's members (each an ordinary run under
// STUDY_DIR/runs/), one after another or several at once, continuing a study
// directory where it stopped, recording each member's measures or error
#pragma once

#include "StudyDocument.h"
#include "StudyResults.h"
#include "vocab/Snapshot.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace widelab {

class RunLock;
class TrainingControl;

// Where the study stands; `secondsLeft` is an estimate (negative: none yet).
struct StudyProgress {
    std::size_t total = 0, done = 0, failed = 0, running = 0, left = 0;  // done counts failed ones too
    double secondsLeft = -1.0;
};

// What the runner reports. Calls come from the runner's threads (with jobs > 1,
// from several), one at a time: never two at once. `index` is the member's place
// in StudyRunner::members().
class StudyObserver {
public:
    virtual ~StudyObserver() = default;
    // A member starts training (`resumed`: from its checkpoint) or is passed over as done.
    virtual void onMemberStarted(std::size_t index, const StudyMember& member, bool resumed) { (void)index, (void)member, (void)resumed; }
    virtual void onMemberSkipped(std::size_t index, const MemberResult& result) { (void)index, (void)result; }
    // Every snapshot of a training member (every train.log_every steps), with its length.
    virtual void onMemberProgress(std::size_t index, const TrainingSnapshot& snapshot, std::int64_t totalSteps)
    {
        (void)index, (void)snapshot, (void)totalSteps;
    }
    // A member's validation (or test) evaluation, as its run's metrics.jsonl records it.
    virtual void onMemberEvaluation(std::size_t index, const EvaluationResult& result) { (void)index, (void)result; }
    // A member's trainer said something (warnings, errors; "info" too).
    virtual void onMemberMessage(std::size_t index, const std::string& level, const std::string& text)
    {
        (void)index, (void)level, (void)text;
    }
    // Completed and measured, or failed (result.error says why); results.csv is rewritten before.
    virtual void onMemberFinished(std::size_t index, const MemberResult& result) { (void)index, (void)result; }
    // A member stopped on request; it continues from its checkpoint next time.
    virtual void onMemberStopped(std::size_t index, std::int64_t step) { (void)index, (void)step; }
    virtual void onProgress(const StudyProgress& progress) { (void)progress; }
};

struct StudyOptions {
    StudyOverrides overrides;             // --steps, --seeds
    std::size_t jobs = 1;                 // members trained at once (on a machine with several GPUs, each on its own: jobDevice)
    std::optional<std::string> device;    // every member's train.device
    // Compute threads in all (0: every core), divided among the jobs.
    std::optional<std::int64_t> threads;
    std::vector<StudyObserver*> observers;  // not owned
    // Latency measurement: timed inference steps per member (batch 1).
    std::int64_t latencySteps = 21;
};

// The device a member trains on when it is the `slot`-th of the jobs running
// at once, on a machine with `gpus` GPUs: with several, a member that asks for
// "cuda" or "auto" takes GPU slot % gpus, so that the jobs share none; any
// other request (one GPU named, the CPU) is kept.
std::string jobDevice(const std::string& requested, std::size_t slot, int gpus);

struct StudySummary {
    bool stopped = false;  // a stop was requested before every member finished
    std::size_t completed = 0, failed = 0, total = 0;
};

// A study refused: the directory holds another study, continuing would change it
// (the message names what differs), or another process is running it.
class StudyRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class StudyRunner {
public:
    // Expands the document (ConfigError when it does not validate) and prepares
    // the directory: a new study writes study.json; an existing one is continued
    // when its document and overrides are the same (overrides not given are taken
    // from study.json), else StudyRefused says what differs. The runner holds the
    // directory's lock (the file a run's RunLock holds) while it lives: a study
    // another process runs is refused, naming that process.
    StudyRunner(const StudyDocument& study, std::filesystem::path directory, StudyOptions options = {});
    ~StudyRunner();

    // Runs every member not finished yet: completed and failed members are passed
    // over, a stopped one continues from its checkpoint (ResumeRule). A member that
    // fails (a configuration the data refuses, a non-finite loss, out of memory) is
    // recorded and the study goes on. Returns when all are done or a stop was asked
    // for (`stop` becoming true, or requestStop()); the running members then save a
    // checkpoint. results.csv and results.md are rewritten after every member. An
    // error outside a member (a study file that cannot be written) stops the other
    // members as a stop would, and is thrown once they have saved.
    StudySummary run(const std::atomic<bool>& stop);
    StudySummary run();
    // Thread-safe: stops the running members after their current step.
    void requestStop();
    // Not while run() runs. Not owned.
    void addObserver(StudyObserver* observer) { m_options.observers.push_back(observer); }

    const std::vector<StudyMember>& members() const { return m_members; }
    const StudyDocument& study() const { return m_study; }
    const StudyOverrides& overrides() const { return m_options.overrides; }
    const std::filesystem::path& directory() const { return m_directory; }

private:
    MemberResult runMember(std::size_t index, const std::atomic<bool>& stop, bool& stopped, std::size_t slot);
    void finish(std::size_t index, const MemberResult& result);
    void publishProgress();  // with m_mutex held

    StudyDocument m_study;
    std::filesystem::path m_directory;
    std::unique_ptr<RunLock> m_lock;
    StudyOptions m_options;
    std::vector<StudyMember> m_members;

    friend class StudyMemberObserver;
    // Guards what follows and serialises the observers' calls; recursive, so that an
    // observer may call requestStop().
    std::recursive_mutex m_mutex;
    std::atomic<bool> m_stop{false};
    std::vector<TrainingControl*> m_controls;  // the running members'
    std::size_t m_done = 0, m_failed = 0, m_running = 0;
    std::vector<double> m_memberSeconds;  // members finished in this session
    std::vector<double> m_runningFraction;  // per member: the share of its steps done (running ones)
    // Per member: the share done at its first snapshot of this session (-1: none yet), so
    // that a continued member's steps from before do not count as this session's speed.
    std::vector<double> m_startFraction;
    double m_started = 0.0;
};

// The keys (dotted) in which a study `document` (StudyDocument::toJson()) differs
// from the one a directory records, leaving out what only describes it (its
// description and report, each axis's label and names): empty when continuing
// `document` there continues the same study.
std::vector<std::string> studyDifferences(const nlohmann::json& recorded, const nlohmann::json& document);

// The study a directory's study.json records (its base inline), for continuing it
// without its file; ConfigError naming study.json when it is missing or damaged.
StudyDocument recordedStudy(const std::filesystem::path& directory);

// The measures of a completed member's run directory: validation from
// metrics.jsonl (final and best), the test split at checkpoints/best.pt (as
// `widelab-cli eval --split test --checkpoint best`), the accounting, training
// tokens/s and peak memory over metrics.jsonl, wall time over its sessions, and
// inference latency (core/benchmark/Benchmark, batch 1, the task's length).
std::map<std::string, double> measureMember(const std::filesystem::path& runDirectory, const std::string& device,
                                            std::optional<std::int64_t> threads, std::int64_t latencySteps = 21);

}  // namespace widelab
