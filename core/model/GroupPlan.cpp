#include "GroupPlan.h"

#include "runtime/FastPaths.h"
#include "runtime/TriedOnce.h"

#include <torch/torch.h>

#if WIDELAB_CUDA_KERNELS
#include "cuda/GroupPlanKernel.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <limits>
#include <stdexcept>

namespace widelab {
namespace {

#if WIDELAB_CUDA_KERNELS
GroupPlan planByKernel(const torch::Tensor& expert, const torch::Tensor& kept, std::int64_t experts)
{
    const std::int64_t S = expert.size(0), K = expert.size(1), P = S * K;
    const torch::Tensor pairExpert = expert.to(torch::kLong).contiguous(), pairKept = kept.to(torch::kBool).contiguous();
    const auto longs = pairExpert.options();
    GroupPlan plan;
    plan.row = torch::empty({P}, longs);
    plan.token = torch::empty({P}, longs);
    plan.rowKey = torch::empty({P}, longs);
    plan.ends = torch::empty({experts}, longs.dtype(torch::kInt));
    const c10::cuda::CUDAGuard onDevice(pairExpert.device());
    cuda::GroupPlanArgs args;
    args.expert = pairExpert.data_ptr<std::int64_t>();
    args.kept = pairKept.data_ptr<bool>();
    args.tokens = S;
    args.choices = static_cast<int>(K);
    args.experts = static_cast<int>(experts);
    args.row = plan.row.data_ptr<std::int64_t>();
    args.token = plan.token.data_ptr<std::int64_t>();
    args.rowKey = plan.rowKey.data_ptr<std::int64_t>();
    args.ends = plan.ends.data_ptr<int>();
    args.stream = c10::cuda::getCurrentCUDAStream(pairExpert.device().index()).stream();
    if (const char* error = cuda::launchGroupPlan(args))
        throw std::runtime_error(std::string("the group plan kernel could not start on ") + pairExpert.device().str()
                                 + ": " + error);
    return plan;
}

// Where the kernel plans other than the operators on `device`, or "".
std::string planDiffersFromOperators(const c10::Device& device)
{
    struct Problem {
        std::int64_t tokens, choices, experts;
    };
    // 1,500 tokens of two choices span every warp's segment (94 pairs each)
    // in several passes of 32; 256 experts fill the counters; 37 tokens leave
    // most warps no pair.
    for (const Problem& problem : {Problem{1500, 2, 8}, Problem{700, 1, 256}, Problem{37, 3, 5}}) {
        const std::int64_t S = problem.tokens, K = problem.choices, E = problem.experts, P = S * K;
        // Experts and drops spread without a draw: the run's random streams stay as they were.
        const torch::Tensor spread = torch::sin(torch::arange(P, torch::kFloat) * 1.37f).abs();
        const torch::Tensor expert = spread.mul(static_cast<double>(E)).floor().clamp_max(E - 1).to(torch::kLong).view({S, K});
        const torch::Tensor kept = torch::cos(torch::arange(P, torch::kFloat) * 0.71f).gt(-0.6).view({S, K});
        const GroupPlan want = planGroupsByOperators(expert, kept, E);
        const GroupPlan got = planByKernel(expert.to(device), kept.to(device), E);
        const char* names[] = {"rows", "tokens", "keys", "group ends"};
        const torch::Tensor wanted[] = {want.row, want.token, want.rowKey, want.ends};
        const torch::Tensor gotten[] = {got.row, got.token, got.rowKey, got.ends};
        for (std::size_t i = 0; i < 4; ++i)
            if (!torch::equal(gotten[i].cpu(), wanted[i]))
                return std::string("other ") + names[i] + " than LibTorch's operators (" + std::to_string(S)
                       + " tokens, top " + std::to_string(K) + ", " + std::to_string(E) + " experts)";
    }
    return "";
}
#endif

}  // namespace

GroupPlan planGroupsByOperators(const torch::Tensor& expert, const torch::Tensor& kept, std::int64_t experts)
{
    const std::int64_t E = experts, S = expert.size(0), K = expert.size(1);
    // Sorted by key, the dropped pairs last (key E), stably.
    const torch::Tensor key = torch::where(kept.reshape({-1}), expert.reshape({-1}), E);
    const torch::Tensor order = std::get<1>(torch::sort(key, /*stable=*/true, /*dim=*/0, /*descending=*/false));
    GroupPlan plan;
    plan.rowKey = key.index_select(0, order);
    plan.ends = torch::zeros({E}, key.options())
                    .scatter_add_(0, key.clamp_max(E - 1), torch::ones_like(key))
                    .cumsum(0)
                    .to(torch::kInt);
    // Pair s * K + k is token s's; a dropped pair's row is gathered from the row of zeros (row S).
    plan.token = torch::where(plan.rowKey < E, torch::div(order, K, "floor"), S);
    plan.row = torch::empty_like(order).scatter_(0, order, torch::arange(order.size(0), order.options()));
    return plan;
}

GroupPlan planGroups(const torch::Tensor& expert, const torch::Tensor& kept, std::int64_t experts)
{
#if WIDELAB_CUDA_KERNELS
    if (expert.numel() < std::numeric_limits<int>::max() && groupPlanRefusal(expert.device(), experts).empty())
        return planByKernel(expert, kept, experts);
#endif
    return planGroupsByOperators(expert, kept, experts);
}

std::string groupPlanRefusal(const c10::Device& device, std::int64_t experts)
{
    if (!fastPathEnabled(FastPath::FusedRouting))
        return "WIDELAB_DISABLE lists fused_routing";
#if WIDELAB_CUDA_KERNELS
    if (!device.is_cuda())
        return "the group plan kernel is CUDA's; " + device.str() + " plans by operators";
    if (experts < 1 || experts > cuda::kGroupPlanMaxExperts)
        return std::to_string(experts) + " experts (the group plan kernel takes 1 .. "
               + std::to_string(cuda::kGroupPlanMaxExperts) + ")";
    static TriedOnce kernel("the group plan kernel");
    return kernel.refusal(device, [](const c10::Device& cuda) {
        const std::string differs = planDiffersFromOperators(cuda);
        return differs.empty() ? differs : "the group plan kernel gives " + differs + " on " + cuda.str();
    });
#else
    (void)experts;
    return "this build has no group plan kernel for " + device.str();
#endif
}

}  // namespace widelab
