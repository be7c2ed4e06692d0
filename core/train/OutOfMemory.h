// defines: isOutOfMemory, outOfMemoryMessage: what a user reads when a model, a
// batch or a sequence does not fit on its device, instead of an allocator's error
#pragma once

#include "config/ModelConfig.h"

#include <c10/core/Device.h>

#include <exception>
#include <string>

namespace widelab {

// True for LibTorch's out-of-memory errors (CUDA's caching allocator, the CPU
// allocators) and std::bad_alloc.
bool isOutOfMemory(const std::exception& error);

// What did not fit: `where` ("the training step at step 12", "moving the model
// to cuda:0"), the model (stored parameters, with what their weights, gradients
// and optimizer state take), the batch and sequence, the device's memory and
// what the run held, and what to change. The caller adds what was kept.
std::string outOfMemoryMessage(const std::string& where, const c10::Device& device, const ModelConfig& model,
                               std::int64_t batch, std::int64_t sequence);

}  // namespace widelab
