// defines: groupedExpertsRun, groupedProductsRefusal, groupedExpertAnswers: a
// mixture's experts multiplying only the (token, choice) pairs they keep,
// sorted by expert (on a GPU two grouped products, at::_grouped_mm of LibTorch
// 2.8 and newer; on the CPU one product per expert), instead of batched
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
// must give the per-group products; on a GPU it must also record as a CUDA
// graph (a product that reads its groups back to the host does not). Not
// tried while a CUDA graph is being recorded on the device: it refuses then,
// and tries at the next call.
std::string groupedProductsRefusal(const c10::Device& device, c10::ScalarType dtype);

// Whether dispatchCombine takes the grouped path for x (the tokens, [S, D])
// and experts of `hidden` width, unless WIDELAB_DISABLE lists grouped_experts:
// on the CPU always, on a GPU where groupedProductsRefusal is "" for the type
// the products run in (autocast's, when on) and rows of D and of `hidden`
// values are a multiple of 16 bytes in it, as at::_grouped_mm reads them.
bool groupedExpertsRun(const torch::Tensor& x, std::int64_t hidden);

// How the groups are multiplied: an mm per expert, the groups counted and
// ordered on the host, which reads the routing in place (no operator): CPU
// tensors only; or two grouped products, at::_grouped_mm, ordered on the
// device, nothing read back to the host.
enum class GroupedProducts { MmPerExpert, GroupedMm };

// MmPerExpert for CPU tensors, GroupedMm elsewhere.
GroupedProducts groupedProductsFor(const torch::Tensor& x);

// The experts' answers as their products leave them: `answers` [R, D], rows
// sorted by expert, and `row` [S * K], each (token, choice) pair's row, the
// pairs the capacity dropped at rows of zeros. With `rowsArePairs` every row
// is exactly one pair's (two grouped products: R = S * K), as combineRows
// (ExpertRows.h) takes them; an mm per expert gives the dropped pairs one row
// of zeros between them (R = the kept pairs + 1).
struct SortedAnswers {
    torch::Tensor answers;
    torch::Tensor row;
    bool rowsArePairs = false;
};

// The work of groupedExpertAnswers, before the answers go back to pair order.
SortedAnswers sortedExpertAnswers(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts,
                                  GroupedProducts products);

// Every (token, choice) pair's expert answer, [S * K, D] in pair order (row
// s * K + k), zero for the pairs the capacity dropped; x [S, D] holds the
// tokens. The kept pairs' tokens are gathered sorted by expert and multiplied
// group by group, so the work is theirs only, whatever the capacity. Throws
// std::invalid_argument for MmPerExpert off the CPU, and for GroupedMm where
// groupedProductsRefusal is not "" or the rows are not a multiple of 16 bytes.
torch::Tensor groupedExpertAnswers(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts,
                                   GroupedProducts products);
inline torch::Tensor groupedExpertAnswers(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts)
{
    return groupedExpertAnswers(x, routing, experts, groupedProductsFor(x));
}

}  // namespace widelab
