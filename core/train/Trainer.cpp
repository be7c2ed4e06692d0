#include "Trainer.h"

#include "CheckpointDirectory.h"
#include "ExpertShards.h"
#include "GradientHealth.h"
#include "HealthAlarms.h"
#include "Lamb.h"
#include "Measurements.h"
#include "MemoryEstimate.h"
#include "MetricsWriter.h"
#include "Optimizers.h"
#include "OutOfMemory.h"
#include "RunDirectory.h"
#include "RunLayout.h"
#include "RunLock.h"
#include "ResumeRule.h"
#include "RunSchedule.h"
#include "RunStatusWriter.h"
#include "Schedule.h"
#include "ValidationInsight.h"
#include "data/Batch.h"
#include "dist/Collective.h"
#include "dist/ExpertParallel.h"
#include "dist/GradientSync.h"
#include "dist/RankRandom.h"
#include "model/ParameterCount.h"
#include "task/ImageTask.h"
#include "log/RunLog.h"
#include "runtime/Clock.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Autocast.h"
#include "runtime/Runtime.h"

#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

namespace widelab {

namespace {

// A whole split of this many examples or more reports its evaluation's progress.
constexpr std::int64_t kEvaluationProgressFrom = 1000;

// Correct predictions and how many were counted ([2], on the device): classes for
// classification, next tokens at real positions for a language model.
torch::Tensor correct(const torch::Tensor& logits, const Batch& batch, bool languageModel)
{
    const torch::Tensor predicted = logits.argmax(-1);
    if (!languageModel) {
        const torch::Tensor hits = predicted.eq(batch.targets).sum().to(torch::kFloat64);
        return torch::stack({hits, torch::full_like(hits, static_cast<double>(batch.targets.size(0)))});
    }
    const torch::Tensor hits = predicted.eq(batch.targets).logical_and(batch.mask);
    return torch::stack({hits.sum().to(torch::kFloat64), batch.mask.sum().to(torch::kFloat64)});
}

// The mask the model is given: none for a full batch (every token real), so
// that it routes without gathering tokens and a language model's attention
// takes the kernel's causal rule; the batch's own mask still weighs the loss.
torch::Tensor modelMask(const Batch& batch)
{
    return !batch.mask.defined() || batch.tokens == batch.ids.numel() ? torch::Tensor() : batch.mask;
}

// Host tensors to the device; pinned and asynchronous for a GPU, so that the
// copy does not wait for the steps still queued there.
torch::Tensor upload(const torch::Tensor& tensor, const torch::Device& device)
{
    if (!device.is_cuda())
        return tensor;
    return tensor.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace

torch::Device trainingDevice(const std::string& name)
{
    if (!isDeviceName(name))  // a --device override skips the document's check
        throw ConfigError({{"train.device", "\"" + name + "\" is not auto, cpu, cuda or cuda:N"}});
    if (name == "cpu")
        return torch::kCPU;
    const bool cuda = torch::cuda::is_available();
    if (name == "auto")
        return cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    if (!cuda)
        throw ConfigError({{"train.device", "\"" + name + "\": this LibTorch has no usable CUDA device; use cpu or auto"}});
    const std::int64_t index = name.size() > 5 ? std::stoll(name.substr(5)) : 0;
    if (index >= static_cast<std::int64_t>(torch::cuda::device_count()))
        throw ConfigError({{"train.device", "\"" + name + "\": only " + std::to_string(torch::cuda::device_count())
                                                + " CUDA device(s) present"}});
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

// Sums over the steps since the last snapshot. They stay on the device and are
// read once per snapshot: reading a value from a GPU waits for it.
struct Trainer::Interval {
    double started = steadySeconds();
    torch::Tensor sums;        // [6]: loss, task, balance, hits, counted, gradient norm
    std::int64_t steps = 0, tokens = 0;
    std::int64_t resumedSteps = 0;  // of `steps`, those run before a resume (in the sums, not timed)
    ForwardTrace trace;        // routing of the interval's last, measured step
    // Distributed runs: this rank's time in its steps but for waiting on the
    // others, and the part of that wait after backward (the gradients).
    double computeSeconds = 0.0, allReduceWaitSeconds = 0.0;
};

Trainer::Trainer(RunDocument run, std::filesystem::path directory, TrainerOptions options)
    : m_run(std::move(run)), m_directory(std::move(directory)), m_options(std::move(options)),
      m_world(m_options.world), m_writes(!m_options.readOnly && (!m_world || m_world->rank() == 0))
{
    TrainConfig& train = m_run.train;
    if (m_options.steps)
        train.steps = *m_options.steps;
    if (m_options.device)
        train.device = *m_options.device;
    if (m_options.threads)
        train.threads = *m_options.threads;
    m_totalSteps = train.steps;
    if (!m_run.task.path.empty())
        m_run.task.path = std::filesystem::absolute(m_run.task.path).lexically_normal().string();
    if (m_world) {
        checkSameRunOnEveryRank();
        if (train.batchSize < m_world->size())
            throw ConfigError({{"train.batch_size", "the global batch of " + std::to_string(train.batchSize)
                                                        + " cannot be shared by " + std::to_string(m_world->size())
                                                        + " processes; use at least one example per process"}});
        if (train.expertParallel) {
            if (const std::string reason = ExpertParallel::unsplittableReason(m_run.model, m_world->size()); !reason.empty())
                throw ConfigError({{"train.expert_parallel", reason}});
        }
        // A machine's processes share its cores, and each takes its own GPU.
        if (train.threads == 0)
            train.threads = std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(m_world->world().localSize));
        if (train.device == "cuda" || (train.device == "auto" && torch::cuda::is_available()))
            train.device = "cuda:" + std::to_string(m_world->world().localRank);
    }
    m_device = trainingDevice(train.device);
    setComputeThreads(static_cast<int>(train.threads));
    if (!m_options.readOnly && !m_options.force) {
        if (const std::string shortfall = memoryShortfall(m_run, m_device); !shortfall.empty())
            throw InsufficientMemory(shortfall);
    }

    for (auto* observer : m_options.observers)
        addObserver(observer);
    std::filesystem::create_directories(runlayout::checkpointsDirectory(m_directory));
    if (m_writes)
        m_lock = std::make_unique<RunLock>(m_directory);
    m_checkpoints = std::make_unique<CheckpointDirectory>(m_directory, m_writes);
    // status.json, for windows following the run: who trains it, how far it got.
    m_status = std::make_unique<RunStatusWriter>(m_writes ? m_directory : std::filesystem::path(), m_totalSteps);
    addObserver(m_status.get());
    const bool hasRun = !m_checkpoints->stepFiles().empty();
    if (hasRun && !m_options.resume)
        throw CheckpointError(m_directory.string() + " already holds a run with checkpoints; continue it with --resume "
                                                     "or choose another directory");
    if (!hasRun && m_options.resume)
        throw CheckpointError(m_directory.string() + ": no checkpoint to resume from");

    m_log = std::make_unique<RunLog>(m_options.readOnly ? std::filesystem::path()
                                     : m_writes        ? runlayout::logFile(m_directory)
                                                       : runlayout::rankLogFile(m_directory, m_world->rank()));
    HealthAlarmOptions alarms;
    alarms.collapseShare = train.alarmExpertShare;
    m_alarms = std::make_unique<HealthAlarms>(alarms);
    for (const ConfigIssue& warning : m_run.warnings)
        message("warning", warning.text());
    for (const std::string& name : m_checkpoints->removeOrphans())
        message("info", "removed checkpoints/" + name + ", left by a save that was interrupted");
    if (m_writes)
        for (const std::string& name : removeInterruptedWrites(m_directory))
            message("info", "removed " + name + ", left by a write that was interrupted");
    if (m_options.resume && m_writes)
        checkResumedDocument();

    m_data = prepareTaskData({.run = m_run,
                              .directory = m_directory,
                              .resume = m_options.resume,
                              .probes = m_options.readOnly ? nullptr : &m_run.train.probes,
                              .progress = [this](const std::string& text) { message("info", text); },
                              .warn = [this](const std::string& text) { message("warning", text); },
                              .cancelled = m_options.cancelled});

    torch::manual_seed(static_cast<std::uint64_t>(train.seed));
    m_model = WideTransformer(m_run.model);
    // Every rank builds every expert from the seed, as one process does, and keeps its own.
    if (m_world && train.expertParallel)
        m_experts = ExpertParallel::split(*m_world, *m_model);
    try {
        m_model->to(m_device);
    } catch (const std::exception& error) {
        if (!isOutOfMemory(error))
            throw;
        releaseCachedDeviceMemory(m_device);
        throw std::runtime_error(outOfMemoryMessage("moving the model to " + m_device.str(), m_device, m_run.model,
                                                    train.batchSize, m_run.sequenceLength()));
    }
    std::vector<std::string> parameterNames;
    for (const auto& item : m_model->named_parameters())
        parameterNames.push_back(item.key());
    m_nonFinite = std::make_unique<NonFiniteWatch>(std::move(parameterNames));
    m_optimizer = makeOptimizer(train, *m_model);
    if (auto* lamb = dynamic_cast<Lamb*>(m_optimizer.get()); lamb && m_experts)
        lamb->shareNorms(shardedNorms());
    if (m_world) {
        m_gradients = std::make_unique<GradientSync>(*m_world, replicatedParameters());
        m_model->setSumOverRanks([this](torch::Tensor& counts) {
            m_world->sum(counts, "the routers' counts at step " + std::to_string(m_state.step + 1));
        });
    }
    m_sampler = std::make_unique<BatchSampler>(m_data.train->size(), train.batchSize, static_cast<std::uint64_t>(train.seed));

    m_interval = std::make_unique<Interval>();
    if (m_options.resume) {
        loadLatestCheckpoint();
        m_sampler->seek(m_state.samplerPosition);
        if (m_state.intervalSteps > 0 && m_state.intervalSums.size() == 6) {
            m_interval->sums = torch::tensor(m_state.intervalSums, torch::kFloat64).to(m_device);
            m_interval->steps = m_interval->resumedSteps = m_state.intervalSteps;
        }
    } else {
        m_state.scheduleSteps = m_totalSteps;
        if (m_run.train.probes.empty())
            m_run.train.probes.push_back(defaultProbeText());
    }
    if (!m_options.resume && m_writes) {
        // A new run: whatever an earlier, checkpoint-less attempt left goes.
        std::error_code ignored;
        std::filesystem::remove(runlayout::bestCheckpointFile(m_directory), ignored);
        writeFileAtomically(runlayout::configFile(m_directory), m_run.toJson().dump(2) + "\n");
        writeFileAtomically(runlayout::tokenizerFile(m_directory), m_data.tokenizer.toJson().dump() + "\n");
        writeFileAtomically(runlayout::labelsFile(m_directory), nlohmann::json(m_data.labels).dump() + "\n");
        if (m_data.imageStats)
            writeFileAtomically(runlayout::imageStatsFile(m_directory), m_data.imageStats->toJson().dump(2) + "\n");
    }
    if (m_options.resume && m_run.train.probes.empty())  // a run from before probes had a default
        keepProbe(defaultProbeText());
    // Written before the other observers hear of a line.
    m_metrics = std::make_unique<MetricsWriter>(m_writes ? runlayout::metricsFile(m_directory) : std::filesystem::path(),
                                                m_options.resume ? MetricsWriter::Start::Resumed
                                                                 : MetricsWriter::Start::NewRun,
                                                m_state.step);
    m_observers.insert(m_observers.begin(), m_metrics.get());
    message("info", "device " + m_device.str() + ", " + runtimeSummary() + ", " + std::to_string(m_data.train->size())
                        + " training examples");
    if (m_world)
        message("info", "rank " + std::to_string(m_world->rank()) + " of " + std::to_string(m_world->size()) + " ("
                            + (m_world->world().launcher.empty() ? "" : m_world->world().launcher + ", ")
                            + std::to_string(m_gradients->buckets()) + " gradient buckets)");
    if (m_experts) {
        std::int64_t held = 0;
        for (const torch::Tensor& p : m_model->parameters())
            held += p.numel();
        message("info", "this rank holds experts " + std::to_string(m_experts->first()) + "-"
                            + std::to_string(m_experts->first() + m_experts->count() - 1) + " of "
                            + std::to_string(m_experts->experts()) + " in each mixture layer: "
                            + std::to_string(held) + " of the model's " + std::to_string(modelCost(m_run.model).total.stored)
                            + " parameters");
    } else if (train.expertParallel && !m_options.readOnly) {
        message("info", "train.expert_parallel: one process holds every expert");
    }
}

std::vector<torch::Tensor> Trainer::replicatedParameters() const
{
    std::vector<torch::Tensor> replicated;
    for (const torch::Tensor& p : m_model->parameters())
        if (!m_experts || !m_experts->holds(p))
            replicated.push_back(p);
    return replicated;
}

ShardedNorms Trainer::shardedNorms() const
{
    ShardedNorms norms;
    norms.holds = [experts = m_experts](const torch::Tensor& p) { return experts->holds(p); };
    norms.sumOverRanks = [this](torch::Tensor& squares) {
        m_experts->sum(squares, "the experts' norms at step " + std::to_string(m_state.step + 1));
    };
    return norms;
}

// Every rank must train the same run with the same program: the resolved
// documents (but for where each rank runs) and the versions are compared.
void Trainer::checkSameRunOnEveryRank()
{
    nlohmann::json document = m_run.toJson();
    document["train"].erase("device");
    document["train"].erase("threads");
    const std::string program = std::string("WideLab ") + WIDELAB_VERSION + ", LibTorch " + TORCH_VERSION;
    const std::vector<std::string> programs = m_world->gather("program", program);
    const std::vector<std::string> documents = m_world->gather("document", document.dump());
    for (int r = 0; r < m_world->size(); ++r) {
        if (programs[static_cast<std::size_t>(r)] != programs.front())
            throw CollectiveError("rank " + std::to_string(r) + " runs " + programs[static_cast<std::size_t>(r)]
                                  + ", rank 0 " + programs.front() + ": start every rank with the same program");
        if (documents[static_cast<std::size_t>(r)] != documents.front()) {
            std::string keys;
            for (const std::string& key : differingKeys(nlohmann::json::parse(documents.front()),
                                                        nlohmann::json::parse(documents[static_cast<std::size_t>(r)])))
                keys += (keys.empty() ? "" : ", ") + key;
            throw CollectiveError("rank " + std::to_string(r) + " was given another run document than rank 0 (they "
                                  "differ in " + keys + "): start every rank with the same document");
        }
    }
}

double Trainer::fromRankZero(double value, const std::string& what)
{
    if (!m_world)
        return value;
    torch::Tensor shared = torch::full({1}, m_world->rank() == 0 ? value : 0.0, torch::kFloat64);
    m_world->sum(shared, "sharing " + what);
    return shared.item<double>();
}

bool Trainer::stopRequested(const TrainingControl& control)
{
    if (!m_world)
        return control.stopRequested();
    torch::Tensor asked = torch::full({1}, control.stopRequested() ? 1.0 : 0.0, torch::kFloat64);
    m_world->sum(asked, "agreeing on a stop before step " + std::to_string(m_state.step + 1));
    return asked.item<double>() > 0.0;
}

Trainer::~Trainer() = default;

// Resuming continues the run as it was configured: the one rule (ResumeRule.h)
// refuses a document that differs in anything but its length, device, threads
// and probes, naming the keys. A new length is written back.
void Trainer::checkResumedDocument()
{
    const ResumeDecision decision = decideResume(m_directory, m_run);
    if (decision.kind == ResumeKind::NewRun)  // checkpoints without a config.json
        throw DataError(decision.reason);
    if (decision.kind == ResumeKind::Refused) {
        std::vector<ConfigIssue> issues = decision.differences;
        for (ConfigIssue& issue : issues)
            issue.reason += "; resume without a configuration to continue the run as it was configured, or train "
                            "into another directory";
        throw ConfigError(std::move(issues));
    }
    const RunDocument& saved = decision.saved;
    if (saved.train.steps != m_run.train.steps) {
        message("info", "the run now lasts " + std::to_string(m_run.train.steps) + " steps (was "
                            + std::to_string(saved.train.steps) + ")");
        nlohmann::json updated = saved.toJson();
        updated["train"]["steps"] = m_run.train.steps;
        writeFileAtomically(runlayout::configFile(m_directory), updated.dump(2) + "\n");
    }
    // Probes do not change training: the run keeps its own and gains the document's new ones.
    m_run.train.probes = addProbeTexts(m_directory, m_run.train.probes);
}

// The requested checkpoint; for "latest", the newest one that can be read (see
// CheckpointDirectory::load), each one passed over said as a warning.
void Trainer::loadLatestCheckpoint()
{
    if (m_experts)  // the checkpoint holds every expert
        widenExperts(*m_experts);
    const LoadedCheckpoint loaded = m_checkpoints->load(m_options.checkpoint, *m_model, m_optimizer.get(),
                                                        [this](const std::string& text) { message("warning", text); });
    if (m_experts)
        keepOwnExperts(*m_experts, m_optimizer.get());
    m_state = loaded.state;
    if (loaded.file.filename() != std::filesystem::path(runlayout::kBestCheckpoint))
        m_savedStep = m_state.step;
    if (!m_options.readOnly)
        message("info", "resumed from " + loaded.file.filename().string() + " at step " + std::to_string(m_state.step));
    if (const std::int64_t processes = m_world ? m_world->size() : 1; !m_options.readOnly && m_state.worldSize != processes)
        message("info", "the run trained on " + std::to_string(m_state.worldSize) + " process"
                            + (m_state.worldSize == 1 ? "" : "es") + " and continues on " + std::to_string(processes)
                            + ": each batch is shared anew (the same batches; dropout and router noise draw otherwise)");
    if (!m_options.readOnly) {
        if (const auto change = scheduleChange(m_run.train, m_state.step, m_state.scheduleSteps))
            message("warning", change->text());
    }
    m_state.scheduleSteps = m_totalSteps;
}

Batch Trainer::makeDeviceBatch(const std::vector<Example>& examples, bool training, std::int64_t first) const
{
    const bool languageModel = m_run.model.head == HeadKind::LanguageModel;
    Batch batch;
    if (m_data.imageStats) {
        // Augmentation from (train.seed, step): a resumed run draws the same crops and flips.
        const ImageAugmentation augment{m_run.task.cropPadding, m_run.task.flip,
                                        mixSeed(mixSeed(static_cast<std::uint64_t>(m_run.train.seed), 0x1a6e),
                                                static_cast<std::uint64_t>(m_state.step)),
                                        first};
        batch = makeImageBatch(examples, imageFormat(m_run.model), *m_data.imageStats, training ? &augment : nullptr);
        batch.tokens *= m_run.model.positions();
        batch.pixels = upload(batch.pixels, m_device);
    } else {
        batch = makeBatch(examples, languageModel);
        batch.ids = upload(batch.ids, m_device);
        batch.mask = upload(batch.mask, m_device);
    }
    batch.targets = upload(batch.targets, m_device);
    return batch;
}

void Trainer::addObserver(TrainingObserver* observer) { m_observers.push_back(observer); }

void Trainer::message(const std::string& level, const std::string& text)
{
    m_log->write(level, text);
    for (auto* observer : m_observers)
        observer->onMessage(level, text);
}

TrainSummary Trainer::run(const std::atomic<bool>& stop)
{
    TrainingControl control(&stop);
    return run(control);
}

// Checkpoints and probes asked for from another thread. Their time, like a
// pause's, is not training time.
void Trainer::serveRequests(TrainingControl& control, Interval& interval)
{
    const double start = steadySeconds();
    if (control.takeCheckpointRequest())
        saveCheckpoint();
    for (const TrainingControl::ProbeRequest& request : control.takeProbeRequests()) {
        try {
            probe(request.text);
            if (request.keep)
                keepProbe(request.text);
        } catch (const std::exception& error) {
            message("warning", std::string("probe skipped: ") + error.what());
        }
    }
    interval.started += steadySeconds() - start;
}

TrainSummary Trainer::run(TrainingControl& control)
{
    m_startSeconds = steadySeconds();
    m_control = &control;
    struct Release {
        const TrainingControl*& control;
        ~Release() { control = nullptr; }
    } release{m_control};
    const TrainConfig& t = m_run.train;
    TrainSummary summary;
    Interval& interval = *m_interval;
    interval.started = steadySeconds();
    // A non-finite step ends the run without saving: the last good checkpoint stays.
    auto stopped = [&](const std::domain_error& error) {
        summary.outcome = TrainOutcome::NonFinite;
        summary.message = error.what();
        summary.step = m_state.step;
        message("error", summary.message);
        m_status->ended(RunState::Failed, m_state.step, summary.message);
        return summary;
    };
    // Out of memory ends the run without saving either (an optimizer step may
    // have been cut short): the run and its last checkpoint stay as they were.
    auto outOfMemory = [&](const std::string& where) {
        releaseCachedDeviceMemory(m_device);
        summary.outcome = TrainOutcome::OutOfMemory;
        summary.message = outOfMemoryMessage(where, m_device, m_run.model, t.batchSize, m_run.sequenceLength())
                          + "; the run and its last checkpoint"
                          + (m_savedStep >= 0 ? " (step " + std::to_string(m_savedStep) + ")" : std::string())
                          + " are kept";
        summary.step = m_state.step;
        message("error", summary.message);
        m_status->ended(RunState::Failed, m_state.step, summary.message);
        return summary;
    };
    // On a GPU, steps between measured ones are checked only before anything is saved.
    auto unsavedStepsNonFinite = [&]() -> std::optional<std::domain_error> {
        if (!m_device.is_cuda() || interval.steps == 0)
            return std::nullopt;
        try {
            stopIfNonFinite();
        } catch (const std::domain_error& error) {
            return error;
        }
        return std::nullopt;
    };
    m_status->training(m_state.step);
    if (m_state.step == 0)  // the untrained model, where the views' replay starts
        probeAll();
    while (m_state.step < m_totalSteps) {
        if (control.hasRequests() || control.paused()) {
            if (auto error = unsavedStepsNonFinite())
                return stopped(*error);
            serveRequests(control, interval);
            if (control.paused()) {
                message("info", "paused at step " + std::to_string(m_state.step));
                for (auto* observer : m_observers)
                    observer->onPaused(m_state.step);
                m_status->paused(m_state.step);
                const double pauseStart = steadySeconds();
                while (control.paused() && !control.stopRequested()) {
                    control.waitWhilePaused();
                    serveRequests(control, interval);
                }
                interval.started += steadySeconds() - pauseStart;
                if (!control.stopRequested()) {
                    message("info", "resumed at step " + std::to_string(m_state.step));
                    m_status->training(m_state.step);
                }
            }
        }
        if (stopRequested(control)) {
            summary.outcome = TrainOutcome::Stopped;
            break;
        }
        const bool measure = (m_state.step + 1) % t.logEvery == 0 || m_state.step + 1 == m_totalSteps;
        try {
            trainStep(interval, measure);
        } catch (const std::domain_error& error) {
            return stopped(error);  // the last good checkpoint stays as it is
        } catch (const std::exception& error) {
            if (!isOutOfMemory(error))
                throw;
            return outOfMemory("training step " + std::to_string(m_state.step + 1));
        }
        if (measure)
            publish(interval);
        m_status->progress(m_state.step);
        const bool saving = m_state.step % t.evalEvery == 0 || m_state.step == m_totalSteps
                            || m_state.step % t.checkpointEvery == 0;
        if (saving) {
            if (auto error = unsavedStepsNonFinite())
                return stopped(*error);
        }
        const double pauseStart = steadySeconds();
        if (m_state.step % t.evalEvery == 0 || m_state.step == m_totalSteps) {
            try {
                const EvaluationResult result = evaluate(Split::Validation, t.evalBatches);
                char line[160];
                std::snprintf(line, sizeof line, "validation at step %lld: loss %.4f, accuracy %.1f%%",
                              static_cast<long long>(result.step), result.loss, 100.0 * result.accuracy);
                std::string text = line;
                if (result.perplexity > 0.0) {
                    std::snprintf(line, sizeof line, ", perplexity %.2f", result.perplexity);
                    text += line;
                }
                message("info", text);
                measureInsights();
                // Every rank decides alike (each saves its part): on rank 0's loss,
                // which an expert-parallel rank may compute in other last bits.
                const double loss = fromRankZero(result.loss, "the validation loss at step " + std::to_string(m_state.step));
                if (loss < m_state.bestValidationLoss) {
                    m_state.bestValidationLoss = loss;
                    writeCheckpoint(runlayout::bestCheckpointFile(m_directory));
                }
            } catch (const Interrupted&) {
                summary.outcome = TrainOutcome::Stopped;
                break;
            } catch (const std::exception& error) {
                if (!isOutOfMemory(error))
                    throw;
                return outOfMemory("the validation at step " + std::to_string(m_state.step));
            }
        }
        if (m_state.step % t.checkpointEvery == 0)
            saveCheckpoint();
        const std::int64_t probeEvery = t.probeEvery > 0 ? t.probeEvery : t.evalEvery;
        if (m_state.step % probeEvery == 0 || m_state.step == m_totalSteps)
            probeAll();
        interval.started += steadySeconds() - pauseStart;  // not training time
    }
    if (auto error = unsavedStepsNonFinite())
        return stopped(*error);
    // Steps since the last snapshot are shown too, so the curves reach the stop. A
    // stopped run keeps them for its checkpoint, not metrics.jsonl: resumed, it
    // writes the lines an uninterrupted run writes.
    if (interval.steps > 0)
        publish(interval, /*record=*/summary.outcome != TrainOutcome::Stopped);
    if (m_savedStep != m_state.step)  // not when the last step's checkpoint is already written
        saveCheckpoint();
    summary.step = m_state.step;
    summary.message = summary.outcome == TrainOutcome::Stopped ? "stopped at step " + std::to_string(m_state.step)
                                                                : "completed " + std::to_string(m_state.step) + " steps";
    message("info", summary.message);
    m_status->ended(summary.outcome == TrainOutcome::Stopped ? RunState::Stopped : RunState::Finished, m_state.step,
                    summary.message);
    return summary;
}

void Trainer::trainStep(Interval& interval, bool measure)
{
    const double stepStart = steadySeconds();
    const double waitedBefore = m_world ? m_world->waitedSeconds() : 0.0;
    const TrainConfig& t = m_run.train;
    const bool languageModel = m_run.model.head == HeadKind::LanguageModel;
    const double lr = learningRate(scheduleOptions(t, m_totalSteps), m_state.step);
    applyLearningRate(*m_optimizer, lr);

    std::vector<std::int64_t> indices = m_sampler->next();
    std::int64_t first = 0;
    if (m_world) {  // this rank's share of the global batch: consecutive, sizes within one of each other
        first = shareBegin(static_cast<std::int64_t>(indices.size()), m_world->rank(), m_world->size());
        indices = shareOf(indices, m_world->rank(), m_world->size());
    }
    std::vector<Example> examples;
    for (const std::int64_t index : indices)
        examples.push_back(m_data.train->get(index));
    const Batch batch = makeDeviceBatch(examples, /*training=*/true, first);
    const torch::Tensor& input = batch.pixels.defined() ? batch.pixels : batch.ids;
    // A distributed step's loss is this rank's part of the global batch's mean:
    // its mean weighted by its share of what the loss averages over (examples,
    // or a language model's counted tokens), so that the gradients summed over
    // the ranks are those of one process's step on the whole batch.
    double share = 1.0;
    std::int64_t tokens = batch.tokens;
    if (m_world) {
        const double terms = languageModel && batch.mask.defined() ? batch.mask.sum().item<double>()
                             : languageModel                       ? static_cast<double>(batch.targets.numel())
                                                                   : static_cast<double>(examples.size());
        torch::Tensor counts = torch::tensor({terms, static_cast<double>(batch.tokens)}, torch::kFloat64);
        m_world->sum(counts, "counting the batch of step " + std::to_string(m_state.step + 1));
        share = counts[0].item<double>() > 0.0 ? terms / counts[0].item<double>() : 0.0;
        tokens = static_cast<std::int64_t>(counts[1].item<double>());
        m_gradients->beginStep(m_state.step);
    }

    m_model->train();
    m_model->beginStep(m_state.step);
    // Gradients reset to none, not to zeros: the backward pass then writes them
    // instead of adding to zero-filled ones (LibTorch 2.x's default, 1.13's
    // optimizer would zero them: a fill and an add per parameter every step).
    clearGradients(m_model->parameters());
    ForwardTrace& trace = interval.trace;
    trace.captureAttention = false;
    const torch::Tensor mask = modelMask(batch);
    ModelOutput output;
    {
        // Distributed: dropout and router noise from this rank's stream for the step.
        std::optional<RankRandom> rankStream;
        if (m_world)
            rankStream.emplace(m_device, mixSeed(mixSeed(mixSeed(static_cast<std::uint64_t>(t.seed), 0xd157),
                                                         static_cast<std::uint64_t>(m_state.step)),
                                                 static_cast<std::uint64_t>(m_world->rank())));
        const AutocastScope bf16(m_device.type(), torch::kBFloat16, m_device.is_cuda() && t.bf16);
        output = measure && m_run.model.isMoe() ? m_model->inspect(input, mask, trace)
                                                : m_model->forward(input, mask);
    }
    const torch::Tensor task = taskLoss(m_run.model, output.logits, batch.targets, batch.mask, t.labelSmoothing)
                               * share;
    const torch::Tensor loss = trainingLoss(m_run.model, task, output);
    // Counted now, so that a language model's [tokens, vocabulary] logits are
    // not held through the backward pass, whose peak they would raise.
    const torch::Tensor hits = correct(output.logits.detach(), batch, languageModel);
    output.logits = torch::Tensor();
    loss.backward();
    if (m_gradients)
        m_gradients->finish();
    const ShardedNorms sharded = m_experts ? shardedNorms() : ShardedNorms{};
    const GradientNorms norms = clipGradients(m_model->parameters(), t.gradientClip, m_experts ? &sharded : nullptr);
    m_nonFinite->observe(m_state.step + 1, loss, norms);

    // On the CPU every step is checked before the update (it costs nothing). On a
    // GPU the check waits for the step, so it runs on measured steps and before
    // anything is saved; a bad step in between is found there, by its number.
    if (!m_device.is_cuda() || measure)
        stopIfNonFinite();
    m_optimizer->step();
    ++m_state.step;
    m_state.samplerPosition = m_sampler->position();

    torch::Tensor stepSums = torch::cat({torch::stack({loss.detach().to(torch::kFloat64),
                                                       task.detach().to(torch::kFloat64),
                                                       output.balanceLoss.detach().to(torch::kFloat64)}),
                                         hits,
                                         norms.total.view({1}) / (m_world ? m_world->size() : 1)});
    if (m_world)  // the ranks' parts of the losses, their counts, and the norm they share
        m_world->sum(stepSums, "summing the losses of step " + std::to_string(m_state.step));
    interval.sums = interval.steps == 0 ? stepSums : interval.sums + stepSums;
    interval.tokens += tokens;
    if (m_world) {
        interval.computeSeconds += steadySeconds() - stepStart - (m_world->waitedSeconds() - waitedBefore);
        interval.allReduceWaitSeconds += m_gradients->exposedSeconds();
    }
    ++interval.steps;
}

void Trainer::stopIfNonFinite()
{
    if (const auto problem = m_nonFinite->firstProblem())
        throw std::domain_error(*problem + "; training stopped, the last checkpoint is intact");
}

void Trainer::publish(Interval& interval, bool recorded)
{
    const double measureStart = steadySeconds();
    const double elapsed = measureStart - interval.started;
    const double steps = static_cast<double>(std::max<std::int64_t>(1, interval.steps));
    const double timedSteps = static_cast<double>(std::max<std::int64_t>(1, interval.steps - interval.resumedSteps));
    const torch::Tensor sumsOnHost = interval.sums.to(torch::kCPU);
    const double* sums = sumsOnHost.data_ptr<double>();  // loss, task, balance, hits, counted, gradient norm
    TrainingSnapshot s;
    s.step = m_state.step;
    s.wallSeconds = measureStart - m_startSeconds;
    s.loss = sums[0] / steps;
    s.taskLoss = sums[1] / steps;
    s.balanceLoss = sums[2] / steps;
    s.accuracy = sums[4] > 0 ? sums[3] / sums[4] : 0.0;
    s.gradientNorm = sums[5] / steps;
    s.learningRate = learningRate(scheduleOptions(m_run.train, m_totalSteps), m_state.step - 1);
    s.stepSeconds = elapsed / timedSteps;
    s.tokensPerSecond = elapsed > 0.0 ? static_cast<double>(interval.tokens) / elapsed : 0.0;
    const DeviceMemory memory = deviceMemory(m_device);
    s.memoryKind = memory.cuda ? "cuda" : "rss";
    s.memoryBytes = memory.allocated;
    s.memoryReservedBytes = memory.reserved;
    s.memoryPeakBytes = memory.peakAllocated;
    s.memoryPeakReservedBytes = memory.peakReserved;
    if (m_world) {  // every rank's pace and peak, each in its own place of the sum
        const int W = m_world->size(), r = m_world->rank();
        torch::Tensor ranks = torch::zeros({2 * W}, torch::kFloat64);
        ranks[r] = interval.computeSeconds / timedSteps;
        ranks[W + r] = static_cast<double>(s.memoryPeakBytes);
        m_world->sum(ranks, "gathering each rank's step time at step " + std::to_string(m_state.step));
        const double* values = ranks.data_ptr<double>();
        s.world.size = W;
        s.world.computeSeconds.assign(values, values + W);
        for (int i = 0; i < W; ++i)
            s.world.peakBytes.push_back(static_cast<std::int64_t>(values[W + i]));
        s.world.allReduceWaitSeconds = interval.allReduceWaitSeconds / timedSteps;
    }

    if (m_run.model.isMoe())
        s.routing = routingStats(interval.trace, m_run.model.experts);
    std::vector<torch::Tensor> gammas, betas, attentionGammas, attentionBetas;
    for (const BlockNorms& norms : m_model->blockNorms()) {
        s.attentionGamma.push_back(toFloats(norms.attentionGamma));
        s.attentionBeta.push_back(toFloats(norms.attentionBeta));
        s.ffnGamma.push_back(toFloats(norms.ffnGamma));
        s.ffnBeta.push_back(toFloats(norms.ffnBeta));
        gammas.push_back(norms.ffnGamma.detach());
        betas.push_back(norms.ffnBeta.detach());
        attentionGammas.push_back(norms.attentionGamma.detach());
        attentionBetas.push_back(norms.attentionBeta.detach());
    }
    s.divergence = layerNormDivergence(torch::stack(gammas), torch::stack(betas));
    s.attentionDivergence = layerNormDivergence(torch::stack(attentionGammas), torch::stack(attentionBetas));
    s.paths = pathWeights(*m_model);
    if (recorded) {
        s.alarms = m_alarms->update(s.routing, m_run.model.learnablePathWeights ? s.paths : std::vector<PathWeights>{},
                                    m_state.step);
        for (const HealthEvent& alarm : s.alarms)
            message(alarm.level, alarm.text);
    }
    s.measurementSeconds = steadySeconds() - measureStart;

    s.provisional = !recorded;
    for (auto* observer : m_observers)
        observer->onSnapshot(s);
    if (recorded)
        interval = Interval{};
}

CheckpointState Trainer::stateToSave() const
{
    CheckpointState state = m_state;
    state.worldSize = m_world ? m_world->size() : 1;
    state.intervalSums.clear();
    state.intervalSteps = m_interval->steps;
    if (m_interval->steps > 0) {
        const torch::Tensor sums = m_interval->sums.to(torch::kCPU, torch::kFloat64).contiguous();
        state.intervalSums.assign(sums.data_ptr<double>(), sums.data_ptr<double>() + sums.numel());
    }
    return state;
}

EvaluationResult Trainer::evaluate(Split split, std::int64_t maxBatches, bool reportProgress)
{
    const EvaluationResult result = measure(split, maxBatches, {}, reportProgress);
    for (auto* observer : m_observers)
        observer->onEvaluation(result);
    return result;
}

EvaluationResult Trainer::evaluateAblated(Split split, std::int64_t maxBatches, const std::vector<Ablation>& ablations)
{
    return measure(split, maxBatches, ablations);
}

EvaluationResult Trainer::measure(Split split, std::int64_t maxBatches, const std::vector<Ablation>& ablations,
                                  bool reportProgress)
{
    Dataset& data = split == Split::Test ? *m_data.test : *m_data.validation;
    const bool languageModel = m_run.model.head == HeadKind::LanguageModel;
    const std::int64_t batchSize = m_run.train.batchSize;
    torch::NoGradGuard noGrad;
    m_model->eval();
    EvaluationResult result;
    result.step = m_state.step;
    result.split = toString(split);
    double lossSum = 0.0, weightSum = 0.0, hits = 0.0, counted = 0.0;
    std::int64_t batches = 0;
    std::int64_t reportedTenths = 0;
    for (std::int64_t start = 0; start < data.size(); start += batchSize) {
        if (maxBatches > 0 && batches++ >= maxBatches)
            break;
        // A distributed run evaluates to the end: its ranks agree on stopping between steps.
        if (m_control != nullptr && !m_world && m_control->stopRequested())
            throw Interrupted{};
        std::vector<Example> examples;
        for (std::int64_t i = start; i < std::min(data.size(), start + batchSize); ++i)
            examples.push_back(data.get(i));
        const Batch batch = makeDeviceBatch(examples, /*training=*/false);  // never augmented
        const torch::Tensor& input = batch.pixels.defined() ? batch.pixels : batch.ids;
        ModelOutput output;
        if (ablations.empty()) {
            output = m_model->forward(input, modelMask(batch));
        } else {
            ForwardTrace trace;
            trace.captureAttention = trace.captureRouting = false;
            trace.ablations = ablations;
            output = m_model->inspect(input, modelMask(batch), trace);
        }
        const torch::Tensor counts = correct(output.logits, batch, languageModel).to(torch::kCPU);
        const double h = counts[0].item<double>(), c = counts[1].item<double>();
        const double weight = languageModel ? c : static_cast<double>(examples.size());
        lossSum += taskLoss(m_run.model, output.logits, batch.targets, batch.mask).item<double>() * weight;
        weightSum += weight;
        hits += h;
        counted += c;
        result.examples += static_cast<std::int64_t>(examples.size());
        // A long evaluation says how far it has come, at each tenth.
        const std::int64_t tenths = result.examples * 10 / data.size();
        if (reportProgress && data.size() >= kEvaluationProgressFrom && tenths > reportedTenths) {
            reportedTenths = tenths;
            message("info", "evaluating the " + result.split + " split: " + std::to_string(10 * tenths) + "% ("
                                + std::to_string(result.examples) + " of " + std::to_string(data.size())
                                + " examples)");
        }
    }
    result.loss = weightSum > 0 ? lossSum / weightSum : 0.0;
    result.accuracy = counted > 0 ? hits / counted : 0.0;
    result.perplexity = languageModel ? std::exp(result.loss) : 0.0;
    return result;
}

// Head roles and expert specialisation on the first validation examples and the
// probes (ValidationInsight.h), to metrics.jsonl and the observers.
void Trainer::measureInsights()
{
    constexpr std::int64_t kSample = 32;
    InsightInputs inputs;
    const std::int64_t chunk = insightChunkSize(m_run.model, m_run.model.positions());
    std::vector<Example> examples;
    for (std::int64_t i = 0; i < std::min(kSample, m_data.validation->size()); ++i) {
        examples.push_back(m_data.validation->get(i));
        if (static_cast<std::int64_t>(examples.size()) == chunk) {
            inputs.sample.push_back(makeDeviceBatch(examples, /*training=*/false));
            examples.clear();
        }
    }
    if (!examples.empty())
        inputs.sample.push_back(makeDeviceBatch(examples, /*training=*/false));
    for (const std::string& text : m_run.train.probes) {
        try {
            if (m_data.imageStats) {
                std::int64_t label = -1;
                inputs.probes.push_back(imageTensor(probeImage(text, m_data.validation.get(), imageFormat(m_run.model), label),
                                                    *m_data.imageStats));
            } else {
                std::vector<std::int64_t> ids = m_data.tokenizer.encode(text);
                if (static_cast<std::int64_t>(ids.size()) > m_run.sequenceLength())
                    ids.resize(static_cast<std::size_t>(m_run.sequenceLength()));
                if (!ids.empty())
                    inputs.probes.push_back(torch::tensor(ids, torch::kLong).unsqueeze(0));
            }
        } catch (const std::exception&) {
            // probeAll says why a probe cannot be read
        }
    }
    if (!m_data.imageStats)
        inputs.tokenText = [this](std::int64_t id) { return m_data.tokenizer.tokenText(id); };
    if (m_run.model.head == HeadKind::Classification)
        inputs.classNames = m_data.labels;
    const ValidationInsights insights = measureValidationInsights(
        *m_model, inputs, m_state.step, static_cast<std::uint64_t>(m_run.train.seed) + static_cast<std::uint64_t>(m_state.step));
    for (auto* observer : m_observers)
        observer->onValidationInsights(insights);
}

// Every probe text of the run; one that cannot be probed is skipped with a warning.
void Trainer::probeAll()
{
    for (const std::string& text : m_run.train.probes) {
        try {
            probe(text);
        } catch (const std::exception& error) {
            message("warning", std::string("probe skipped: ") + error.what());
        }
    }
}

// A short validation example, so that a run shows attention and routing on its
// own kind of text before the user types one: the shortest of the first few,
// cut to a length whose attention maps stay readable.
std::string Trainer::defaultProbeText() const
{
    if (m_data.imageStats)
        return "validation:0";
    constexpr std::int64_t kCandidates = 64;
    constexpr std::size_t kMaxTokens = 40;
    std::vector<std::int64_t> best;
    for (std::int64_t i = 0; i < std::min(kCandidates, m_data.validation->size()); ++i) {
        std::vector<std::int64_t> ids = m_data.validation->get(i).ids;
        if (i == 0 || ids.size() < best.size())
            best = std::move(ids);
    }
    // Byte tokens: a window of UTF-8 text may start inside a character, and the
    // cut must not end inside one (at most three continuation bytes follow a lead).
    const bool bytes = m_data.tokenizer.kind() == TokenizerKind::Byte;
    auto continuation = [&](std::int64_t id) {
        const std::int64_t byte = id - Tokenizer::kFirstToken;
        return bytes && byte >= 0x80 && byte < 0xc0;
    };
    std::size_t begin = 0;
    while (begin < 3 && begin + 1 < best.size() && continuation(best[begin]))
        ++begin;
    std::size_t end = std::min(best.size(), begin + kMaxTokens);
    std::size_t lead = end;  // the last character's first byte, if it is among the last four
    while (lead > begin && end - lead < 4 && continuation(best[lead - 1]))
        --lead;
    if (bytes && lead > begin && end - lead < 4) {
        const std::int64_t first = best[lead - 1] - Tokenizer::kFirstToken;
        const std::size_t length = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
        if (lead - 1 + length > end && lead - 1 > begin)
            end = lead - 1;  // that character does not fit: cut before it
    }
    return m_data.tokenizer.decode({best.begin() + static_cast<std::ptrdiff_t>(begin),
                                best.begin() + static_cast<std::ptrdiff_t>(end)});
}

// A probe the user asked the run to keep: inspected with the others from now
// on, and written into config.json so that it stays with the run.
void Trainer::keepProbe(const std::string& text)
{
    std::vector<std::string>& probes = m_run.train.probes;
    if (!m_writes) {  // read-only, or another rank than the one that writes the run
        if (std::find(probes.begin(), probes.end(), text) == probes.end())
            probes.push_back(text);
        return;
    }
    probes = addProbeTexts(m_directory, {text});
}

namespace {

// The class of the validation example whose whole text `text` is, among the
// first few that the default probe is chosen from; -1 when it is none of them
// (a typed text, a cut example, a language model's text).
std::int64_t knownLabel(const Dataset& validation, const Tokenizer& tokenizer, const std::string& text)
{
    constexpr std::int64_t kCandidates = 64;  // as defaultProbeText
    for (std::int64_t i = 0; i < std::min(kCandidates, validation.size()); ++i) {
        const Example example = validation.get(i);
        if (example.label >= 0 && tokenizer.decode(example.ids) == text)
            return example.label;
    }
    return -1;
}

}  // namespace

ProbeResult Trainer::probe(const std::string& text)
{
    ProbeResult result;
    if (m_data.imageStats) {
        std::int64_t label = -1;
        const Image image = probeImage(text, m_data.validation.get(), imageFormat(m_run.model), label);
        result = probeImageModel(*m_model, m_data.labels, image, *m_data.imageStats, text);
        result.label = label;
    } else {
        result = probeModel(*m_model, m_data.tokenizer, m_data.labels, text, m_run.sequenceLength());
    }
    result.step = m_state.step;
    if (!result.prediction.empty() && !m_data.imageStats) {
        const std::int64_t label = knownLabel(*m_data.validation, m_data.tokenizer, text);
        if (label >= 0 && label < static_cast<std::int64_t>(result.prediction.size()))
            result.label = label;
    }
    for (auto* observer : m_observers)
        observer->onProbe(result);
    return result;
}

void Trainer::writeCheckpoint(const std::filesystem::path& file)
{
    std::optional<GatheredExperts> gathered;
    if (m_experts)
        gathered.emplace(*m_experts, *m_optimizer);
    if (m_writes)  // not another rank of a distributed run: rank 0 writes it
        widelab::saveCheckpoint(file, *m_model, *m_optimizer, stateToSave());
}

void Trainer::saveCheckpoint()
{
    const std::filesystem::path file = m_checkpoints->stepFile(m_state.step);
    writeCheckpoint(file);
    if (!m_writes) {
        m_savedStep = m_state.step;
        return;
    }
    m_checkpoints->written(file);
    m_savedStep = m_state.step;
    m_checkpoints->prune(m_run.train.keepLast, [this](const std::string& text) { message("warning", text); });
    message("info", "checkpoint " + file.filename().string());
    // Before the disk is full: a save needs room for a whole new file.
    std::error_code sizeError;
    if (const auto bytes = std::filesystem::file_size(file, sizeError); !sizeError)
        if (const auto warning = m_checkpoints->lowSpaceWarning(bytes))
            message("warning", *warning);
}

}  // namespace widelab
