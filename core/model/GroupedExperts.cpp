#include "GroupedExperts.h"

#include "ExpertRows.h"
#include "FeedForward.h"
#include "GroupPlan.h"
#include "Router.h"
#include "runtime/Autocast.h"
#include "runtime/FastPaths.h"
#include "runtime/PhaseTimer.h"
#include "runtime/StepCapture.h"

#include <torch/torch.h>
#include <torch/version.h>

#if __has_include(<ATen/ops/_grouped_mm.h>)
#include <ATen/ops/_grouped_mm.h>
#define WIDELAB_HAS_GROUPED_MM 1
#else
#define WIDELAB_HAS_GROUPED_MM 0
#endif

#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace widelab {
namespace {

// The CPU's grouped products. The routing's tensors are in host memory, so the
// groups are counted and ordered here, with no operator, and each expert
// multiplies its own rows by mm, at the BLAS's speed (LibTorch 2.11's CPU
// at::_grouped_mm is a fallback, slower than bmm over the capacity buffer).
SortedAnswers groupedOnHost(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts)
{
    // P = S * K pairs, K = choices, E = experts, D = width
    const std::int64_t E = routing.experts, K = routing.expert.size(1), D = x.size(1);
    std::optional<PhaseScope> timed(std::in_place, Phase::Routing);
    const torch::Tensor expert = routing.expert.reshape({-1}).to(torch::kLong).contiguous();
    const torch::Tensor kept = routing.kept.reshape({-1}).to(torch::kBool).contiguous();
    const std::int64_t P = expert.size(0);
    const std::int64_t* pairExpert = expert.data_ptr<std::int64_t>();
    const bool* pairKept = kept.data_ptr<bool>();

    // A counting sort: each expert's kept pairs in pair order, expert 0 first.
    std::vector<std::int64_t> groupSize(static_cast<std::size_t>(E), 0);
    for (std::int64_t p = 0; p < P; ++p) {
        if (!pairKept[p])
            continue;
        if (pairExpert[p] < 0 || pairExpert[p] >= E)
            throw std::invalid_argument("routing names expert " + std::to_string(pairExpert[p]) + " of "
                                        + std::to_string(E));
        ++groupSize[static_cast<std::size_t>(pairExpert[p])];
    }
    std::vector<std::int64_t> next(static_cast<std::size_t>(E), 0);
    std::int64_t keptPairs = 0;
    for (std::int64_t e = 0; e < E; ++e) {
        next[static_cast<std::size_t>(e)] = keptPairs;
        keptPairs += groupSize[static_cast<std::size_t>(e)];
    }
    // token: sorted row -> its pair's token (pair s * K + k is token s's);
    // row: pair -> its sorted row, the dropped pairs pointing one past the
    // last, at a row of zeros.
    const torch::Tensor token = torch::empty({keptPairs}, torch::kLong);
    const torch::Tensor row = torch::empty({P}, torch::kLong);
    std::int64_t* tokenOf = token.data_ptr<std::int64_t>();
    std::int64_t* rowOf = row.data_ptr<std::int64_t>();
    for (std::int64_t p = 0; p < P; ++p) {
        if (!pairKept[p]) {
            rowOf[p] = keptPairs;
            continue;
        }
        const std::int64_t r = next[static_cast<std::size_t>(pairExpert[p])]++;
        tokenOf[r] = p / K;
        rowOf[p] = r;
    }

    const std::vector<torch::Tensor> groups = x.index_select(0, token).split_with_sizes(groupSize);
    timed.emplace(Phase::FeedForward);
    // unbind, not wIn[e]: its backward stacks the E gradients once, where E
    // selects would each add a zero-filled gradient of the whole stack.
    const std::vector<torch::Tensor> wIn = autocastWeight(experts.wIn).unbind(0);
    const std::vector<torch::Tensor> bIn = autocastWeight(experts.bIn).unbind(0);
    const std::vector<torch::Tensor> wOut = autocastWeight(experts.wOut).unbind(0);
    const std::vector<torch::Tensor> bOut = autocastWeight(experts.bOut).unbind(0);
    std::vector<torch::Tensor> answers;
    answers.reserve(static_cast<std::size_t>(E) + 1);
    for (std::size_t e = 0; e < groups.size(); ++e) {
        const torch::Tensor hidden = activatedProduct(groups[e], wIn[e], bIn[e], experts.activation);
        answers.push_back(torch::addmm(bOut[e], hidden, wOut[e].t()));
    }
    timed.emplace(Phase::Routing);
    answers.push_back(torch::zeros({1, D}, answers.front().options()));
    return {torch::cat(answers), row, false};
}

#if WIDELAB_HAS_GROUPED_MM
// Columns beside each row that carry the first product's bias: a 1, then
// zeros, 8 in all, so that the rows stay a multiple of 16 bytes in any type.
constexpr std::int64_t kBiasColumns = 8;

// Why at::_grouped_mm cannot take the experts' rows, or "": it reads rows of a
// multiple of 16 bytes, in the tokens' width and in the experts' hidden width.
std::string rowsRefusal(std::int64_t width, std::int64_t hidden, c10::ScalarType dtype)
{
    const auto bytes = static_cast<std::int64_t>(c10::elementSize(dtype));
    for (const auto& [name, values] : {std::pair{"d_model", width}, std::pair{"the experts' ffn_dim", hidden}})
        if (values * bytes % 16 != 0)
            return std::string("at::_grouped_mm reads rows of a multiple of 16 bytes, and ") + name + " "
                   + std::to_string(values) + " in " + c10::toString(dtype) + " is " + std::to_string(values * bytes);
    return "";
}

std::string tryGroupedProduct(const c10::Device& device, c10::ScalarType dtype)
{
    try {
        // Rows of 32 values (at::_grouped_mm wants rows of a multiple of 16
        // bytes); groups of 5, 0 and 19 rows; the second matrix transposed, as
        // the experts' weights are.
        const auto options = torch::TensorOptions().dtype(dtype).device(device);
        const torch::Tensor a = torch::linspace(-1.0, 1.0, 24 * 32, options).view({24, 32});
        const torch::Tensor w = torch::linspace(1.0, -1.0, 3 * 16 * 32, options).view({3, 16, 32});
        const torch::Tensor offsets = torch::tensor({5, 5, 24}, torch::TensorOptions().dtype(torch::kInt).device(device));
        const torch::Tensor got = at::_grouped_mm(a, w.transpose(1, 2), offsets).to(torch::kFloat).cpu();
        const torch::Tensor want =
            torch::cat({torch::mm(a.narrow(0, 0, 5), w[0].t()), torch::mm(a.narrow(0, 5, 19), w[2].t())})
                .to(torch::kFloat)
                .cpu();
        if (!torch::allclose(got, want, 2e-2, 2e-1))
            return "at::_grouped_mm gives other products than mm on " + device.str() + " in "
                   + c10::toString(dtype);
        // On a GPU the product must run there alone. Where LibTorch has no
        // kernel for the type or GPU (2.11's takes bf16 only), it loops over
        // the groups on the host, reading their ends back: a synchronisation
        // every call, and no CUDA graph can record it. Recording it says which.
        if (device.is_cuda()) {
            const SideStream side(device);
            try {
                (void)cudaGraphRecorder(device)([&] { (void)at::_grouped_mm(a, w.transpose(1, 2), offsets); });
            } catch (const std::exception& error) {
                const std::string what = error.what();
                return "at::_grouped_mm on " + device.str() + " in " + c10::toString(dtype)
                       + " reads its groups back to the host (a synchronisation every call, and no CUDA graph): "
                       + what.substr(0, what.find('\n'));
            }
        }
    } catch (const std::exception& error) {
        const std::string what = error.what();
        return "at::_grouped_mm fails on " + device.str() + " in " + c10::toString(dtype) + ": "
               + what.substr(0, what.find('\n'));
    }
    return "";
}
#endif

}  // namespace

std::string groupedProductsRefusal(const c10::Device& device, c10::ScalarType dtype)
{
#if WIDELAB_HAS_GROUPED_MM
    static std::mutex mutex;
    static std::map<std::tuple<c10::DeviceType, c10::DeviceIndex, c10::ScalarType>, std::string> tried;
    const std::lock_guard lock(mutex);
    const auto key = std::make_tuple(device.type(), device.has_index() ? device.index() : c10::DeviceIndex(-1), dtype);
    const auto found = tried.find(key);
    if (found != tried.end())
        return found->second;
    // Not tried inside a recording: its copies from the host would break it.
    if (cudaGraphBeingRecorded(device))
        return "at::_grouped_mm is not yet tried on " + device.str() + ", and a CUDA graph is being recorded";
    return tried[key] = tryGroupedProduct(device, dtype);
#else
    (void)device;
    (void)dtype;
    return "LibTorch " TORCH_VERSION " has no at::_grouped_mm (2.8 and newer have it)";
#endif
}

bool groupedExpertsRun(const torch::Tensor& x, std::int64_t hidden)
{
    if (!fastPathEnabled(FastPath::GroupedExperts))
        return false;
    if (groupedProductsFor(x) == GroupedProducts::MmPerExpert)
        return true;
#if WIDELAB_HAS_GROUPED_MM
    const c10::ScalarType dtype = autocastType(x);
    return x.is_cuda() && rowsRefusal(x.size(1), hidden, dtype).empty()
           && groupedProductsRefusal(x.device(), dtype).empty();
#else
    (void)x;
    (void)hidden;
    return false;
#endif
}

GroupedProducts groupedProductsFor(const torch::Tensor& x)
{
    return x.is_cpu() ? GroupedProducts::MmPerExpert : GroupedProducts::GroupedMm;
}

torch::Tensor groupedExpertAnswers(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts,
                                   GroupedProducts products)
{
    const SortedAnswers sorted = sortedExpertAnswers(x, routing, experts, products);
    const PhaseScope timed(Phase::Routing);
    return sorted.answers.index_select(0, sorted.row);  // back to pair order
}

SortedAnswers sortedExpertAnswers(const torch::Tensor& x, const Routing& routing, FeedForwardImpl& experts,
                                  GroupedProducts products)
{
    if (products == GroupedProducts::MmPerExpert) {
        if (!x.is_cpu() || !routing.expert.is_cpu() || !routing.kept.is_cpu())
            throw std::invalid_argument("an mm per expert counts the groups on the host: it takes CPU tensors, not "
                                        + x.device().str());
        return groupedOnHost(x, routing, experts);
    }
#if WIDELAB_HAS_GROUPED_MM
    const c10::ScalarType dtype = autocastType(x);
    for (const std::string& refusal :
         {rowsRefusal(x.size(1), experts.hidden, dtype), groupedProductsRefusal(x.device(), dtype)})
        if (!refusal.empty())
            throw std::invalid_argument(refusal);
    // P = S * K pairs, K = choices, E = experts, M = hidden width
    const std::int64_t E = routing.experts, K = routing.expert.size(1), M = experts.hidden;
    std::optional<PhaseScope> timed(std::in_place, Phase::Routing);
    // The pairs sorted by expert, the dropped pairs last (GroupPlan.h). They
    // join the last expert's group as rows of zeros (without the bias's 1): so
    // every row of both products is written, and theirs are zeros, which the
    // activations (GELU, SiLU, ReLU) keep at zero and which add nothing to the
    // weights' gradients. No where after each product then guards rows that
    // at::_grouped_mm would leave unwritten, forward or backward; their
    // gradients go to the row of zeros, which is let go.
    const GroupPlan plan = planGroups(routing.expert, routing.kept, E);
    // Each row gathered from its token, a dropped pair's from a row of zeros.
    // The first product's bias rides in the product: each token gains a 1 (and
    // zeros, kBiasColumns in all) and each expert's weights its bias beside
    // them, so no [P, M] bias is gathered and added, nor its gradient
    // scattered back pair by pair into E rows; the product's own gradient
    // holds the bias's. [P, D + 8]; one pass each way where dispatchRows is
    // fused (ExpertRows.h).
    const torch::Tensor rows = dispatchRows(x, plan.token, plan.row, K, kBiasColumns, dtype);
    timed.emplace(Phase::FeedForward);
    const auto weightType = experts.wIn.options().dtype(dtype);
    const torch::Tensor wIn = torch::cat({autocastWeight(experts.wIn).to(dtype),
                                          autocastWeight(experts.bIn).to(dtype).unsqueeze(2),
                                          torch::zeros({E, M, kBiasColumns - 1}, weightType)},
                                         2)
                                  .transpose(1, 2);                     // [E, D + 8, M]
    const torch::Tensor wOut = autocastWeight(experts.wOut).to(dtype).transpose(1, 2);  // [E, M, D]
    const torch::Tensor hidden = activate(at::_grouped_mm(rows, wIn, plan.ends), experts.activation);
    // The second product's bias likewise without a gather whose gradient
    // scatters back pair by pair: a [P, E] one-hot of each row's expert (none
    // for a dropped pair) times the [E, D] biases, added to the product by
    // addmm, so that the biases' gradient is one more product. (A non-finite
    // bias then reaches every row, as 0 times it; such a model is lost anyway.)
    const torch::Tensor expertOfRow =
        plan.rowKey.unsqueeze(1).eq(torch::arange(E, plan.rowKey.options())).to(dtype);  // [P, E]
    const torch::Tensor answers =
        torch::addmm(at::_grouped_mm(hidden, wOut, plan.ends), expertOfRow, autocastWeight(experts.bOut).to(dtype));
    return {answers, plan.row, true};
#else
    (void)x;
    (void)routing;
    (void)experts;
    throw std::invalid_argument(groupedProductsRefusal(c10::Device(c10::kCPU), c10::kFloat));
#endif
}

}  // namespace widelab
