// defines: ParameterGroup, parameterGroups, HistogramsOnDevice, histogramsOnDevice,
// readHistograms, histogramsDue: the weights and gradients of a model's parameter
// groups as histograms over training (vocab/Snapshot.h: ValueHistogram), counted
// on the device without waiting for it, read when the train line is written
#pragma once

#include "vocab/Snapshot.h"

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace widelab {

inline constexpr int kHistogramBuckets = 30;

// The parameters of one part of the model. A parameter's group is its name up
// to its first number ("attention.0.qkv.weight" is in "attention.0",
// "decoder.ffn.1.w_in" in "decoder.ffn.1"); a name without one is grouped by its
// first part ("embed.token.weight" in "embed", "cls" in "cls"). So a block's
// attention, its FFN (every expert of it), its router and each LayerNorm are a
// group each, and a shared sublayer is one group however many blocks use it.
struct ParameterGroup {
    std::string name;
    std::vector<torch::Tensor> parameters;
};
std::string parameterGroupOf(const std::string& parameterName);
// The model's trainable parameters by group, in the order named_parameters first names each group.
std::vector<ParameterGroup> parameterGroups(const torch::nn::Module& model);

// Histograms counted on the device and not yet read: per group, its smallest
// and largest value and kHistogramBuckets counts, one row each.
struct HistogramsOnDevice {
    std::vector<std::string> groups;
    torch::Tensor table;  // [groups, 2 + buckets], float64
    bool empty() const { return groups.empty(); }
};
enum class HistogramOf { Weights, Gradients };
// Queues the counting: nothing waits for the device. Gradients: a parameter
// without one (unused by the step) is left out, a group without any too.
HistogramsOnDevice histogramsOnDevice(const std::vector<ParameterGroup>& groups, HistogramOf what);
// One copy to the host for every group.
std::vector<ValueHistogram> readHistograms(const HistogramsOnDevice& histograms);

// Whether the train line of the steps first..last (optimiser updates, from 1)
// holds histograms: the run's first line, a line whose steps reach a multiple of
// `every` (train.eval_every), and the run's last (last == total).
bool histogramsDue(std::int64_t first, std::int64_t last, std::int64_t every, std::int64_t total);

}  // namespace widelab
