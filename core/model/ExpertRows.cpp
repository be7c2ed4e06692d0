#include "ExpertRows.h"

#include "cuda/ExpertRowsMath.h"
#include "runtime/FastPaths.h"
#include "runtime/TriedOnce.h"

#include <ATen/Parallel.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/torch.h>

#if WIDELAB_CUDA_KERNELS
#include "cuda/ExpertRowsKernel.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <optional>
#include <stdexcept>

namespace widelab {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::optional<cuda::RowType> rowType(c10::ScalarType type)
{
    switch (type) {
    case c10::ScalarType::Float:
        return cuda::RowType::Float;
    case c10::ScalarType::BFloat16:
        return cuda::RowType::BFloat16;
    case c10::ScalarType::Half:
        return cuda::RowType::Half;
    default:
        return std::nullopt;
    }
}

// Calls `run` with a null pointer of the host's C++ type for `type`.
template <typename Run>
void withHostType(cuda::RowType type, Run&& run)
{
    switch (type) {
    case cuda::RowType::Float:
        return run(static_cast<float*>(nullptr));
    case cuda::RowType::BFloat16:
        return run(static_cast<c10::BFloat16*>(nullptr));
    case cuda::RowType::Half:
        return run(static_cast<c10::Half*>(nullptr));
    }
}

// Calls `run` with null pointers of the host's C++ types for `a` and `b`.
template <typename Run>
void withHostTypes(cuda::RowType a, cuda::RowType b, Run&& run)
{
    withHostType(a, [&](auto* first) { withHostType(b, [&](auto* second) { run(first, second); }); });
}

cuda::ExpertRowsShape shapeOf(std::int64_t tokens, std::int64_t choices, std::int64_t width, std::int64_t rowWidth,
                              const torch::Tensor& token, const torch::Tensor& row)
{
    cuda::ExpertRowsShape shape;
    shape.tokens = tokens;
    shape.choices = choices;
    shape.width = width;
    shape.rowWidth = rowWidth;
    shape.token = token.data_ptr<std::int64_t>();
    shape.row = row.data_ptr<std::int64_t>();
    return shape;
}

#if WIDELAB_CUDA_KERNELS
void launched(const char* error, const torch::Tensor& on, const char* what)
{
    if (error != nullptr)
        throw std::runtime_error(std::string("the expert rows' ") + what + " kernel could not start on "
                                 + on.device().str() + ": " + error);
}

void* streamOf(const torch::Tensor& on)
{
    return c10::cuda::getCurrentCUDAStream(on.device().index()).stream();
}
#endif

// Rows per task of the host loops: a few thousand values each.
std::int64_t grainFor(std::int64_t width) { return std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, width)); }

class DispatchRowsFunction : public torch::autograd::Function<DispatchRowsFunction> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& token,
                                 const torch::Tensor& row, std::int64_t choices, std::int64_t biasColumns,
                                 c10::ScalarType dtype)
    {
        const torch::Tensor tokens = x.contiguous();
        const std::int64_t S = tokens.size(0), D = tokens.size(1), P = token.size(0);
        ctx->save_for_backward({token, row});
        ctx->saved_data["choices"] = choices;
        ctx->saved_data["tokens"] = S;
        ctx->saved_data["width"] = D;
        ctx->saved_data["rowWidth"] = D + biasColumns;
        ctx->saved_data["xType"] = static_cast<std::int64_t>(x.scalar_type());
        torch::Tensor rows = torch::empty({P, D + biasColumns}, tokens.options().dtype(dtype));
        const cuda::ExpertRowsShape shape = shapeOf(S, choices, D, D + biasColumns, token, row);
        const cuda::RowType in = *rowType(tokens.scalar_type()), out = *rowType(dtype);
#if WIDELAB_CUDA_KERNELS
        if (tokens.is_cuda()) {
            const c10::cuda::CUDAGuard onDevice(tokens.device());
            launched(cuda::launchGatherRows(shape, in, tokens.data_ptr(), out, rows.data_ptr(), streamOf(tokens)), tokens,
                     "dispatch");
            return rows;
        }
#endif
        withHostTypes(in, out, [&](auto* inTag, auto* outTag) {
            using In = std::remove_pointer_t<decltype(inTag)>;
            using Out = std::remove_pointer_t<decltype(outTag)>;
            const In* from = static_cast<const In*>(tokens.data_ptr());
            Out* to = static_cast<Out*>(rows.data_ptr());
            at::parallel_for(0, P, grainFor(shape.rowWidth), [&](std::int64_t begin, std::int64_t end) {
                for (std::int64_t i = begin; i < end; ++i)
                    for (std::int64_t c = 0; c < shape.rowWidth; ++c)
                        to[i * shape.rowWidth + c] = Out(cuda::gatherRowValue(shape, from, i, c));
            });
        });
        return rows;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor &token = saved[0], &row = saved[1];
        const std::int64_t choices = ctx->saved_data["choices"].toInt(), rowWidth = ctx->saved_data["rowWidth"].toInt();
        const auto xType = static_cast<c10::ScalarType>(ctx->saved_data["xType"].toInt());
        const torch::Tensor gradRows = grads[0].contiguous();
        const std::int64_t S = ctx->saved_data["tokens"].toInt(), D = ctx->saved_data["width"].toInt();
        torch::Tensor gradX = torch::empty({S, D}, gradRows.options().dtype(xType));
        const cuda::ExpertRowsShape shape = shapeOf(S, choices, D, rowWidth, token, row);
        const cuda::RowType in = *rowType(gradRows.scalar_type()), out = *rowType(xType);
#if WIDELAB_CUDA_KERNELS
        if (gradRows.is_cuda()) {
            const c10::cuda::CUDAGuard onDevice(gradRows.device());
            launched(cuda::launchTokenGradient(shape, in, gradRows.data_ptr(), out, gradX.data_ptr(), streamOf(gradRows)),
                     gradRows, "dispatch's gradient");
            return {gradX, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
        }
#endif
        withHostTypes(in, out, [&](auto* inTag, auto* outTag) {
            using Grad = std::remove_pointer_t<decltype(inTag)>;
            using Out = std::remove_pointer_t<decltype(outTag)>;
            const Grad* from = static_cast<const Grad*>(gradRows.data_ptr());
            Out* to = static_cast<Out*>(gradX.data_ptr());
            at::parallel_for(0, S, grainFor(D), [&](std::int64_t begin, std::int64_t end) {
                for (std::int64_t s = begin; s < end; ++s)
                    for (std::int64_t c = 0; c < D; ++c)
                        to[s * D + c] = Out(cuda::tokenGradientValue(shape, from, s, c));
            });
        });
        return {gradX, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

class CombineRowsFunction : public torch::autograd::Function<CombineRowsFunction> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& answers, const torch::Tensor& row,
                                 const torch::Tensor& weight, std::int64_t choices, c10::ScalarType dtype)
    {
        const torch::Tensor rows = answers.contiguous(), weights = weight.contiguous();
        const std::int64_t P = row.size(0), D = rows.size(1);
        const std::int64_t S = choices > 0 ? P / choices : 0;
        ctx->save_for_backward({rows, row, weights});
        ctx->saved_data["choices"] = choices;
        ctx->saved_data["outType"] = static_cast<std::int64_t>(dtype);
        torch::Tensor out = torch::empty({S, D}, rows.options().dtype(dtype));
        const cuda::ExpertRowsShape shape = shapeOf(S, choices, D, D, row, row);
        const cuda::RowType in = *rowType(rows.scalar_type()), to = *rowType(dtype);
#if WIDELAB_CUDA_KERNELS
        if (rows.is_cuda()) {
            const c10::cuda::CUDAGuard onDevice(rows.device());
            launched(cuda::launchCombine(shape, in, rows.data_ptr(), weights.data_ptr<float>(), to, out.data_ptr(),
                                         streamOf(rows)),
                     rows, "combine");
            return out;
        }
#endif
        withHostTypes(in, to, [&](auto* inTag, auto* outTag) {
            using Answer = std::remove_pointer_t<decltype(inTag)>;
            using Out = std::remove_pointer_t<decltype(outTag)>;
            const Answer* from = static_cast<const Answer*>(rows.data_ptr());
            const float* w = weights.data_ptr<float>();
            Out* result = static_cast<Out*>(out.data_ptr());
            at::parallel_for(0, S, grainFor(D), [&](std::int64_t begin, std::int64_t end) {
                for (std::int64_t s = begin; s < end; ++s)
                    for (std::int64_t c = 0; c < D; ++c)
                        result[s * D + c] = Out(cuda::combinedValue(shape, from, w, s, c));
            });
        });
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor &rows = saved[0], &row = saved[1], &weights = saved[2];
        const std::int64_t choices = ctx->saved_data["choices"].toInt();
        const auto outType = static_cast<c10::ScalarType>(ctx->saved_data["outType"].toInt());
        const torch::Tensor gradOut = grads[0].to(outType).contiguous();
        const std::int64_t P = row.size(0), D = rows.size(1);
        const std::int64_t S = choices > 0 ? P / choices : 0;
        // Every row is exactly one pair's, so each is written once.
        torch::Tensor gradAnswers = torch::empty_like(rows), gradWeight = torch::empty_like(weights);
        const cuda::ExpertRowsShape shape = shapeOf(S, choices, D, D, row, row);
        const cuda::RowType answerType = *rowType(rows.scalar_type()), gradType = *rowType(outType);
#if WIDELAB_CUDA_KERNELS
        if (rows.is_cuda()) {
            const c10::cuda::CUDAGuard onDevice(rows.device());
            launched(cuda::launchCombineBackward(shape, answerType, rows.data_ptr(), weights.data_ptr<float>(), gradType,
                                                 gradOut.data_ptr(), gradAnswers.data_ptr(),
                                                 gradWeight.data_ptr<float>(), streamOf(rows)),
                     rows, "combine's gradient");
            return {gradAnswers, torch::Tensor(), gradWeight, torch::Tensor(), torch::Tensor()};
        }
#endif
        withHostTypes(answerType, gradType, [&](auto* answerTag, auto* gradTag) {
            using Answer = std::remove_pointer_t<decltype(answerTag)>;
            using Grad = std::remove_pointer_t<decltype(gradTag)>;
            const Answer* answers = static_cast<const Answer*>(rows.data_ptr());
            const Grad* gradient = static_cast<const Grad*>(gradOut.data_ptr());
            const float* w = weights.data_ptr<float>();
            Answer* toAnswers = static_cast<Answer*>(gradAnswers.data_ptr());
            float* toWeight = gradWeight.data_ptr<float>();
            at::parallel_for(0, P, grainFor(D), [&](std::int64_t begin, std::int64_t end) {
                for (std::int64_t p = begin; p < end; ++p) {
                    const std::int64_t r = shape.row[p];
                    float sum = 0.0f;
                    for (std::int64_t c = 0; c < D; ++c) {
                        toAnswers[r * D + c] = Answer(cuda::answerGradientValue(shape, gradient, w, p, c));
                        sum += cuda::gateGradientTerm(shape, answers, gradient, p, c);
                    }
                    toWeight[p] = sum;
                }
            });
        });
        return {gradAnswers, torch::Tensor(), gradWeight, torch::Tensor(), torch::Tensor()};
    }
};

// Whether the fused pass takes these tensors: types it knows, on a device it runs on.
bool fusedTakes(const torch::Tensor& on, std::initializer_list<c10::ScalarType> types)
{
    for (const c10::ScalarType type : types)
        if (!rowType(type))
            return false;
    return fusedExpertRowsRun(on.device());
}

#if WIDELAB_CUDA_KERNELS
// Where the fused pair differs from the operators on a small problem on
// `device`, or "": 37 tokens, top-2, 24 columns and 8 bias columns, bf16 rows,
// the rows a permutation of the pairs with every fifth pair dropped.
std::string rowsDifferFromOperators(const c10::Device& device)
{
    // The first call may come from a forward pass without gradients or under
    // autocast: the check takes gradients, in the types it names.
    const c10::InferenceMode notInference(false);
    const torch::AutoGradMode withGradients(true);
    const c10::impl::ExcludeDispatchKeyGuard noAutocast(c10::autocast_dispatch_keyset);
    const std::int64_t S = 37, K = 2, D = 24, P = S * K, bias = 8;
    // Row i holds pair (7 i) mod P (7 and 74 share no factor), dropped when that pair is 3 mod 5.
    const torch::Tensor pairOfRow = torch::arange(P, torch::kLong).mul(7).remainder(P);
    const torch::Tensor dropped = pairOfRow.remainder(5).eq(3);
    const torch::Tensor token = torch::where(dropped, torch::full({P}, S, torch::kLong), pairOfRow.div(K, "floor"));
    const torch::Tensor row = torch::empty({P}, torch::kLong).scatter_(0, pairOfRow, torch::arange(P, torch::kLong));
    // Values without a draw: the run's random streams stay as they were.
    const auto spread = [](std::int64_t n, double step) { return torch::sin(torch::arange(n, torch::kFloat) * step); };
    const torch::Tensor x0 = spread(S * D, 0.37).view({S, D}), answers0 = spread(P * D, 0.53).view({P, D});
    const torch::Tensor weight0 = torch::where(dropped.index_select(0, row), torch::zeros({P}), spread(P, 0.91).abs());
    const torch::Tensor upstreamRows = spread(P * (D + bias), 0.29).view({P, D + bias});
    const torch::Tensor upstreamOut = spread(S * D, 0.61).view({S, D});
    const auto on = [&](const torch::Tensor& t) { return t.to(device); };

    std::vector<std::vector<torch::Tensor>> results;
    for (const bool fused : {true, false}) {
        const torch::Tensor x = on(x0).requires_grad_(), answers = on(answers0).to(torch::kBFloat16).requires_grad_();
        const torch::Tensor weight = on(weight0).requires_grad_();
        const torch::Tensor rows =
            fused ? DispatchRowsFunction::apply(x, on(token), on(row), K, bias, c10::ScalarType::BFloat16)
                  : dispatchRowsByOperators(x, on(token), on(row), K, bias, c10::ScalarType::BFloat16);
        const torch::Tensor out = fused ? CombineRowsFunction::apply(answers, on(row), weight, K, c10::ScalarType::Float)
                                        : combineRowsByOperators(answers, on(row), weight, K, c10::ScalarType::Float);
        torch::autograd::backward({rows, out}, {on(upstreamRows).to(torch::kBFloat16), on(upstreamOut)});
        results.push_back({rows.detach().to(torch::kFloat).cpu(), out.detach().cpu(), x.grad().cpu(),
                           answers.grad().to(torch::kFloat).cpu(), weight.grad().cpu()});
    }
    const char* names[] = {"rows", "combined tokens", "the tokens' gradient", "the answers' gradient",
                           "the weights' gradient"};
    // bf16 sums by atomics against float sums; float sums in other orders.
    const double tolerance[] = {0.0, 1e-5, 2e-2, 0.0, 1e-4};
    for (std::size_t i = 0; i < results[0].size(); ++i)
        if (!torch::allclose(results[0][i], results[1][i], tolerance[i], tolerance[i]))
            return std::string("other ") + names[i] + " than LibTorch's operators";
    return "";
}
#endif

}  // namespace

torch::Tensor dispatchRowsByOperators(const torch::Tensor& x, const torch::Tensor& token, const torch::Tensor& row,
                                      std::int64_t choices, std::int64_t biasColumns, c10::ScalarType dtype)
{
    (void)row;
    (void)choices;
    const std::int64_t S = x.size(0), D = x.size(1);
    // [S + 1, D + biasColumns]: the tokens padded with zeros beside and below, then the 1s.
    const torch::Tensor tokensWithOne = torch::constant_pad_nd(x.to(dtype), {0, biasColumns, 0, 1});
    tokensWithOne.narrow(0, 0, S).select(1, D).fill_(1);
    return tokensWithOne.index_select(0, token);
}

torch::Tensor combineRowsByOperators(const torch::Tensor& answers, const torch::Tensor& row, const torch::Tensor& weight,
                                     std::int64_t choices, c10::ScalarType dtype)
{
    const std::int64_t P = row.size(0), D = answers.size(1);
    const std::int64_t S = choices > 0 ? P / choices : 0;
    return (answers.index_select(0, row) * weight.unsqueeze(1)).to(dtype).view({S, choices, D}).sum(1);
}

torch::Tensor dispatchRows(const torch::Tensor& x, const torch::Tensor& token, const torch::Tensor& row,
                           std::int64_t choices, std::int64_t biasColumns, c10::ScalarType dtype)
{
    if (!fusedTakes(x, {x.scalar_type(), dtype}))
        return dispatchRowsByOperators(x, token, row, choices, biasColumns, dtype);
    return DispatchRowsFunction::apply(x, token.to(torch::kLong).contiguous(), row.to(torch::kLong).contiguous(),
                                       choices, biasColumns, dtype);
}

torch::Tensor combineRows(const torch::Tensor& answers, const torch::Tensor& row, const torch::Tensor& weight,
                          std::int64_t choices, c10::ScalarType dtype)
{
    if (!fusedTakes(answers, {answers.scalar_type(), dtype}))
        return combineRowsByOperators(answers, row, weight, choices, dtype);
    return CombineRowsFunction::apply(answers, row.to(torch::kLong).contiguous(), weight.to(torch::kFloat), choices,
                                      dtype);
}

std::string fusedExpertRowsRefusal(const c10::Device& device)
{
    if (!fastPathEnabled(FastPath::FusedExpertRows))
        return "WIDELAB_DISABLE lists fused_expert_rows";
    if (device.is_cpu())
        return "";
#if WIDELAB_CUDA_KERNELS
    if (!device.is_cuda())
        return "the expert rows' kernels are CUDA's, not " + device.str() + "'s";
    static TriedOnce kernels("the expert rows' kernels");
    return kernels.refusal(device, [](const c10::Device& cuda) {
        const std::string differs = rowsDifferFromOperators(cuda);
        return differs.empty() ? differs : "the expert rows' kernels give " + differs + " on " + cuda.str();
    });
#else
    return "this build has no expert rows' kernels for " + device.str();
#endif
}

}  // namespace widelab
