// defines: groupedExpertsRun, groupedProductsRefusal, groupedExpertAnswers: a
// mixture's experts as two grouped products (at::_grouped_mm, LibTorch 2.8 and
// newer) over the (token, choice) pairs sorted by expert, instead of batched
// products over an [E, C, D] capacity buffer
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/types.h>

#include <string>

namespace widelab {

struct FeedForwardImpl;
struct Routing;

// Why grouped products cannot multiply experts on this device in this type,
// or "" when they can: the linked LibTorch must have at::_grouped_mm, and that
// product, tried once per device and type on groups of odd sizes (one empty),
// must give the per-group products.
std::string groupedProductsRefusal(const c10::Device& device, c10::ScalarType dtype);

// Whether dispatchCombine takes the grouped path for x (the tokens, [S, D]):
// on a GPU where groupedProductsRefusal is "" for the type the products run in
// (autocast's, when on), unless WIDELAB_DISABLE lists grouped_experts. Not on
// the CPU: LibTorch 2.11's CPU grouped product is a fallback, slower than bmm
// over the capacity buffer.
bool groupedExpertsRun(const torch::Tensor& x);

// Every (token, choice) pair's expert answer, [S * K, D] in pair order (row
// s * K + k), zero for the pairs the capacity dropped. perChoice [S * K, D]
// holds each pair's token. The pairs are sorted by expert (the dropped ones
// after the last) and multiplied by two grouped products, so the work is
// the kept pairs' only, whatever the capacity, and nothing reads back to the
// host. Throws when groupedProductsRefusal is not "" for perChoice.
torch::Tensor groupedExpertAnswers(const torch::Tensor& perChoice, const Routing& routing, FeedForwardImpl& experts);

}  // namespace widelab
