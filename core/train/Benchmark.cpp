#include "Benchmark.h"

#include "model/ParameterCount.h"
#include "model/WideTransformer.h"
#include "runtime/PhaseTimer.h"
#include "runtime/Runtime.h"

#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <numeric>

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

}  // namespace

ModelConfig benchmarkConfig(const ModelConfig& config, std::int64_t sequence)
{
    ModelConfig c = config;
    c.maxLen = std::max(c.maxLen, sequence);
    return c;
}

BenchmarkResult runBenchmark(const ModelConfig& config, const BenchmarkOptions& options)
{
    const ModelConfig c = benchmarkConfig(config, options.sequence);
    const std::int64_t B = options.batch, T = options.sequence;

    BenchmarkResult r;
    r.mode = options.train ? "train" : "infer";
    r.batch = B;
    r.sequence = T;
    r.steps = options.steps;
    r.warmup = options.warmup;
    r.threads = computeThreads();
    const BlasInfo blas = blasLibrary();
    r.blas = blas.name;
    r.blasFile = blas.file;

    // FLOPs at the benchmark's own length: the accounting counts max_len positions.
    ModelConfig atLength = c;
    atLength.maxLen = T;
    const ModelCost cost = modelCost(atLength);
    const double positions = static_cast<double>(atLength.positions());
    const double passes = options.train ? 3.0 : 1.0;
    r.forwardFlopsPerToken = cost.flopsPerToken;
    r.flopsPerStep = passes * cost.flopsPerToken * positions * static_cast<double>(B);
    r.flopsPerStepAtCapacity = passes * cost.flopsPerTokenAtCapacity * positions * static_cast<double>(B);

    torch::manual_seed(0);
    WideTransformer model(c);
    model->train(options.train);
    const torch::Tensor ids = torch::randint(c.vocabSize, {B, T}, torch::kLong);
    const torch::Tensor targets = c.head == HeadKind::Classification
                                      ? torch::randint(c.numClasses, {B}, torch::kLong)
                                      : torch::randint(c.vocabSize, {B, T}, torch::kLong);
    torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(options.learningRate));

    const auto step = [&] {
        if (!options.train) {
            torch::NoGradGuard noGrad;
            const ModelOutput output = model->forward(ids);
            const PhaseScope timed(Phase::Measurement);
            r.loss = output.logits.mean().item<double>();
            return;
        }
        optimizer.zero_grad();
        const ModelOutput output = model->forward(ids);
        const torch::Tensor loss = taskLoss(c, output.logits, targets) + c.balanceLossWeight * output.balanceLoss;
        {
            const PhaseScope timed(Phase::Backward);
            loss.backward();
        }
        {
            const PhaseScope timed(Phase::Optimizer);
            optimizer.step();
        }
        const PhaseScope timed(Phase::Measurement);
        r.loss = loss.item<double>();
    };

    for (std::int64_t i = 0; i < options.warmup; ++i)
        step();
    PhaseTimer::reset();
    PhaseTimer::setEnabled(true);
    for (std::int64_t i = 0; i < options.steps; ++i) {
        const auto start = std::chrono::steady_clock::now();
        step();
        r.stepSeconds.push_back(secondsSince(start));
    }
    PhaseTimer::setEnabled(false);

    r.medianStepSeconds = median(r.stepSeconds);
    r.tokensPerSecond = static_cast<double>(B * T) / r.medianStepSeconds;
    r.achievedFlops = r.flopsPerStep / r.medianStepSeconds;

    const double steps = static_cast<double>(std::max<std::int64_t>(1, options.steps));
    const double meanStep = std::accumulate(r.stepSeconds.begin(), r.stepSeconds.end(), 0.0) / steps;
    double accounted = 0.0;
    for (int p = 0; p < static_cast<int>(Phase::Count); ++p) {
        const double seconds = PhaseTimer::seconds(static_cast<Phase>(p)) / steps;
        accounted += seconds;
        r.phases.emplace_back(phaseName(static_cast<Phase>(p)), seconds);
    }
    r.phases.emplace_back("other", std::max(0.0, meanStep - accounted));

    // Measured last, so the model's steps do not run on caches the peak warmed.
    r.peakFlops = measureMatmulPeak(options.peakSize);
    r.peakRatio = r.achievedFlops / r.peakFlops;
    r.warning = slowMatmulWarning(r.peakFlops, r.threads, blas);
    return r;
}

nlohmann::json BenchmarkResult::toJson() const
{
    nlohmann::json phaseJson = nlohmann::json::object();
    for (const auto& [name, seconds] : phases)
        phaseJson[name] = seconds;
    return {{"mode", mode},
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
            {"peak_ratio", peakRatio},
            {"phase_seconds_per_step", phaseJson},
            {"loss", loss},
            {"warning", warning}};
}

}  // namespace widelab
