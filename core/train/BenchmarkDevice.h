// defines: benchmarkDevice, synchronizeDevice, measureDeviceMatmulPeak: what
// `widelab-cli bench` needs to time work on the CPU or on a CUDA device
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

namespace widelab {

// "cpu", "cuda" (device 0) or "cuda:N". Throws std::invalid_argument naming
// the problem: a malformed name, a LibTorch without a usable CUDA device, or
// an index beyond the devices present.
c10::Device benchmarkDevice(const std::string& name);

// Waits until every kernel queued on `device` has finished; nothing on the CPU.
// Host clocks time a GPU's work only between two of these.
void synchronizeDevice(const c10::Device& device);

// The best FLOP/s of [size x size] x [size x size] products in `dtype` on
// `device` (2 size^3 FLOPs each), after one untimed product: the dense peak
// that model FLOP/s are compared with. On the CPU in fp32 this is
// measureMatmulPeak (Runtime.h); on CUDA each repeat times a burst of products
// between synchronisations, so launch latency does not count.
double measureDeviceMatmulPeak(const c10::Device& device, c10::ScalarType dtype, std::int64_t size, int repeats = 5);

// "bf16", "fp16", "fp32": the short names the benchmark's JSON uses.
std::string shortDtypeName(c10::ScalarType dtype);

}  // namespace widelab
