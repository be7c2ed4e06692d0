#include "InferenceProduct.h"

#include "runtime/Autocast.h"
#include "runtime/FastPaths.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#ifdef WIDELAB_HAVE_DNNL
#include <dnnl.hpp>
#endif

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace widelab {
namespace {

#ifdef WIDELAB_HAVE_DNNL
// A matrix's strides as oneDNN takes them: rows contiguous, columns
// contiguous (a transposed view such as a Linear weight's .t()), or neither
// (none: oneDNN's matmul wants one of the two).
std::vector<std::int64_t> layout(const torch::Tensor& t)
{
    const std::int64_t rows = t.size(0), cols = t.size(1);
    if (t.stride(1) == 1 && t.stride(0) >= std::max<std::int64_t>(1, cols))
        return {t.stride(0), 1};
    if (t.stride(0) == 1 && t.stride(1) >= std::max<std::int64_t>(1, rows))
        return {1, t.stride(1)};
    return {};
}

const dnnl::engine& cpuEngine()
{
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

dnnl::memory::desc matrix(const torch::Tensor& t)
{
    const std::vector<std::int64_t> strides = layout(t);
    return dnnl::memory::desc({t.size(0), t.size(1)}, dnnl::memory::data_type::f32,
                              dnnl::memory::dims(strides.begin(), strides.end()));
}
#endif

}  // namespace

bool inferenceProductApplies(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias)
{
#ifdef WIDELAB_HAVE_DNNL
    auto fp32OnCpu = [](const torch::Tensor& t) { return t.is_cpu() && t.scalar_type() == torch::kFloat; };
    // One row is a matrix-vector product (a decoding step of one sequence), which
    // the BLAS's gemv makes without waking a thread: 8-17 us against oneDNN's
    // 36-39 for [1, 256] x [256, 768]; from two rows on oneDNN measured faster.
    return fastPathEnabled(FastPath::OneDnnProducts) && a.dim() == 2 && b.dim() == 2 && a.size(0) > 1
           && a.size(1) == b.size(0)
           && fp32OnCpu(a) && fp32OnCpu(b)
           && (!bias.defined() || (fp32OnCpu(bias) && bias.dim() == 1 && bias.size(0) == b.size(1)))
           && !torch::GradMode::is_enabled() && !autocastEnabled(c10::DeviceType::CPU) && b.numel() > 0
           && !layout(a).empty() && !layout(b).empty();
#else
    (void)a;
    (void)b;
    (void)bias;
    return false;
#endif
}

torch::Tensor inferenceProduct(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                               std::optional<Activation> activation)
{
    const std::int64_t M = a.size(0), N = b.size(1);
    torch::Tensor out = torch::empty({M, N}, a.options());
#ifdef WIDELAB_HAVE_DNNL
    using dnnl::memory;
    const torch::Tensor row = bias.defined() ? bias.contiguous().view({1, N}) : torch::Tensor();
    dnnl::post_ops post;
    if (activation) {
        const dnnl::algorithm kind = *activation == Activation::Relu   ? dnnl::algorithm::eltwise_relu
                                     : *activation == Activation::Silu ? dnnl::algorithm::eltwise_swish
                                                                       : dnnl::algorithm::eltwise_gelu_erf;
        // alpha: ReLU's slope below zero (0), swish's x sigmoid(alpha x) (1); GELU takes none.
        const float alpha = *activation == Activation::Relu ? 0.0f : 1.0f;
        post.append_eltwise(1.0f, kind, alpha, 0.0f);
    }
    dnnl::primitive_attr attributes;
    attributes.set_post_ops(post);
    const memory::desc src = matrix(a), weights = matrix(b), dst = matrix(out);
    // oneDNN keeps made primitives in its cache: the same shapes again cost a lookup.
    const auto made = row.defined()
                          ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, matrix(row), dst), attributes,
                                                         cpuEngine())
                          : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attributes, cpuEngine());
    auto memoryOf = [](const memory::desc& d, const torch::Tensor& t) {
        return memory(d, cpuEngine(), const_cast<float*>(t.data_ptr<float>()));
    };
    std::unordered_map<int, memory> arguments{{DNNL_ARG_SRC, memoryOf(src, a)},
                                              {DNNL_ARG_WEIGHTS, memoryOf(weights, b)},
                                              {DNNL_ARG_DST, memoryOf(dst, out)}};
    if (row.defined())
        arguments.emplace(DNNL_ARG_BIAS, memoryOf(matrix(row), row));
    // oneDNN's threads are OpenMP's, as many as this thread's OpenMP setting
    // says: set from the process's (setComputeThreads) as ATen does before its
    // own loops, for threads started later (the desktop's worker).
    at::internal::lazy_init_num_threads();
    dnnl::stream stream(cpuEngine());
    dnnl::matmul(made).execute(stream, arguments);
    stream.wait();
#else
    (void)bias;
    (void)activation;
    throw std::logic_error("inferenceProduct without oneDNN");
#endif
    return out;
}

}  // namespace widelab
