#include "Trainer.h"

#include "run/CheckpointDirectory.h"
#include "run/ExpertShards.h"
#include "GradientHealth.h"
#include "measure/HealthAlarms.h"
#include "measure/Measurements.h"
#include "measure/ParameterHistograms.h"
#include "OutOfMemory.h"
#include "run/RunLayout.h"
#include "RunSchedule.h"
#include "StepGraphs.h"
#include "run/RunStatusWriter.h"
#include "vocab/EvaluationText.h"
#include "Schedule.h"
#include "dist/Collective.h"
#include "dist/ExpertParallel.h"
#include "dist/GradientSync.h"
#include "dist/RankRandom.h"
#include "runtime/Autocast.h"
#include "runtime/DeviceMemory.h"

#include <algorithm>

// The trainer's loop: steps, snapshots to the observers, checkpoints, and the
// requests another thread makes between steps.

namespace widelab {

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
    // train.cuda_graph: a capture needs a side stream, and the whole run uses it,
    // so that the steps before and between recordings run where they do.
    std::optional<SideStream> sideStream;
    if (m_graphs)
        sideStream.emplace(m_device);
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
    // What follows a step: the validation at its interval and at the last step
    // (and a better one's checkpoint), the interval's checkpoint, the probes.
    // Go on, stop (a stop during the validation: the checkpoint saved at the end
    // says it is pending), or end the run with `ended`.
    enum class After { Go, Stop };
    std::optional<TrainSummary> ended;
    auto afterStep = [&]() -> After {
        const bool saving = m_state.step % t.evalEvery == 0 || m_state.step == m_totalSteps
                            || m_state.step % t.checkpointEvery == 0;
        if (saving) {
            if (auto error = unsavedStepsNonFinite()) {
                ended = stopped(*error);
                return After::Stop;
            }
        }
        const double pauseStart = steadySeconds();
        if (m_state.step % t.evalEvery == 0 || m_state.step == m_totalSteps) {
            try {
                const EvaluationResult result = evaluate(Split::Validation, t.evalBatches);
                message("info", "validation at step " + std::to_string(result.step) + ": " + evaluationText(result));
                measureInsights();
                // Every rank decides alike (each saves its part): on rank 0's loss,
                // which an expert-parallel rank may compute in other last bits.
                const double loss = fromRankZero(result.loss, "the validation loss at step " + std::to_string(m_state.step));
                const double accuracy =
                    fromRankZero(result.accuracy, "the validation accuracy at step " + std::to_string(m_state.step));
                const bool best = t.selectBest == SelectBest::Accuracy ? accuracy > m_state.bestValidationAccuracy
                                                                       : loss < m_state.bestValidationLoss;
                m_state.bestValidationLoss = std::min(m_state.bestValidationLoss, loss);
                m_state.bestValidationAccuracy = std::max(m_state.bestValidationAccuracy, accuracy);
                if (best)
                    writeCheckpoint(runlayout::bestCheckpointFile(m_directory));
            } catch (const Interrupted&) {
                m_state.evaluationPending = true;
                m_savedStep = -1;  // the checkpoint at the end records it, even at a step already saved
                summary.outcome = TrainOutcome::Stopped;
                return After::Stop;
            } catch (const std::exception& error) {
                if (!isOutOfMemory(error))
                    throw;
                ended = outOfMemory("the validation at step " + std::to_string(m_state.step));
                return After::Stop;
            }
        }
        if (m_state.step % t.checkpointEvery == 0)
            saveCheckpoint();
        const std::int64_t probeEvery = t.probeEvery > 0 ? t.probeEvery : t.evalEvery;
        if (m_state.step % probeEvery == 0 || m_state.step == m_totalSteps)
            probeAll();
        interval.started += steadySeconds() - pauseStart;  // not training time
        return After::Go;
    };

    m_status->training(m_state.step);
    if (m_state.step == 0)  // the untrained model, where the views' replay starts
        probeAll();
    bool stopping = false;
    if (m_state.evaluationPending) {  // resumed after a stop during this step's validation
        m_state.evaluationPending = false;
        m_savedStep = -1;  // the checkpoint on disk still says pending: the end writes this step's again
        message("info", "measuring the validation of step " + std::to_string(m_state.step) + ", which a stop cut short");
        stopping = afterStep() == After::Stop;
        if (ended)
            return *ended;
    }
    while (!stopping && m_state.step < m_totalSteps) {
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
        if (afterStep() == After::Stop) {
            if (ended)
                return *ended;
            break;
        }
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
    const bool perToken = m_run.model.predictsTokens();  // a target at every position
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
    interval.dataSeconds += steadySeconds() - stepStart;
    // A distributed step's loss is this rank's part of the global batch's mean:
    // its mean weighted by its share of what the loss averages over (examples,
    // or a language or translation model's counted tokens), so that the gradients
    // summed over the ranks are those of one process's step on the whole batch.
    double share = 1.0;
    std::int64_t tokens = batch.tokens;
    if (m_world) {
        // Counted on the host as the batch was made (Batch::countedTargets), not read back.
        const double terms = perToken && batch.countedTargets >= 0 ? static_cast<double>(batch.countedTargets)
                             : perToken                           ? static_cast<double>(batch.targets.numel())
                                                                  : static_cast<double>(examples.size());
        torch::Tensor counts = torch::tensor({terms, static_cast<double>(batch.tokens)}, torch::kFloat64);
        m_world->sum(counts, "counting the batch of step " + std::to_string(m_state.step + 1));
        share = counts[0].item<double>() > 0.0 ? terms / counts[0].item<double>() : 0.0;
        tokens = static_cast<std::int64_t>(counts[1].item<double>());
        m_gradients->beginStep(m_state.step);
    }

    m_model->train();
    m_model->beginStep(m_state.step);
    const torch::Tensor mixWeights = mixupWeights(batch, m_device);
    std::optional<StepOutputs> outputs;
    if (m_graphs && !measure) {
        // Not distributed (setUpStepGraphs): the whole loss, share 1.
        Interval* kept = m_interval.get();
        outputs = m_graphs->replay(batch, mixWeights, [this, kept](const Batch& recorded, const torch::Tensor& weights) {
            StepOutputs step = queueForwardBackward(recorded, weights, 1.0, *kept, false);
            m_optimizer->step();
            return step;
        });
        for (const StepGraphs::Notice& notice : m_graphs->takeNotices())
            message(notice.level, notice.text);
    }
    if (outputs) {
        m_nonFinite->observe(m_state.step + 1, outputs->loss, outputs->norms);
        // Checked after the update, as a GPU's unmeasured steps are; the CPU
        // (tests' recorder) checks at once, so that nothing bad is saved.
        if (!m_device.is_cuda())
            stopIfNonFinite();
    } else {
        outputs = queueForwardBackward(batch, mixWeights, share, interval, measure);
        m_nonFinite->observe(m_state.step + 1, outputs->loss, outputs->norms);
        // On the CPU every step is checked before the update (it costs nothing). On a
        // GPU the check waits for the step, so it runs on measured steps and before
        // anything is saved; a bad step in between is found there, by its number.
        if (!m_device.is_cuda() || measure)
            stopIfNonFinite();
        m_optimizer->step();
    }
    ++m_state.step;
    m_state.samplerPosition = m_sampler->position();

    // A copy: a replay's sums are overwritten by the next replay.
    torch::Tensor stepSums = outputs->sums.clone();
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

StepOutputs Trainer::queueForwardBackward(const Batch& batch, const torch::Tensor& mixWeights, double share,
                                          Interval& interval, bool measure)
{
    const TrainConfig& t = m_run.train;
    const bool perToken = m_run.model.predictsTokens();  // a target at every position
    const torch::Tensor& input = batch.pixels.defined() ? batch.pixels : batch.ids;
    // Gradients reset to none, not to zeros: the backward pass then writes them
    // instead of adding to zero-filled ones (LibTorch 2.x's default, 1.13's
    // optimizer would zero them: a fill and an add per parameter every step).
    clearGradients(m_model->parameters());
    ForwardTrace& trace = interval.trace;
    trace.captureAttention = false;
    trace.captureResidual = true;
    const torch::Tensor mask = modelMask(batch);
    const TargetInput target{batch.targetIds, modelTargetMask(batch)};  // translation: the decoder's input
    ModelOutput output;
    {
        // Distributed: dropout and router noise from this rank's stream for the step.
        std::optional<RankRandom> rankStream;
        if (m_world)
            rankStream.emplace(m_device, mixSeed(mixSeed(mixSeed(static_cast<std::uint64_t>(t.seed), 0xd157),
                                                         static_cast<std::uint64_t>(m_state.step)),
                                                 static_cast<std::uint64_t>(m_world->rank())));
        const AutocastScope bf16(m_device.type(), torch::kBFloat16, m_device.is_cuda() && t.bf16);
        output = measure ? m_model->inspect(input, mask, trace, target, batch.routed)
                         : m_model->forward(input, mask, target, batch.routed);
    }
    torch::Tensor task = taskLoss(m_run.model, output.logits, batch.targets, targetPositions(batch), t.labelSmoothing);
    if (mixWeights.defined())  // Mixup: the partners' labels at their share
        task = task * mixWeights[0]
               + taskLoss(m_run.model, output.logits, batch.mixTargets, {}, t.labelSmoothing) * mixWeights[1];
    task = task * share;
    const torch::Tensor loss = trainingLoss(m_run.model, task, output);
    // Counted now, so that a language model's [tokens, vocabulary] logits are
    // not held through the backward pass, whose peak they would raise.
    const torch::Tensor hits = correctCounts(output.logits.detach(), batch, perToken);
    output.logits = torch::Tensor();
    loss.backward();
    if (m_gradients)
        m_gradients->finish();
    if (measure && histogramsDue(m_state.step + 1 - interval.steps, m_state.step + 1, t.evalEvery, m_totalSteps))
        interval.gradientHistograms = histogramsOnDevice(parameterGroups(*m_model), HistogramOf::Gradients);  // before clipping
    const ShardedNorms sharded = m_experts ? shardedNorms() : ShardedNorms{};
    StepOutputs out;
    out.loss = loss.detach();
    out.norms = clipGradients(m_model->parameters(), t.gradientClip, m_experts ? &sharded : nullptr);
    out.sums = torch::cat({torch::stack({loss.detach().to(torch::kFloat64), task.detach().to(torch::kFloat64),
                                         output.balanceLoss.detach().to(torch::kFloat64)}),
                           hits, out.norms.total.view({1}) / (m_world ? m_world->size() : 1)});
    return out;
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
    s.dataSeconds = interval.dataSeconds / timedSteps;
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
    std::vector<torch::Tensor> residual;
    for (const BlockTrace& block : interval.trace.blocks)
        if (block.residualNorm.defined())
            residual.push_back(block.residualNorm);
    if (!residual.empty()) {  // one copy to the host for every block, not one wait each
        const std::vector<float> norms = toFloats(torch::stack(residual));
        s.residualNorms.assign(norms.begin(), norms.end());
    }
    if (!interval.gradientHistograms.empty()) {
        s.gradientHistograms = readHistograms(interval.gradientHistograms);
        s.weightHistograms = readHistograms(histogramsOnDevice(parameterGroups(*m_model), HistogramOf::Weights));
    }
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
