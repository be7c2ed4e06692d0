#include "Trainer.h"

#include "run/CheckpointDirectory.h"
#include "run/ExpertShards.h"
#include "FusedAdamW.h"
#include "GradientHealth.h"
#include "measure/HealthAlarms.h"
#include "InitFrom.h"
#include "Lamb.h"
#include "MemoryEstimate.h"
#include "run/MetricsWriter.h"
#include "Optimizers.h"
#include "OutOfMemory.h"
#include "run/RunDirectory.h"
#include "run/RunLayout.h"
#include "run/RunLock.h"
#include "run/ResumeRule.h"
#include "run/RunStatusWriter.h"
#include "Schedule.h"
#include "StepGraphs.h"
#include "dist/Collective.h"
#include "dist/ExpertParallel.h"
#include "dist/GradientSync.h"
#include "dist/RankRandom.h"
#include "model/ParameterCount.h"
#include "model/attention/MechanismSpec.h"
#include "task/ImageTask.h"
#include "log/RunLog.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Runtime.h"

#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <thread>

// The trainer's set-up: the device, the run directory, data, model and
// optimiser, resuming, and what a distributed run's ranks agree on. The loop is
// in TrainerLoop.cpp, evaluation and probes in TrainerEvaluation.cpp.

namespace widelab {

namespace {

// Host tensors to the device; pinned and asynchronous for a GPU, so that the
// copy does not wait for the steps still queued there.
torch::Tensor upload(const torch::Tensor& tensor, const torch::Device& device)
{
    if (!device.is_cuda() || !tensor.defined())
        return tensor;
    return tensor.pin_memory().to(device, /*non_blocking=*/true);
}

// A host batch's counted target positions (targetPositions), read before its
// upload: a distributed step weighs its loss by them without a read from the device.
std::int64_t countTargets(const Batch& batch)
{
    const torch::Tensor& counted = targetPositions(batch);
    return counted.defined() ? counted.sum().item<std::int64_t>() : -1;
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
    m_run = m_run.withAbsolutePaths();
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

    if (!m_options.resume && !train.initFrom.empty())
        checkInitFromFolder(parseInitFrom(train.initFrom));
    m_data = prepareTaskData({.run = m_run,
                              .directory = m_directory,
                              .resume = m_options.resume,
                              .tokenizerFrom = m_options.resume || train.initFrom.empty()
                                                   ? std::filesystem::path()
                                                   : parseInitFrom(train.initFrom).directory,
                              .probes = m_options.readOnly ? nullptr : &m_run.train.probes,
                              .progress = [this](const std::string& text) { message("info", text); },
                              .warn = [this](const std::string& text) { message("warning", text); },
                              .cancelled = m_options.cancelled});

    torch::manual_seed(static_cast<std::uint64_t>(train.seed));
    m_model = WideTransformer(m_run.model);
    if (!m_options.resume && !train.initFrom.empty()) {  // a resumed run's checkpoint holds the weights
        const InitFromReport loaded = initialiseFrom(m_run, m_data.labels, *m_model);
        for (const std::string& warning : loaded.warnings)
            message("warning", "train.init_from: " + warning);
        message("info", loaded.text());
    }
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
    m_sampler = makeSampler();

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
    if (train.cudaGraph && !m_options.readOnly)
        setUpStepGraphs();
}

void Trainer::setUpStepGraphs()
{
    const TrainConfig& t = m_run.train;
    auto* adamw = dynamic_cast<FusedAdamW*>(m_optimizer.get());
    std::optional<std::string> refusal = m_options.stepRecorder ? std::nullopt : cudaGraphRefusal(m_device);
    if (!refusal && m_world)
        refusal = "a distributed step's collectives are not recorded";
    if (!refusal && !adamw)
        refusal = "train.optimizer " + toString(t.optimizer) + " has no capturable step (adamw has)";
    if (!refusal && !FusedAdamW::available())
        refusal = "this LibTorch (" + std::string(TORCH_VERSION)
                  + ") has no fused AdamW, whose capturable step a recording needs (or WIDELAB_DISABLE names it)";
    if (refusal) {
        message("warning", "train.cuda_graph: steps run ordinarily: " + *refusal);
        return;
    }
    adamw->makeCapturable();
    const ModelConfig& c = m_run.model;
    bool paddingFree = !c.isMoe();
    for (const MechanismUse& use : mechanismUses(c))
        paddingFree = paddingFree && use.spec->paddingFree;
    m_graphs = std::make_unique<StepGraphs>(m_options.stepRecorder ? m_options.stepRecorder
                                                                   : cudaGraphRecorder(m_device),
                                            c.maxLen, paddingFree && !c.imageInput());
    std::string how = "train.cuda_graph: each step is recorded once per batch shape and replayed";
    if (paddingFree && !c.imageInput())
        how += "; text batches are padded to multiples of " + std::to_string(m_graphs->paddedLength(1)) + " tokens";
    if (t.logEvery == 1)
        how += "; but train.log_every 1 measures every step, and a measured step runs ordinarily";
    message("info", how);
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

std::unique_ptr<BatchSampler> Trainer::makeSampler()
{
    const TrainConfig& train = m_run.train;
    const auto seed = static_cast<std::uint64_t>(train.seed);
    if (train.batchTokens == 0 || m_data.imageStats)
        return std::make_unique<BatchSampler>(m_data.train->size(), train.batchSize, seed);
    // A pair costs its longer side (the decoder's reads <s> and the target), as
    // tensor2tensor's token batches count.
    std::vector<std::int64_t> costs;
    costs.reserve(static_cast<std::size_t>(m_data.train->size()));
    std::int64_t largest = 0;
    for (std::int64_t i = 0; i < m_data.train->size(); ++i) {
        const Example example = m_data.train->get(i);
        costs.push_back(static_cast<std::int64_t>(std::max(example.ids.size(), example.targets.size())));
        largest = std::max(largest, costs.back());
    }
    if (largest > train.batchTokens)
        message("warning", "train.batch_tokens " + std::to_string(train.batchTokens) + " is less than the longest "
                               "training example (" + std::to_string(largest) + " tokens): such an example is a "
                               "batch of its own");
    return std::make_unique<BatchSampler>(std::move(costs), train.batchTokens, seed);
}

Batch Trainer::makeDeviceBatch(const std::vector<Example>& examples, bool training, std::int64_t first) const
{
    const bool languageModel = m_run.model.head == HeadKind::LanguageModel;
    // What the step would otherwise read back from the device, taken from a
    // text batch while it is still on the host.
    const auto countOnHost = [this, training](Batch& host) {
        if (training && m_graphs)  // to one of a few lengths, each of which is recorded once
            m_graphs->pad(host);
        host.routed = upload(m_model->routedPositions(modelMask(host)), m_device);
        if (m_world)  // only a distributed step weighs its loss by them
            host.countedTargets = countTargets(host);
    };
    Batch batch;
    if (m_data.imageStats) {
        // Augmentation from (train.seed, step): a resumed run draws the same crops and flips.
        const ImageAugmentation augment{m_run.task.cropPadding, m_run.task.flip,
                                        mixSeed(mixSeed(static_cast<std::uint64_t>(m_run.train.seed), 0x1a6e),
                                                static_cast<std::uint64_t>(m_state.step)),
                                        first, m_run.task.mixup, m_run.task.cropScale,
                                        static_cast<int>(m_run.task.randAugment),
                                        static_cast<int>(m_run.task.randAugmentMagnitude)};
        batch = makeImageBatch(examples, imageFormat(m_run.model), *m_data.imageStats, training ? &augment : nullptr);
        batch.tokens *= m_run.model.positions();
        batch.pixels = upload(batch.pixels, m_device);
    } else if (m_data.masking) {
        // Training hides tokens drawn from (train.seed, step), so that a resumed run
        // hides the same ones; evaluation hides each example's own, the same tokens
        // at every evaluation (`first` is then the batch's place in its split).
        TokenMasking masking = *m_data.masking;
        const std::uint64_t stream = mixSeed(static_cast<std::uint64_t>(m_run.train.seed), training ? 0x3a5c : 0x3a5d);
        masking.seed = training ? mixSeed(stream, static_cast<std::uint64_t>(m_state.step)) : stream;
        masking.first = first;
        batch = makeMaskedBatch(examples, masking);
        countOnHost(batch);
        batch.ids = upload(batch.ids, m_device);
        batch.mask = upload(batch.mask, m_device);
        batch.targetMask = upload(batch.targetMask, m_device);
    } else if (m_run.model.isTranslation()) {
        batch = makeTranslationBatch(examples, *m_data.tokenizer.startId());
        countOnHost(batch);
        batch.ids = upload(batch.ids, m_device);
        batch.mask = upload(batch.mask, m_device);
        batch.targetIds = upload(batch.targetIds, m_device);
        batch.targetMask = upload(batch.targetMask, m_device);
    } else {
        batch = makeBatch(examples, languageModel);
        countOnHost(batch);
        batch.ids = upload(batch.ids, m_device);
        batch.mask = upload(batch.mask, m_device);
    }
    batch.targets = upload(batch.targets, m_device);
    if (batch.mixTargets.defined())
        batch.mixTargets = upload(batch.mixTargets, m_device);
    return batch;
}

void Trainer::addObserver(TrainingObserver* observer) { m_observers.push_back(observer); }

void Trainer::message(const std::string& level, const std::string& text)
{
    m_log->write(level, text);
    for (auto* observer : m_observers)
        observer->onMessage(level, text);
}

}  // namespace widelab
