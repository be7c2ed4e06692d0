#include "StudyRunner.h"

#include "StudyLayout.h"
#include "vocab/JsonText.h"
#include "model/PaperSearch.h"
#include "model/ParameterCount.h"
#include "runtime/Clock.h"
#include "benchmark/Benchmark.h"
#include "run/Checkpoint.h"
#include "vocab/MetricsCodec.h"
#include "run/ResumeRule.h"
#include "run/RunDirectory.h"
#include "run/RunEvaluation.h"
#include "run/RunLayout.h"
#include "run/RunLock.h"
#include "train/Trainer.h"
#include "train/TrainingControl.h"

#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

namespace widelab {
namespace {

// An exception's message; LibTorch's without its C++ backtrace.
std::string errorText(const std::exception& error)
{
    if (const auto* torchError = dynamic_cast<const c10::Error*>(&error)) {
        const std::string what = torchError->what_without_backtrace();
        return what.substr(0, what.find('\n'));
    }
    return error.what();
}

MemberResult resultOf(const StudyMember& member)
{
    MemberResult result;
    result.name = member.name;
    result.point = member.point;
    result.seed = member.seed;
    result.settings = member.settings;
    return result;
}

// The override a study directory records, when the command line gives none; a
// different one is refused.
void takeRecordedOverride(std::optional<std::int64_t>& given, const nlohmann::json& recorded, const std::string& flag,
                          const std::filesystem::path& file)
{
    const std::optional<std::int64_t> saved =
        recorded.is_number_integer() ? std::optional<std::int64_t>(recorded.get<std::int64_t>()) : std::nullopt;
    if (!given) {
        given = saved;
        return;
    }
    if (given != saved)
        throw StudyRefused(file.string() + " records the study with " + (saved ? flag + " " + std::to_string(*saved) : "no " + flag)
                           + "; continuing it with " + flag + " " + std::to_string(*given)
                           + " would change its members: continue with the same options, or start another study directory");
}

}  // namespace

// A member's trainer, heard by the runner.
class StudyMemberObserver : public TrainingObserver {
public:
    StudyMemberObserver(StudyRunner& runner, std::size_t index, std::int64_t totalSteps)
        : m_runner(runner), m_index(index), m_total(totalSteps)
    {
    }
    void setTotalSteps(std::int64_t total) { m_total = total; }

    void onSnapshot(const TrainingSnapshot& snapshot) override
    {
        std::lock_guard lock(m_runner.m_mutex);
        if (m_total > 0) {
            const double fraction = std::clamp(static_cast<double>(snapshot.step) / static_cast<double>(m_total), 0.0, 1.0);
            m_runner.m_runningFraction[m_index] = fraction;
            if (m_runner.m_startFraction[m_index] < 0.0)
                m_runner.m_startFraction[m_index] = fraction;
        }
        for (StudyObserver* observer : m_runner.m_options.observers)
            observer->onMemberProgress(m_index, snapshot, m_total);
        m_runner.publishProgress();
    }
    void onEvaluation(const EvaluationResult& result) override
    {
        std::lock_guard lock(m_runner.m_mutex);
        for (StudyObserver* observer : m_runner.m_options.observers)
            observer->onMemberEvaluation(m_index, result);
    }
    void onMessage(const std::string& level, const std::string& text) override
    {
        std::lock_guard lock(m_runner.m_mutex);
        for (StudyObserver* observer : m_runner.m_options.observers)
            observer->onMemberMessage(m_index, level, text);
    }

private:
    StudyRunner& m_runner;
    std::size_t m_index;
    std::int64_t m_total;
};

std::vector<std::string> studyDifferences(const nlohmann::json& recorded, const nlohmann::json& document)
{
    const auto members = [](nlohmann::json study) {
        if (!study.is_object())
            return study;
        study.erase("description");
        study.erase("report");
        if (study.contains("axes") && study.at("axes").is_array())
            for (nlohmann::json& axis : study.at("axes"))
                if (axis.is_object()) {
                    axis.erase("label");
                    axis.erase("names");
                }
        return study;
    };
    return differingKeys(members(recorded), members(document));
}

StudyDocument recordedStudy(const std::filesystem::path& directory)
{
    const StudyRecord record = readStudyRecord(directory);
    return parseStudyDocument(record.document.dump(), studylayout::studyFile(directory).string());
}

StudyRunner::StudyRunner(const StudyDocument& study, std::filesystem::path directory, StudyOptions options)
    : m_study(study), m_directory(std::move(directory)), m_options(std::move(options))
{
    const std::filesystem::path file = studylayout::studyFile(m_directory);
    std::error_code error;
    const bool existing = std::filesystem::exists(file, error);
    if (!existing && std::filesystem::exists(m_directory, error) && !std::filesystem::is_empty(m_directory, error))
        throw StudyRefused(m_directory.string() + " is not empty and holds no study (no " + std::string(studylayout::kStudy)
                           + "); choose a new or empty directory");
    std::filesystem::create_directories(m_directory);
    try {
        m_lock = std::make_unique<RunLock>(m_directory);
    } catch (const RunInUse&) {
        const std::string holder = RunLock::holder(m_directory);
        throw StudyRefused("the study in " + m_directory.string() + " is running in another process"
                           + (holder.empty() ? std::string() : " (process " + holder + ")")
                           + ": wait for it to finish, or open the study in the app to watch it");
    }
    if (existing) {
        const StudyRecord saved = readStudyRecord(m_directory);
        const auto differences = studyDifferences(saved.document, m_study.toJson());
        if (!differences.empty()) {
            std::string keys;
            for (std::size_t i = 0; i < differences.size() && i < 8; ++i)
                keys += (i ? ", " : "") + (differences[i].empty() ? std::string("the document") : differences[i]);
            if (differences.size() > 8)
                keys += ", ...";
            throw StudyRefused(m_directory.string() + " holds another study: its " + std::string(studylayout::kStudy)
                               + " differs in " + keys
                               + "; continue it as it was (widelab-cli study --out " + m_directory.string()
                               + ") or choose another directory");
        }
        takeRecordedOverride(m_options.overrides.steps, saved.overrides.contains("steps") ? saved.overrides.at("steps") : nlohmann::json(),
                             "--steps", file);
        takeRecordedOverride(m_options.overrides.seeds, saved.overrides.contains("seeds") ? saved.overrides.at("seeds") : nlohmann::json(),
                             "--seeds", file);
    }
    m_members = expandStudy(m_study, m_options.overrides);
    m_runningFraction.assign(m_members.size(), 0.0);
    m_startFraction.assign(m_members.size(), -1.0);
    if (!existing) {
        std::filesystem::create_directories(studylayout::runsDirectory(m_directory));
        std::filesystem::create_directories(studylayout::membersDirectory(m_directory));
        nlohmann::json members = nlohmann::json::array();
        for (const StudyMember& member : m_members)
            members.push_back(member.toJson());
        const nlohmann::json record = {
            {"document", m_study.toJson()}, {"overrides", m_options.overrides.toJson()}, {"members", members}};
        writeFileAtomically(file, record.dump(2) + "\n");
        writeStudyResults(m_directory);
    } else {
        std::filesystem::create_directories(studylayout::membersDirectory(m_directory));
    }
}

StudyRunner::~StudyRunner() = default;

void StudyRunner::requestStop()
{
    std::lock_guard lock(m_mutex);
    m_stop.store(true);
    for (TrainingControl* control : m_controls)
        control->requestStop();
}

StudySummary StudyRunner::run()
{
    const std::atomic<bool> never{false};
    return run(never);
}

void StudyRunner::publishProgress()
{
    StudyProgress progress;
    progress.total = m_members.size();
    progress.done = m_done;
    progress.failed = m_failed;
    progress.running = m_running;
    progress.left = m_members.size() - m_done - m_running;
    double unitsDone = static_cast<double>(m_memberSeconds.size()), unitsLeft = static_cast<double>(progress.left);
    for (std::size_t i = 0; i < m_runningFraction.size(); ++i)
        if (m_runningFraction[i] > 0.0) {
            unitsDone += m_runningFraction[i] - std::max(0.0, m_startFraction[i]);
            unitsLeft += 1.0 - m_runningFraction[i];
        }
    const double elapsed = steadySeconds() - m_started;
    if (unitsDone > 0.02)
        progress.secondsLeft = elapsed / unitsDone * unitsLeft;
    for (StudyObserver* observer : m_options.observers)
        observer->onProgress(progress);
}

StudySummary StudyRunner::run(const std::atomic<bool>& stop)
{
    m_started = steadySeconds();
    std::vector<std::size_t> pending;
    {
        std::lock_guard lock(m_mutex);
        m_done = m_failed = m_running = 0;
        m_memberSeconds.clear();
        const std::vector<MemberResult> recorded = readStudyResults(m_directory, readStudyRecord(m_directory));
        for (std::size_t i = 0; i < m_members.size(); ++i) {
            const auto it = std::find_if(recorded.begin(), recorded.end(),
                                         [&](const MemberResult& r) { return r.name == m_members[i].name; });
            if (it != recorded.end() && (it->status == MemberStatus::Completed || it->status == MemberStatus::Failed)) {
                ++m_done;
                m_failed += it->status == MemberStatus::Failed ? 1 : 0;
                for (StudyObserver* observer : m_options.observers)
                    observer->onMemberSkipped(i, *it);
            } else {
                pending.push_back(i);
            }
        }
        publishProgress();
    }

    const std::size_t jobs = std::max<std::size_t>(1, std::min(m_options.jobs, pending.size()));
    std::size_t next = 0;
    bool anyStopped = false;
    auto stopping = [&] { return stop.load() || m_stop.load(); };
    auto worker = [&](std::size_t slot) {
        for (;;) {
            std::size_t index = 0;
            {
                std::lock_guard lock(m_mutex);
                if (next >= pending.size() || stopping())
                    return;
                index = pending[next++];
                ++m_running;
            }
            bool stopped = false;
            const double start = steadySeconds();
            MemberResult result = runMember(index, stop, stopped, slot);
            std::lock_guard lock(m_mutex);
            --m_running;
            m_runningFraction[index] = 0.0;
            m_startFraction[index] = -1.0;
            if (stopped) {
                anyStopped = true;
                publishProgress();
                continue;
            }
            if (result.status == MemberStatus::Completed)
                m_memberSeconds.push_back(steadySeconds() - start);
            finish(index, result);
        }
    };
    if (jobs == 1) {
        worker(0);
    } else {
        // An exception must not leave a thread (std::terminate): the first one stops
        // the others and is thrown here once they have saved.
        std::exception_ptr failure;
        auto guarded = [&](std::size_t slot) {
            try {
                worker(slot);
            } catch (...) {
                {
                    std::lock_guard lock(m_mutex);
                    if (!failure)
                        failure = std::current_exception();
                }
                requestStop();
            }
        };
        std::vector<std::thread> threads;
        for (std::size_t j = 0; j < jobs; ++j)
            threads.emplace_back(guarded, j);
        for (std::thread& thread : threads)
            thread.join();
        if (failure)
            std::rethrow_exception(failure);
    }
    StudySummary summary;
    std::lock_guard lock(m_mutex);
    summary.total = m_members.size();
    summary.failed = m_failed;
    summary.completed = m_done - m_failed;
    summary.stopped = anyStopped || m_done < m_members.size();
    return summary;
}

void StudyRunner::finish(std::size_t index, const MemberResult& result)
{
    writeFileAtomically(studylayout::memberFile(m_directory, result.name), result.toJson().dump(2) + "\n");
    writeStudyResults(m_directory);
    ++m_done;
    m_failed += result.status == MemberStatus::Failed ? 1 : 0;
    for (StudyObserver* observer : m_options.observers)
        observer->onMemberFinished(index, result);
    publishProgress();
}

std::string jobDevice(const std::string& requested, std::size_t slot, int gpus)
{
    if (gpus > 1 && (requested == "cuda" || requested == "auto"))
        return "cuda:" + std::to_string(slot % static_cast<std::size_t>(gpus));
    return requested;
}

MemberResult StudyRunner::runMember(std::size_t index, const std::atomic<bool>& stop, bool& stopped, std::size_t slot)
{
    const StudyMember& member = m_members[index];
    MemberResult result = resultOf(member);
    const std::filesystem::path directory = studylayout::runDirectory(m_directory, member.name);
    std::optional<std::int64_t> threads = m_options.threads;
    const std::size_t jobs = std::max<std::size_t>(1, m_options.jobs);
    if (jobs > 1) {
        const auto all = threads && *threads > 0 ? *threads : static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
        threads = std::max<std::int64_t>(1, all / static_cast<std::int64_t>(jobs));
    }
    TrainingControl control(&stop);
    // requestStop reaches the member's control while it trains, and never after it is gone.
    struct Registration {
        StudyRunner& runner;
        TrainingControl& control;
        Registration(StudyRunner& r, TrainingControl& c) : runner(r), control(c)
        {
            std::lock_guard lock(runner.m_mutex);
            runner.m_controls.push_back(&control);
            if (runner.m_stop.load())
                control.requestStop();
        }
        ~Registration()
        {
            std::lock_guard lock(runner.m_mutex);
            runner.m_controls.erase(std::remove(runner.m_controls.begin(), runner.m_controls.end(), &control),
                                    runner.m_controls.end());
        }
    } registration(*this, control);
    try {
        nlohmann::json document = member.document;
        if (m_options.device)
            setDottedKey(document, "train.device", *m_options.device);
        RunDocument run = parseRunDocument(document.dump(), "runs/" + member.name);
        // Jobs at once on a machine with several GPUs: each its own.
        const int gpus = jobs > 1 ? static_cast<int>(torch::cuda::device_count()) : 0;
        const std::string device = jobDevice(run.train.device, slot, gpus);
        run.train.device = device;
        const ResumeDecision decision = decideResume(directory, run);
        if (decision.kind == ResumeKind::Refused) {
            std::string differences;
            for (const ConfigIssue& issue : decision.differences)
                differences += (differences.empty() ? "" : "; ") + issue.text();
            throw std::runtime_error(directory.string() + " holds a run configured otherwise: " + differences);
        }
        StudyMemberObserver observer(*this, index, run.train.steps);
        TrainerOptions options;
        options.resume = decision.kind == ResumeKind::Continue;
        options.threads = threads;
        options.observers.push_back(&observer);
        options.cancelled = [&] { return stop.load() || m_stop.load(); };
        TrainSummary summary;
        {
            Trainer trainer(std::move(run), directory, options);
            observer.setTotalSteps(trainer.totalSteps());
            {
                std::lock_guard lock(m_mutex);
                for (StudyObserver* o : m_options.observers)
                    o->onMemberStarted(index, member, options.resume);
            }
            summary = trainer.run(control);
        }
        if (summary.outcome == TrainOutcome::Stopped) {
            stopped = true;
            result.status = MemberStatus::Stopped;
            std::lock_guard lock(m_mutex);
            for (StudyObserver* o : m_options.observers)
                o->onMemberStopped(index, summary.step);
            return result;
        }
        if (summary.outcome != TrainOutcome::Completed) {
            result.status = MemberStatus::Failed;
            result.error = summary.message;
            return result;
        }
        try {
            result.measures = measureMember(directory, device, threads, m_options.latencySteps);
        } catch (const std::exception& error) {
            result.status = MemberStatus::Failed;
            result.error = "trained, but measuring it failed: " + errorText(error);
            return result;
        }
        result.status = MemberStatus::Completed;
    } catch (const SetupCancelled&) {
        stopped = true;
        result.status = MemberStatus::Stopped;
    } catch (const std::exception& error) {
        result.status = MemberStatus::Failed;
        result.error = errorText(error);
    }
    return result;
}

std::map<std::string, double> measureMember(const std::filesystem::path& runDirectory, const std::string& device,
                                            std::optional<std::int64_t> threads, std::int64_t latencySteps)
{
    std::map<std::string, double> measures;
    const RunDocument run = readRunDocument(runDirectory);

    // metrics.jsonl: validation, throughput, memory, wall time over the sessions.
    std::ifstream in(runlayout::metricsFile(runDirectory), std::ios::binary);
    std::string line;
    double tokensSum = 0.0, wall = 0.0, segmentWall = 0.0, peak = 0.0;
    std::int64_t tokensCount = 0, steps = 0;
    std::optional<EvaluationResult> last;
    double bestLoss = INFINITY, bestAccuracy = -1.0, bestBleu = -1.0;
    while (std::getline(in, line)) {
        std::string reason;
        const auto record = decodeMetricsLine(line, &reason);
        if (!record)
            continue;
        if (record->type == MetricsRecord::Type::Train) {
            const TrainingSnapshot& s = record->train;
            tokensSum += s.tokensPerSecond;
            ++tokensCount;
            if (s.wallSeconds < segmentWall)  // a new session began
                wall += segmentWall;
            segmentWall = s.wallSeconds;
            // CUDA: the allocator's peak. CPU: the resident set at the snapshot, not the
            // process's high-water mark, which earlier members of the study would set.
            peak = std::max(peak, static_cast<double>(s.memoryKind == "cuda" ? s.memoryPeakBytes : s.memoryBytes));
            steps = std::max(steps, s.step);
        } else if (record->type == MetricsRecord::Type::Eval && record->eval.split == "validation") {
            last = record->eval;
            bestLoss = std::min(bestLoss, record->eval.loss);
            bestAccuracy = std::max(bestAccuracy, record->eval.accuracy);
            if (record->eval.translated > 0)
                bestBleu = std::max(bestBleu, record->eval.bleu);
            steps = std::max(steps, record->eval.step);
        }
    }
    wall += segmentWall;
    measures["steps"] = static_cast<double>(steps);
    if (tokensCount > 0)
        measures["train_tokens_per_s"] = tokensSum / static_cast<double>(tokensCount);
    if (peak > 0.0)
        measures["peak_memory_bytes"] = peak;
    measures["wall_s"] = wall;
    if (last) {
        measures["final_val_loss"] = last->loss;
        measures["final_val_accuracy"] = last->accuracy;
        measures["best_val_loss"] = bestLoss;
        measures["best_val_accuracy"] = bestAccuracy;
        if (last->translated > 0) {
            measures["final_val_bleu"] = last->bleu;
            measures["best_val_bleu"] = bestBleu;
        }
    }

    const ModelCost cost = modelCost(run.model);
    measures["stored_parameters"] = static_cast<double>(cost.total.stored);
    measures["active_parameters"] = static_cast<double>(cost.total.active);
    measures["flops_per_token"] = cost.flopsPerToken;

    // The test split at the best checkpoint, as `widelab-cli eval --split test --checkpoint best`.
    std::error_code error;
    const bool best = std::filesystem::is_regular_file(runlayout::bestCheckpointFile(runDirectory), error);
    // A translation run's test translations by the paper's search: beam 4, length penalty 0.6.
    const RunEvaluation test = evaluateRun(runDirectory, Split::Test, best ? "best" : "latest",
                                           device.empty() ? std::nullopt : std::optional<std::string>(device), threads,
                                           {}, kPaperBeamSize, kPaperLengthPenalty);
    measures["test_loss"] = test.result.loss;
    measures["test_accuracy"] = test.result.accuracy;
    if (test.result.translated > 0) {
        measures["test_bleu"] = test.result.bleu;
        measures["test_chrf"] = test.result.chrf;
    }

    BenchmarkOptions bench;
    bench.train = false;
    bench.batch = 1;
    bench.sequence = run.sequenceLength();
    bench.steps = std::max<std::int64_t>(1, latencySteps);
    bench.warmup = 3;
    bench.peakSize = 64;  // the peak is not reported here
    bench.everyRow = true;  // the work the papers timed, which the latency table sets beside theirs
    bench.device = test.device;
    const BenchmarkResult latency = runBenchmark(run.model, bench);
    measures["latency_ms"] = 1e3 * latency.medianStepSeconds;
    return measures;
}

}  // namespace widelab
