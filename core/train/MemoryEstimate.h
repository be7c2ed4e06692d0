// defines: MemoryEstimate, estimateTrainingMemory: what training a run document
// will hold on its device, before it runs (the configuration panel's figure,
// `widelab-cli params`, and the GPU suite's check against measured peaks)
#pragma once

#include "RunConfig.h"

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace widelab {

struct MemoryEstimate {
    std::int64_t parameterBytes = 0;   // weights, gradients and optimizer state, fp32
    std::int64_t activationBytes = 0;  // what the backward pass keeps, for one batch
    std::int64_t headBytes = 0;        // the batch's logits and their gradient, fp32 (a language model's: per token)
    std::int64_t totalBytes() const { return parameterBytes + activationBytes + headBytes; }
};

// `cuda`: whether the run trains on a GPU, where train.bf16 keeps activations in
// bf16 and LibTorch 2.x's fused attention keeps no [T, T] probabilities.
// A first-order model, not an allocator's count: see docs/gpu.md for how it
// compares with measured peaks.
MemoryEstimate estimateTrainingMemory(const RunDocument& run, std::int64_t storedParameters, bool cuda);

// Empty when `need` fits in `available` bytes of `device` (or `available` is 0:
// unknown); else why the run does not fit, with the figures and what to change.
std::string memoryShortfall(const RunDocument& run, const MemoryEstimate& need, std::int64_t available,
                            const std::string& device);
// The same for `run` training on `device` of this machine, as the trainer checks it.
std::string memoryShortfall(const RunDocument& run, const c10::Device& device);

}  // namespace widelab
