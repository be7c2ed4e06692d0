#include "Benchmark.h"

#include "BenchmarkDevice.h"
#include "train/FusedAdamW.h"
#include "train/GradientHealth.h"
#include "train/MemoryEstimate.h"
#include "model/GroupedExperts.h"
#include "model/ParameterCount.h"
#include "model/WideTransformer.h"
#include "runtime/Autocast.h"
#include "runtime/DeviceMemory.h"
#include "runtime/PhaseTimer.h"
#include "runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace widelab {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values)
{
    if (values.empty())
        return 0.0;
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

double mean(const std::vector<double>& values)
{
    return values.empty() ? 0.0 : std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// PhaseTimer takes a plain function; the benchmark runs on one device at a time.
c10::DeviceIndex g_phaseDevice = -1;
void synchronizePhaseDevice()
{
    synchronizeDevice(c10::Device(c10::kCUDA, g_phaseDevice));
}

// Analytic FLOPs of one step at the benchmark's own length (the accounting
// counts max_len positions): forward per token x positions x batch, x3 when
// training (backward ~2x forward).
void countFlops(const ModelConfig& c, const BenchmarkOptions& options, BenchmarkResult& r)
{
    ModelConfig atLength = c;
    if (!c.imageInput())  // an image model's sequence is its patches
        atLength.maxLen = options.sequence;
    const ModelCost cost = modelCost(atLength);
    const double tokens = static_cast<double>(atLength.positions()) * static_cast<double>(options.batch);
    const double passes = options.train ? 3.0 : 1.0;
    r.clsRowOnly = !options.train && !options.everyRow && lastBlockReadsClsRowOnly(atLength);
    r.forwardFlopsPerToken = r.clsRowOnly ? cost.inferenceFlopsPerToken : cost.flopsPerToken;
    r.flopsPerStep = passes * r.forwardFlopsPerToken * tokens;
    r.flopsPerStepAtCapacity = passes * cost.flopsPerTokenAtCapacity * tokens;
}

// Runs `count` steps, each timed between two synchronisations of the device,
// and returns their seconds. A step sets `queuedAt` when it has queued all its
// work (before it reads the loss back, which waits); `queuedSeconds`, when
// given, gets how long after its start that was. With `phases`, PhaseTimer is
// reset and enabled for them, its scopes synchronising on CUDA.
std::vector<double> timeSteps(const std::function<void()>& step, std::int64_t count, const c10::Device& device,
                              bool phases, std::chrono::steady_clock::time_point& queuedAt,
                              std::vector<double>* queuedSeconds = nullptr)
{
    if (phases) {
        PhaseTimer::reset();
        g_phaseDevice = device.has_index() ? device.index() : 0;
        PhaseTimer::setEnabled(true, device.is_cuda() ? &synchronizePhaseDevice : nullptr);
    }
    std::vector<double> seconds;
    for (std::int64_t i = 0; i < count; ++i) {
        synchronizeDevice(device);
        const auto start = std::chrono::steady_clock::now();
        queuedAt = start;
        step();
        synchronizeDevice(device);
        seconds.push_back(secondsSince(start));
        if (queuedSeconds)
            queuedSeconds->push_back(std::chrono::duration<double>(queuedAt - start).count());
    }
    if (phases)
        PhaseTimer::setEnabled(false);
    return seconds;
}

// routing / (routing + experts), -1 when both are 0.
double routingShare(double routing, double experts)
{
    return routing + experts > 0.0 ? routing / (routing + experts) : -1.0;
}

// PhaseTimer's totals per step over `stepSeconds`, then "other": the rest of
// the mean step. Mixtures also get the routing share of their MoE layers.
void readPhases(const std::vector<double>& stepSeconds, bool moe, BenchmarkResult& r)
{
    const double steps = static_cast<double>(std::max<std::size_t>(1, stepSeconds.size()));
    r.phaseStepSeconds = mean(stepSeconds);
    double accounted = 0.0;
    for (int p = 0; p < static_cast<int>(Phase::Count); ++p) {
        const double seconds = PhaseTimer::seconds(static_cast<Phase>(p)) / steps;
        accounted += seconds;
        r.phases.emplace_back(phaseName(static_cast<Phase>(p)), seconds);
    }
    r.phases.emplace_back("other", std::max(0.0, r.phaseStepSeconds - accounted));
    if (moe)
        r.moeRoutingShare = routingShare(PhaseTimer::seconds(Phase::Routing), PhaseTimer::seconds(Phase::FeedForward));
}

// PhaseTimer enabled without synchronising, for one more step whose operators
// or kernels are attributed to phases; its totals dropped after.
class UnsynchronisedPhases {
public:
    explicit UnsynchronisedPhases(const c10::Device& device)
    {
        synchronizeDevice(device);
        PhaseTimer::reset();
        PhaseTimer::setEnabled(true);
    }
    ~UnsynchronisedPhases()
    {
        PhaseTimer::setEnabled(false);
        PhaseTimer::reset();
    }
    UnsynchronisedPhases(const UnsynchronisedPhases&) = delete;
    UnsynchronisedPhases& operator=(const UnsynchronisedPhases&) = delete;
};

// The operators one more step dispatches, by phase.
OperatorTally countOperators(const std::function<void()>& step, const c10::Device& device)
{
    const UnsynchronisedPhases phases(device);
    const OperatorCounter counter;
    step();
    return counter.tally();
}

// One more step under LibTorch's profiler, its kernels (or operators' self
// time) by phase too, cut to `keep` operators and kernels. Mixtures get the
// routing share of that time.
void profileStep(const std::function<void()>& step, const c10::Device& device, std::size_t keep, bool moe,
                 BenchmarkResult& r)
{
    {
        const UnsynchronisedPhases phases(device);
        r.kernels = profileKernels(step, device);
    }
    for (std::vector<OperatorTime>* list : {&r.kernels.byOperator, &r.kernels.byKernel})
        list->resize(std::min(list->size(), keep));
    double routing = 0.0, experts = 0.0;
    for (const OperatorTime& phase : r.kernels.byPhase) {
        if (phase.name == phaseName(Phase::Routing))
            routing = phase.seconds;
        else if (phase.name == phaseName(Phase::FeedForward))
            experts = phase.seconds;
    }
    if (moe)
        r.moeRoutingShareByKernels = routingShare(routing, experts);
}

// The dense peak in the step's dtype, and the MFU against it (and against the
// nominal peak when one was given).
void measurePeak(const c10::Device& device, const BenchmarkOptions& options, BenchmarkResult& r)
{
    const c10::ScalarType dtype = options.bf16 ? c10::kBFloat16 : c10::kFloat;
    r.peakSize = options.peakSize > 0 ? options.peakSize : (device.is_cuda() ? 8192 : 1024);
    r.peakDtype = shortDtypeName(dtype);
    r.peakFlops = measureDeviceMatmulPeak(device, dtype, r.peakSize);
    r.peakRatio = r.achievedFlops / r.peakFlops;
    r.nominalPeakFlops = options.nominalPeakFlops;
    r.nominalPeakRatio = options.nominalPeakFlops > 0.0 ? r.achievedFlops / options.nominalPeakFlops : 0.0;
}

}  // namespace

ModelConfig benchmarkConfig(const ModelConfig& config, std::int64_t sequence)
{
    ModelConfig c = config;
    if (!c.imageInput())
        c.maxLen = std::max(c.maxLen, sequence);
    return c;
}

RunDocument benchmarkRunDocument(const ModelConfig& config, const BenchmarkOptions& options)
{
    RunDocument run;
    run.model = benchmarkConfig(config, options.sequence);
    // Not ListOps, whose examples the estimate caps at task.max_length: random tokens fill every position.
    run.task.kind = config.head == HeadKind::LanguageModel         ? TaskKind::LanguageModel
                    : config.head == HeadKind::MaskedLanguageModel ? TaskKind::MaskedLm
                                                                   : TaskKind::Classification;
    run.task.sequenceLength = options.sequence;
    run.train.batchSize = options.batch;
    run.train.bf16 = options.bf16;
    return run;
}

BenchmarkResult runBenchmark(const ModelConfig& config, const BenchmarkOptions& options)
{
    const c10::Device device = benchmarkDevice(options.device);
    if (options.cudaGraph && (!device.is_cuda() || !options.train))
        throw std::invalid_argument("--cuda-graph: a CUDA graph replays training steps on a GPU (--device cuda, "
                                    "--mode train)");
    const ModelConfig c = benchmarkConfig(config, options.sequence);
    // Image models see their patches whatever the sequence asked for.
    const std::int64_t B = options.batch, T = c.imageInput() ? c.patches() : options.sequence;

    BenchmarkResult r;
    r.mode = options.train ? "train" : "infer";
    r.device = device.str();
    r.dtype = options.bf16 ? "bf16" : "fp32";
    r.batch = B;
    r.sequence = T;
    r.steps = options.steps;
    r.warmup = options.warmup;
    r.threads = computeThreads();
    const BlasInfo blas = blasLibrary();
    r.blas = blas.name;
    r.blasFile = blas.file;
    countFlops(c, options, r);
    if (options.train)
        r.memoryEstimateBytes = estimateTrainingMemory(benchmarkRunDocument(config, options), modelCost(c).total.stored,
                                                       device.is_cuda())
                                    .totalBytes();

    resetPeakDeviceMemory(device);
    torch::manual_seed(0);
    WideTransformer model(c);
    model->to(device);
    model->train(options.train);
    model->computeEveryRow(options.everyRow);
    // Drawn on the CPU, so that every device sees the same tokens.
    // Images: random normalised pixels [B, C, H, W].
    const torch::Tensor ids = (c.imageInput() ? torch::randn({B, c.channels, c.imageSize, c.imageSize})
                                              : torch::randint(c.vocabSize, {B, T}, torch::kLong))
                                  .to(device);
    const torch::Tensor targets = (c.head == HeadKind::Classification
                                       ? torch::randint(c.numClasses, {B}, torch::kLong)
                                       : torch::randint(c.vocabSize, {B, T}, torch::kLong))
                                      .to(device);
    // The trainer's optimizer: LibTorch 2.x's fused kernel unless WIDELAB_DISABLE=fused_adamw.
    // A translation model decodes a target as long as its source (the source itself).
    const TargetInput target = c.isTranslation() ? TargetInput{ids, {}} : TargetInput{};
    const std::vector<torch::Tensor> parameters = model->parameters();
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(parameters);
    FusedAdamW optimizer(groups, torch::optim::AdamWOptions(options.learningRate));

    // One step. Autocast covers forward and loss; backward runs outside it.
    std::chrono::steady_clock::time_point queuedAt;
    // A training step's work, queued: zero_grad, forward and loss, backward, optimizer.
    torch::Tensor lastLoss;
    const auto queueStep = [&] {
        clearGradients(parameters);  // as the trainer does
        torch::Tensor loss;
        {
            const AutocastScope autocast(device.type(), c10::kBFloat16, options.bf16);
            const ModelOutput output = model->forward(ids, {}, target);
            loss = trainingLoss(c, taskLoss(c, output.logits, targets), output);
        }
        {
            const PhaseScope timed(Phase::Backward);
            loss.backward();
        }
        {
            const PhaseScope timed(Phase::Optimizer);
            optimizer.step();
        }
        // Detached: the loss kept with its autograd graph would keep that graph's
        // AccumulateGrad nodes alive, each tied to the stream it ran on. Kept
        // from a warm-up step on the default stream into a CUDA graph's capture
        // on a side stream, they made every family's capture fail on an H200
        // ("operation would make the legacy stream depend on a capturing
        // blocking stream", docs/gpu.md).
        lastLoss = loss.detach();
    };
    std::function<void()> replay;  // queueStep captured as a CUDA graph (--cuda-graph)
    const auto step = [&] {
        if (!options.train) {
            torch::NoGradGuard noGrad;
            const AutocastScope autocast(device.type(), c10::kBFloat16, options.bf16);
            const ModelOutput output = model->forward(ids, {}, target);
            const PhaseScope timed(Phase::Measurement);
            r.loss = output.logits.to(torch::kFloat).mean().item<double>();
            return;
        }
        if (replay)
            replay();
        else
            queueStep();
        queuedAt = std::chrono::steady_clock::now();
        const PhaseScope timed(Phase::Measurement);
        r.loss = lastLoss.item<double>();
    };

    timeSteps(step, options.warmup, device, false, queuedAt);
    if (c.isMoe()) {
        // As dispatchCombine decides it for the steps' tokens: on this device, in autocast's type.
        const AutocastScope autocast(device.type(), c10::kBFloat16, options.bf16);
        const torch::Tensor tokens = torch::empty({1, c.dModel}, torch::TensorOptions().device(device));
        r.expertProducts = groupedExpertsRun(tokens, c.ffnDim) ? "grouped" : "batched";
    }
    if (options.cudaGraph) {
        replay = captureCudaGraph(device, queueStep);
        r.cudaGraph = true;
    }
    // On the CPU the phase scopes cost nothing measurable, so the timed steps
    // give the phases too; on CUDA the scopes synchronise and get their own
    // pass, of ordinary steps (none when the steps are a graph's replays).
    const bool separatePhasePass = device.is_cuda();
    std::vector<double> queued;
    r.stepSeconds = timeSteps(step, options.steps, device, !separatePhasePass, queuedAt, &queued);
    r.medianStepSeconds = median(r.stepSeconds);
    if (device.is_cuda() && options.train)
        r.queueSeconds = median(queued);
    r.tokensPerSecond = static_cast<double>(B * T) / r.medianStepSeconds;
    r.achievedFlops = r.flopsPerStep / r.medianStepSeconds;
    if (!replay) {
        readPhases(separatePhasePass ? timeSteps(step, options.steps, device, true, queuedAt) : r.stepSeconds, c.isMoe(),
                   r);
        r.operators = countOperators(step, device);
        if (options.kernels > 0)
            profileStep(step, device, static_cast<std::size_t>(options.kernels), c.isMoe(), r);
    }

    // Read before the peak measurement allocates its matrices.
    const DeviceMemory memory = deviceMemory(device);
    r.peakAllocatedBytes = memory.peakAllocated;
    r.peakReservedBytes = memory.peakReserved;

    // Measured last, so the model's steps do not run on caches the peak warmed.
    measurePeak(device, options, r);
    if (device.is_cpu()) {
        const double fp32Peak = options.bf16 ? measureMatmulPeak(r.peakSize) : r.peakFlops;
        r.warning = slowMatmulWarning(fp32Peak, r.threads, blas);
    }
    return r;
}

namespace {

// Null when no step was profiled.
nlohmann::json kernelsJson(const KernelProfile& profile)
{
    if (profile.byOperator.empty() && profile.unavailable.empty())
        return nullptr;
    const auto list = [](const std::vector<OperatorTime>& entries) {
        nlohmann::json array = nlohmann::json::array();
        for (const OperatorTime& entry : entries)
            array.push_back({{"name", entry.name}, {"calls", entry.calls}, {"seconds", entry.seconds}});
        return array;
    };
    return {{"time", profile.deviceTime ? "device" : "host self"},
            {"seconds", profile.seconds},
            {"span_seconds", profile.span},
            {"by_operator", list(profile.byOperator)},
            {"by_kernel", list(profile.byKernel)},
            {"by_phase", list(profile.byPhase)},
            {"unavailable", profile.unavailable.empty() ? nlohmann::json() : nlohmann::json(profile.unavailable)}};
}

}  // namespace

nlohmann::json BenchmarkResult::toJson() const
{
    nlohmann::json phaseJson = nlohmann::json::object();
    for (const auto& [name, seconds] : phases)
        phaseJson[name] = seconds;
    const auto orNull = [](double value, bool present) { return present ? nlohmann::json(value) : nlohmann::json(); };
    const auto frequent = [](const std::vector<std::pair<std::string, std::int64_t>>& ranked) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& [name, count] : ranked)
            list.push_back({{"name", name}, {"count", count}});
        return list;
    };
    nlohmann::json operatorsByPhase = nlohmann::json::object(), frequentByPhase = nlohmann::json::object();
    std::int64_t synchronising = 0;
    for (const auto& entry : operators.synchronisingInStep())
        synchronising += entry.second;
    for (std::size_t p = 0; p < phases.size() && p < operators.innermostByPhase.size(); ++p) {
        operatorsByPhase[phases[p].first] = operators.innermost(static_cast<Phase>(p));
        frequentByPhase[phases[p].first] = frequent(operators.mostFrequent(30, static_cast<Phase>(p)));
    }
    return {{"mode", mode},
            {"device", device},
            {"dtype", dtype},
            {"cls_row_only", clsRowOnly},
            {"batch", batch},
            {"sequence", sequence},
            {"tokens_per_step", batch * sequence},
            {"steps", steps},
            {"warmup", warmup},
            {"threads", threads},
            {"blas", blas},
            {"blas_file", blasFile},
            {"step_seconds", stepSeconds},
            {"step_seconds_median", medianStepSeconds},
            {"tokens_per_second", tokensPerSecond},
            {"forward_flops_per_token", forwardFlopsPerToken},
            {"flops_per_step", flopsPerStep},
            {"flops_per_step_at_capacity", flopsPerStepAtCapacity},
            {"achieved_flops", achievedFlops},
            {"peak_flops", peakFlops},
            {"peak_size", peakSize},
            {"peak_dtype", peakDtype},
            {"peak_ratio", peakRatio},
            {"mfu", peakRatio},
            {"nominal_peak_flops", orNull(nominalPeakFlops, nominalPeakFlops > 0.0)},
            {"mfu_nominal", orNull(nominalPeakRatio, nominalPeakFlops > 0.0)},
            {"peak_allocated_bytes", peakAllocatedBytes},
            {"peak_reserved_bytes", peakReservedBytes},
            {"memory_estimate_bytes", orNull(static_cast<double>(memoryEstimateBytes), memoryEstimateBytes > 0)},
            {"phase_seconds_per_step", phaseJson},
            {"phase_step_seconds", phaseStepSeconds},
            {"queue_seconds_median", orNull(queueSeconds, queueSeconds > 0.0)},
            {"cuda_graph", cudaGraph},
            {"moe_routing_share", orNull(moeRoutingShare, moeRoutingShare >= 0.0)},
            {"moe_routing_share_by_kernels", orNull(moeRoutingShareByKernels, moeRoutingShareByKernels >= 0.0)},
            {"expert_products", expertProducts.empty() ? nlohmann::json() : nlohmann::json(expertProducts)},
            {"operators_per_step",
             {{"all", operators.operators},
              {"innermost", operators.innermost()},
              {"innermost_by_phase", operatorsByPhase},
              {"most_frequent", frequent(operators.mostFrequent(20))},
              {"most_frequent_by_phase", frequentByPhase},
              // Operators that make the host wait for the device (OperatorCount.h), but the loss read back.
              {"synchronising", synchronising},
              {"synchronising_by_name", operators.synchronisingInStep()}}},
            {"kernel_profile", kernelsJson(kernels)},
            {"loss", loss},
            {"warning", warning}};
}

}  // namespace widelab
