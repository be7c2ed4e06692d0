// defines: TrainerOptions, TrainOutcome, TrainSummary, Trainer: trains a WideLab model
// on its task, on the CPU or a GPU, reporting to observers and to the run directory
#pragma once

#include "run/Checkpoint.h"
#include "measure/Measurements.h"
#include "measure/ParameterHistograms.h"
#include "RunConfig.h"
#include "vocab/Snapshot.h"
#include "TrainingControl.h"
#include "data/Batch.h"
#include "task/TaskData.h"
#include "model/WideTransformer.h"
#include "runtime/Clock.h"
#include "runtime/StepCapture.h"

#include <torch/optim/optimizer.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace widelab {

struct TrainerOptions {
    // Continue the run in the directory from its latest checkpoint. The run's
    // document must be the run's own by decideResume (ResumeRule.h): it may differ
    // from RUN_DIR/config.json only in the keys resumeIgnoredKeys names.
    bool resume = false;
    std::optional<std::int64_t> steps;     // overrides train.steps
    std::optional<std::string> device;     // overrides train.device
    std::optional<std::int64_t> threads;   // overrides train.threads
    std::string checkpoint = "latest";     // with resume: "latest", "best" or a file name in checkpoints/
    bool readOnly = false;                 // evaluate a run without writing into its directory
    // Train even when the memory estimate exceeds what the device has available
    // (the estimate is first-order; an allocation that fails still ends cleanly).
    bool force = false;
    // Observers from the start: they also hear what construction says (a
    // checkpoint fallen back from, a schedule that changes), which observers
    // added with addObserver afterwards miss. Not owned.
    std::vector<TrainingObserver*> observers;
    // Asked between chunks of long set-up work (generating a large ListOps set):
    // true abandons construction with SetupCancelled (task/TaskData.h), so that a
    // Stop or a closing window is not kept waiting for minutes; nothing of the run
    // was written then but what a new run writes first (its log).
    std::function<bool()> cancelled;
    // The other processes of a distributed run (dist/Collective.h), or none. Each
    // rank trains on its share of every batch (the run's batch_size is the global
    // batch) and the gradients are summed across ranks; rank 0 alone writes the
    // run's files, the other ranks their logs (logs/rank-N.txt).
    std::shared_ptr<class Collective> world;
    // How a translation run's evaluations outside training (widelab-cli eval)
    // find translations: beam search of this size with this length penalty's
    // alpha (1: greedy). Evaluations while training translate greedily.
    std::int64_t beamSize = 1;
    double lengthPenalty = 0.0;
    // train.cuda_graph's recorder instead of CUDA graphs', on any device: tests
    // on the CPU give one whose replay runs the recorded step again, so that the
    // recorded path (static batches, padding, the capturable optimiser) is
    // checked where no GPU is.
    Recorder stepRecorder;
};

// The device `train.device` names ("auto", "cpu", "cuda", "cuda:N") on this
// machine; ConfigError on train.device when it is malformed or not present.
torch::Device trainingDevice(const std::string& name);

// A run whose memory estimate exceeds what its device has available, refused
// before anything is allocated (TrainerOptions::force skips the check).
class InsufficientMemory : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class TrainOutcome { Completed, Stopped, NonFinite, OutOfMemory };

struct TrainSummary {
    TrainOutcome outcome = TrainOutcome::Completed;
    std::int64_t step = 0;
    std::string message;
};

// A run directory holds config.json, tokenizer.json, metrics.jsonl, log.txt and
// checkpoints/ (step-NNNNNNNN.pt, the last keep_last of them, and best.pt); see
// docs/run-directory.md. Construction prepares data, model and optimiser, or
// throws ConfigError / DataError / CheckpointError with a message for the user.
// A trainer that writes holds the directory's lock until it is destroyed.
struct ShardedNorms;  // GradientHealth.h

class Trainer {
public:
    Trainer(RunDocument run, std::filesystem::path directory, TrainerOptions options = {});
    ~Trainer();

    void addObserver(TrainingObserver* observer);
    // Trains until train.steps or until a stop is requested (checked between
    // steps and between evaluation batches), serving the control's pause,
    // checkpoint and probe requests between steps; saves a checkpoint before
    // returning, except after a non-finite step, which leaves the last good
    // checkpoint as it was.
    TrainSummary run(TrainingControl& control);
    TrainSummary run(const std::atomic<bool>& stop);

    // `reportProgress`: a whole split of 1,000 examples or more says how far it
    // has come at each tenth (an info message).
    EvaluationResult evaluate(Split split, std::int64_t maxBatches = 0, bool reportProgress = false);
    // The same pass with parts of the model switched off (model/Ablation.h),
    // recorded nowhere and told to no observer.
    EvaluationResult evaluateAblated(Split split, std::int64_t maxBatches, const std::vector<Ablation>& ablations);
    // A text, or for image models "validation:N" or an image file (DataError when neither).
    ProbeResult probe(const std::string& text);
    void saveCheckpoint();

    std::int64_t step() const { return m_state.step; }
    std::int64_t totalSteps() const { return m_totalSteps; }
    const RunDocument& document() const { return m_run; }
    const Tokenizer& tokenizer() const { return m_data.tokenizer; }
    WideTransformer& model() { return m_model; }
    torch::Device device() const { return m_device; }
    const std::filesystem::path& directory() const { return m_directory; }

private:
    // Sums over the steps since the last snapshot. They stay on the device and are
    // read once per snapshot: reading a value from a GPU waits for it.
    struct Interval {
        double started = steadySeconds();
        torch::Tensor sums;        // [6]: loss, task, balance, hits, counted, gradient norm
        std::int64_t steps = 0, tokens = 0;
        std::int64_t resumedSteps = 0;  // of `steps`, those run before a resume (in the sums, not timed)
        ForwardTrace trace;        // routing of the interval's last, measured step
        // Distributed runs: this rank's time in its steps but for waiting on the
        // others, and the part of that wait after backward (the gradients).
        double computeSeconds = 0.0, allReduceWaitSeconds = 0.0;
        double dataSeconds = 0.0;  // reading the training batches
        HistogramsOnDevice gradientHistograms;  // of the last step, when the line holds histograms
    };
    struct Interrupted {};  // a stop requested during an evaluation

    void checkResumedDocument();
    void loadLatestCheckpoint();
    void serveRequests(TrainingControl& control, Interval& interval);
    // The examples as a batch on the device; training batches of images are augmented.
    // `first`: the first example's place in the global batch (a distributed rank's share), or in its
    // split when evaluating (a masked language model hides tokens by it).
    Batch makeDeviceBatch(const std::vector<Example>& examples, bool training, std::int64_t first = 0) const;
    // The training order: batch_size examples a batch, or train.batch_tokens' worth.
    std::unique_ptr<class BatchSampler> makeSampler();
    // Translation: BLEU and chrF of greedy translations of the split's first `sentences` into `result`.
    void scoreTranslations(Dataset& data, std::int64_t sentences, EvaluationResult& result, bool reportProgress);
    EvaluationResult measure(Split split, std::int64_t maxBatches, const std::vector<Ablation>& ablations,
                             bool reportProgress = false);
    void trainStep(Interval& interval, bool measure);
    // A step's forward, losses, backward and clipping on a batch on the device,
    // and its sums (StepGraphs.h); the optimiser's step is the caller's.
    // `mixWeights`: mixupWeights' on the device, or undefined.
    struct StepOutputs queueForwardBackward(const Batch& batch, const torch::Tensor& mixWeights, double share,
                                            Interval& interval, bool measure);
    // train.cuda_graph: the step graphs, or why the steps run ordinarily (the log says).
    void setUpStepGraphs();
    // A snapshot of the interval to the observers. `recorded`: the interval
    // starts anew; else the snapshot is provisional (TrainingSnapshot::provisional).
    void publish(Interval& interval, bool recorded = true);
    CheckpointState stateToSave() const;  // m_state with the pending interval
    std::string defaultProbeText() const;
    void probeAll();
    void measureInsights();
    void keepProbe(const std::string& text);
    void message(const std::string& level, const std::string& text);
    // Throws std::domain_error naming the first non-finite step since the run
    // started and its first non-finite tensor (waits for the device).
    void stopIfNonFinite();
    // Distributed runs: refuses ranks whose documents or programs differ.
    void checkSameRunOnEveryRank();
    // Writes a checkpoint file (rank 0 does); an expert-parallel run's ranks first
    // gather every expert into rank 0, so that it holds what one process would.
    void writeCheckpoint(const std::filesystem::path& file);
    // The parameters every rank holds alike, whose gradients are summed over the ranks.
    std::vector<torch::Tensor> replicatedParameters() const;
    ShardedNorms shardedNorms() const;  // the expert parameters' norms over every rank
    // Rank 0's `value` on every rank of a distributed run (else `value`).
    double fromRankZero(double value, const std::string& what);
    // Whether to stop before the next step; in a distributed run, whether any rank was asked to.
    bool stopRequested(const TrainingControl& control);

    RunDocument m_run;
    std::filesystem::path m_directory;
    TrainerOptions m_options;
    std::shared_ptr<class Collective> m_world;  // null in a run of one process
    bool m_writes = true;                       // writes the run's files: not read-only, rank 0
    std::int64_t m_totalSteps = 0;
    torch::Device m_device{torch::kCPU};
    std::unique_ptr<class RunLock> m_lock;
    std::unique_ptr<class CheckpointDirectory> m_checkpoints;
    std::unique_ptr<class RunStatusWriter> m_status;  // status.json; destroyed before the lock is released
    const TrainingControl* m_control = nullptr;  // during run()

    TaskData m_data;  // tokenizer, labels, splits; image tasks: the normalisation (RUN_DIR/image.json)
    std::unique_ptr<class BatchSampler> m_sampler;

    WideTransformer m_model{nullptr};
    std::unique_ptr<torch::optim::Optimizer> m_optimizer;
    std::unique_ptr<class NonFiniteWatch> m_nonFinite;
    std::unique_ptr<class StepGraphs> m_graphs;  // train.cuda_graph, where the run can
    std::unique_ptr<class GradientSync> m_gradients;  // distributed runs
    std::shared_ptr<class ExpertParallel> m_experts;  // expert-parallel runs: this rank's experts, and the way to the others
    CheckpointState m_state;
    std::unique_ptr<Interval> m_interval;  // measured since the last metrics line
    std::int64_t m_savedStep = -1;  // the step of the newest step-*.pt this trainer wrote or resumed from

    std::vector<TrainingObserver*> m_observers;
    std::unique_ptr<class MetricsWriter> m_metrics;  // metrics.jsonl: the first observer
    std::unique_ptr<class RunLog> m_log;
    double m_startSeconds = 0.0;
    std::unique_ptr<class HealthAlarms> m_alarms;
};

}  // namespace widelab
