#pragma once

// Data-parallel gradients: each rank's backward pass sums its gradients into
// buckets, and a bucket is all-reduced (summed over the ranks) as soon as every
// gradient in it is final, while backward goes on with earlier layers; as
// DDP's reducer does.
//
// A gradient is final when the parameter's gradient accumulator has run: the
// autograd engine runs it once per backward pass, after every use of the
// parameter has contributed, so a weight that WideNet shares between all its
// blocks is sent only once its last block is through. Buckets are sent in one
// fixed order on every rank (a later bucket waits for the earlier ones), so the
// ranks' collectives always pair up. Gradients are summed, not averaged: the
// trainer scales each rank's loss by its share of the global batch.

#include "Collective.h"

#include <torch/torch.h>

#include <memory>
#include <mutex>
#include <vector>

namespace widelab {

class GradientSync {
public:
    // The parameters that train (requires_grad), each once. `bucketBytes` 0:
    // an eighth of all the gradients' bytes, from 256 KiB to 25 MiB (DDP's
    // size), so that a small model's gradients too go in several sends that
    // overlap backward, and a large one's in sends of DDP's size.
    GradientSync(Collective& collective, const std::vector<torch::Tensor>& parameters, std::int64_t bucketBytes = 0);
    ~GradientSync();
    GradientSync(const GradientSync&) = delete;
    GradientSync& operator=(const GradientSync&) = delete;

    // Arms the hooks for one backward pass; until then a backward pass (a
    // measurement on one rank) sends nothing.
    void beginStep(std::int64_t step);
    // After backward: sends what is left (a parameter this rank's batch did not
    // reach counts as zero), waits, and leaves every parameter's gradient the sum
    // over the ranks. Throws CollectiveError when a rank does not answer.
    void finish();

    std::size_t buckets() const { return m_buckets.size(); }
    // Of the last step: seconds finish() waited for all-reduces (the part that
    // backward did not hide), and buckets sent before backward ended.
    double exposedSeconds() const { return m_exposedSeconds; }
    std::size_t sentDuringBackward() const { return m_sentDuringBackward; }

private:
    struct Slot {
        torch::Tensor parameter;
        std::size_t bucket = 0;
        std::int64_t offset = 0;
        bool filled = false;
    };
    struct Bucket {
        torch::Tensor flat;
        std::vector<std::size_t> slots;
        std::size_t waiting = 0;
        Collective::Pending pending;
    };
    void ready(std::size_t slot);
    void sendReady();  // under m_mutex

    Collective& m_collective;
    bool m_overlap = true;
    std::vector<Slot> m_slots;
    std::vector<Bucket> m_buckets;
    std::vector<std::shared_ptr<torch::autograd::Node>> m_accumulators;  // kept alive, with our hooks
    std::vector<std::uintptr_t> m_hooks;
    std::mutex m_mutex;
    bool m_armed = false;
    std::size_t m_nextToSend = 0;
    std::int64_t m_step = 0;
    double m_exposedSeconds = 0.0;
    std::size_t m_sentDuringBackward = 0;
};

}  // namespace widelab
