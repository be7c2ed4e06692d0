#include "FusedRouting.h"

#include "runtime/FastPaths.h"
#include "runtime/TriedOnce.h"

#include <torch/torch.h>

#if WIDELAB_CUDA_KERNELS
#include "cuda/RoutingKernel.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <limits>
#include <stdexcept>

namespace widelab {
namespace {

#if WIDELAB_CUDA_KERNELS
// Why these probabilities are beyond the kernel, or "".
std::string shapeRefusal(const torch::Tensor& probs, const RoutingOptions& options)
{
    const std::int64_t S = probs.size(0), E = probs.size(1), K = options.topK;
    if (E > cuda::kRoutingKernelMaxExperts)
        return std::to_string(E) + " experts (the kernel takes " + std::to_string(cuda::kRoutingKernelMaxExperts) + ")";
    if (K < 1 || K > E || K > cuda::kRoutingKernelMaxTopK)
        return "top_k " + std::to_string(K) + " (the kernel takes 1 .. " + std::to_string(cuda::kRoutingKernelMaxTopK)
               + ", at most the experts)";
    if (S * K >= std::numeric_limits<int>::max())
        return std::to_string(S) + " tokens";
    return "";
}

RoutingDecisions launch(const torch::Tensor& probs, std::int64_t capacity, const RoutingOptions& options)
{
    const std::int64_t S = probs.size(0), E = probs.size(1), K = options.topK;
    const torch::Tensor p = probs.detach().to(torch::kFloat32).contiguous();
    const auto longs = p.options().dtype(torch::kInt64);
    RoutingDecisions d;
    d.expert = torch::empty({S, K}, longs);
    d.slot = torch::empty({S, K}, longs);
    d.kept = torch::empty({S, K}, p.options().dtype(torch::kBool));
    d.chosen = torch::empty({E}, longs);

    const c10::cuda::CUDAGuard onDevice(p.device());
    cuda::RoutingKernelArgs args;
    args.probs = p.data_ptr<float>();
    args.tokens = S;
    args.experts = static_cast<int>(E);
    args.topK = static_cast<int>(K);
    args.capacity = capacity;
    args.causal = options.causal;
    args.countEveryChoice = options.balanceEveryChoice;
    args.expert = d.expert.data_ptr<std::int64_t>();
    args.slot = d.slot.data_ptr<std::int64_t>();
    args.kept = d.kept.data_ptr<bool>();
    args.chosen = d.chosen.data_ptr<std::int64_t>();
    args.stream = c10::cuda::getCurrentCUDAStream(p.device().index()).stream();
    if (const char* error = cuda::launchRoutingKernel(args))
        throw std::runtime_error(std::string("the routing kernel could not start on ") + p.device().str() + ": " + error);
    d.gates = probs.gather(1, d.expert);
    return d;
}

// Where the kernel's decisions differ from the operators', or "". The chosen
// experts must have the top K's probabilities (which of several equal ones is
// chosen is the operators' to leave open); the slots, drops and counts must be
// what the operators serve for those same choices.
std::string differences(const RoutingDecisions& got, const torch::Tensor& probs, std::int64_t capacity,
                        const RoutingOptions& options)
{
    const torch::Tensor expert = got.expert.cpu();
    const std::int64_t E = probs.size(1);
    if (expert.lt(0).any().item<bool>() || expert.ge(E).any().item<bool>())
        return "an expert index outside 0 .. " + std::to_string(E - 1);
    // NaN ranks above every probability: compare it as 2.
    const torch::Tensor ranked = torch::nan_to_num(probs.cpu(), 2.0);
    const torch::Tensor best = std::get<0>(torch::topk(ranked, options.topK, -1));
    if (!torch::equal(ranked.gather(1, expert), best))
        return "chosen experts that are not the most probable";
    if (!std::get<0>(expert.sort(-1)).diff(1, -1).gt(0).all().item<bool>())
        return "a token choosing one expert twice";
    RoutingDecisions want;
    want.slot = servingSlots(expert, torch::Tensor(), E, options);
    want.kept = want.slot < capacity;
    want.chosen = torch::bincount(options.balanceEveryChoice ? expert.reshape({-1}) : expert.select(1, 0), {}, E);
    if (!torch::equal(got.slot.cpu(), want.slot))
        return "other slots";
    if (!torch::equal(got.kept.cpu(), want.kept))
        return "other drops";
    if (!torch::equal(got.chosen.cpu(), want.chosen))
        return "other counts per expert";
    if (!torch::equal(torch::nan_to_num(got.gates.detach().cpu(), 2.0), ranked.gather(1, expert)))
        return "gates that are not the chosen probabilities";
    return "";
}

std::string tryKernel(const c10::Device& device)
{
    struct Problem {
        std::int64_t tokens, experts, topK, capacity;
        bool causal, everyChoice;
    };
    // 1,100 tokens span two chunks of the queue (1,024 entries each) with choice 0
    // alone; the causal problem's 700 x 3 entries span three.
    for (const Problem& problem : {Problem{1100, 8, 2, 180, false, false}, Problem{700, 5, 3, 300, true, true}}) {
        try {
            // Spread logits without a draw: the run's random streams stay as they were.
            torch::Tensor logits = torch::sin(torch::arange(problem.tokens * problem.experts, torch::kFloat32) * 0.7071f)
                                       .mul(3.0)
                                       .view({problem.tokens, problem.experts});
            logits[3].fill_(0.5);                                     // every expert equal
            logits[5].fill_(std::numeric_limits<float>::quiet_NaN());  // a diverged token
            logits[7].narrow(0, 1, 2).fill_(9.0);                     // two equal best
            const torch::Tensor probs = torch::softmax(logits, -1).to(device);
            RoutingOptions routing;
            routing.topK = problem.topK;
            routing.causal = problem.causal;
            routing.balanceEveryChoice = problem.everyChoice;
            const std::string differs = differences(launch(probs, problem.capacity, routing), probs, problem.capacity, routing);
            if (!differs.empty())
                return "the routing kernel decides other than LibTorch's operators on " + device.str() + " ("
                       + std::to_string(problem.tokens) + " tokens, " + std::to_string(problem.experts) + " experts, top "
                       + std::to_string(problem.topK) + (problem.causal ? ", causal" : "") + "): " + differs;
        } catch (const std::exception& error) {
            const std::string what = error.what();
            return "the routing kernel fails on " + device.str() + ": " + what.substr(0, what.find('\n'));
        }
    }
    return "";
}
#endif

}  // namespace

bool fusedRoutingBuilt()
{
#if WIDELAB_CUDA_KERNELS
    return true;
#else
    return false;
#endif
}

std::string fusedRoutingRefusal(const c10::Device& device)
{
#if WIDELAB_CUDA_KERNELS
    if (!device.is_cuda())
        return "the routing kernel is CUDA's; " + device.str() + " routes by operators";
    static TriedOnce kernel("the routing kernel");
    return kernel.refusal(device, tryKernel);
#else
    (void)device;
#if WIDELAB_TORCH_CUDA
    return "this build has no routing kernel (no CUDA compiler was found when it was configured)";
#else
    return "this build's LibTorch has no CUDA";
#endif
#endif
}

bool fusedRoutingRuns(const torch::Tensor& probs, const RoutingOptions& options)
{
#if WIDELAB_CUDA_KERNELS
    return probs.is_cuda() && options.priority == RoutingPriority::Position && fastPathEnabled(FastPath::FusedRouting)
           && shapeRefusal(probs, options).empty() && fusedRoutingRefusal(probs.device()).empty();
#else
    (void)probs;
    (void)options;
    return false;
#endif
}

RoutingDecisions fusedRoutingDecisions(const torch::Tensor& probs, std::int64_t capacity, const RoutingOptions& options)
{
#if WIDELAB_CUDA_KERNELS
    if (!probs.is_cuda())
        throw std::invalid_argument(fusedRoutingRefusal(probs.device()));
    if (options.priority != RoutingPriority::Position)
        throw std::invalid_argument("the routing kernel serves in position priority only");
    if (const std::string refusal = shapeRefusal(probs, options); !refusal.empty())
        throw std::invalid_argument("the routing kernel cannot route " + refusal);
    return launch(probs, capacity, options);
#else
    (void)capacity;
    (void)options;
    throw std::invalid_argument(fusedRoutingRefusal(probs.device()));
#endif
}

}  // namespace widelab
