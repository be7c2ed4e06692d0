// defines: StepOutputs, StepGraphs (train.cuda_graph): a training step recorded
// once per batch shape and replayed, the static batch each recording reads, and
// the few lengths text batches are padded to
#pragma once

#include "GradientHealth.h"
#include "data/Batch.h"
#include "runtime/StepCapture.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace widelab {

// What a training step leaves for the trainer, on the device: its loss and
// gradient norms (for the non-finite watch) and its sums [6]: loss, task loss,
// balance loss, hits, counted, gradient norm.
struct StepOutputs {
    torch::Tensor loss;
    GradientNorms norms;
    torch::Tensor sums;
};

// One recording per batch shape (the shapes of every tensor of the batch, and
// whether it has padding), made at the shape's third step: its first two run
// ordinarily, as the warm-up a capture needs (libraries' workspaces, the
// optimiser's state). Each step is then copied into the shape's static batch
// and replayed. A step runs ordinarily instead, with a notice the first time:
// - when the batch has routed positions (a padded batch of a model with
//   experts routes a different number of tokens each time);
// - when kMaxGraphs shapes are recorded already;
// - after a recording failed (graphs stay off for the run, the notice says why).
class StepGraphs {
public:
    static constexpr std::size_t kMaxGraphs = 8;
    static constexpr std::int64_t kOrdinaryFirst = 2;

    // `padText`: text batches are padded to paddedLength (a model whose every
    // attention mechanism is MechanismSpec::paddingFree, without experts).
    StepGraphs(Recorder recorder, std::int64_t maxLength, bool padText);

    // The length a text batch of `length` tokens is padded to: the next
    // multiple of max(8, maxLength / 8), at most maxLength, so at most eight
    // lengths. `length` itself when text is not padded.
    std::int64_t paddedLength(std::int64_t length) const;
    // A host batch padded so (a translation batch's two sides each).
    void pad(Batch& host) const;

    // The step of `batch` (on the device), replayed: its outputs, or nothing
    // when the step is to run ordinarily. `step` queues a whole step (forward,
    // backward, optimiser) on the batch and the mixup weights it is given
    // ([2]: the own labels' and the partners'; undefined without mixup) and
    // returns its outputs; it is recorded once per shape, on the static batch,
    // and must not refer to anything that dies before the run's end.
    // The outputs returned are overwritten by the next replay of their shape.
    using Step = std::function<StepOutputs(const Batch& batch, const torch::Tensor& mixWeights)>;
    std::optional<StepOutputs> replay(const Batch& batch, const torch::Tensor& mixWeights, const Step& step);

    // Notices since the last call, for the run's log: level ("info", or
    // "warning" when a recording failed) and text.
    struct Notice {
        std::string level, text;
    };
    std::vector<Notice> takeNotices();

private:
    struct Graph {
        Batch batch;              // static: each step's batch is copied into it
        torch::Tensor mixWeights; // static, with mixup
        Replay run;               // empty until recorded
        StepOutputs outputs;      // static: what the recorded step wrote
        std::int64_t seen = 0;
    };

    Recorder m_recorder;
    std::int64_t m_maxLength = 0;
    bool m_padText = false;
    std::map<std::string, Graph> m_graphs;  // by shape
    bool m_failed = false;
    bool m_toldRouted = false, m_toldFull = false;
    std::vector<Notice> m_notices;
};

// The mixup weights a step is given ([2] float32 on `device`: the own labels'
// share and the partners'), or undefined for a batch without mixup. Filled in
// place: no copy from the host, which would wait for the device.
torch::Tensor mixupWeights(const Batch& batch, const torch::Device& device);

}  // namespace widelab
