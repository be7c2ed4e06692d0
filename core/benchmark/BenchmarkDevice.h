// defines: benchmarkDevice, measureDeviceMatmulPeak: what
// `widelab-cli bench` needs to time work on the CPU or on a CUDA device
#pragma once

#include "runtime/StepCapture.h"  // synchronizeDevice

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <string>

namespace widelab {

// "cpu", "cuda" (device 0) or "cuda:N". Throws std::invalid_argument naming
// the problem: a malformed name, a LibTorch without a usable CUDA device, or
// an index beyond the devices present.
c10::Device benchmarkDevice(const std::string& name);


// The best FLOP/s of [size x size] x [size x size] products in `dtype` on
// `device` (2 size^3 FLOPs each), after one untimed product: the dense peak
// that model FLOP/s are compared with. On the CPU in fp32 this is
// measureMatmulPeak (Runtime.h); on CUDA each repeat times a burst of products
// between synchronisations, so launch latency does not count.
double measureDeviceMatmulPeak(const c10::Device& device, c10::ScalarType dtype, std::int64_t size, int repeats = 5);

// Captures the work `queueStep` queues on `device` as one CUDA graph, after
// three warm-up calls (on the same side stream, as the capture needs), and
// returns a function that replays it. `queueStep` must only queue work: no
// host synchronisation, no reading back, the same shapes every call; the
// tensors it leaves behind are rewritten by every replay. Autocast's weight
// cache is off while capturing. Throws std::invalid_argument where this
// LibTorch has no CUDA.
std::function<void()> captureCudaGraph(const c10::Device& device, const std::function<void()>& queueStep);

// "bf16", "fp16", "fp32": the short names the benchmark's JSON uses.
std::string shortDtypeName(c10::ScalarType dtype);

}  // namespace widelab
