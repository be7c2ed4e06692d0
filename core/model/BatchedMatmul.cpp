#include "BatchedMatmul.h"

#include "BatchedProduct.h"
#include "InferenceProduct.h"
#include "runtime/FastPaths.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <vector>

namespace widelab {
namespace {

bool loopOverBatch(const torch::Tensor& a)
{
#if TORCH_VERSION_MAJOR < 2
    // Inference only, for now: in training steps the loop measured slower than
    // bmm (docs/performance.md), its autograd graph being G nodes per product.
    // A batch of a few large products is what bmm's one BLAS call a product
    // suits. fp32 only: bf16's bmm (the CPU's autocast) is one oneDNN call
    // for the batch, where a loop of mm made a classifier's CLS row in 1x48
    // 3,072 calls and 89 ms a step, against 2 for the bmm.
    return a.is_cpu() && a.scalar_type() == torch::kFloat && !torch::GradMode::is_enabled()
           && batchedProductTakesWholeProducts(a);
#else
    (void)a;
    return false;
#endif
}

// WideLab's own batched product (BatchedProduct.h) on the CPU in fp32: LibTorch
// 1.13's bmm calls the BLAS once per product, and the per-head products of
// attention ran there at 50-80 GFLOP/s on two threads, against 85-125 for the
// kernel; with the softmax in its tiles a 6x8 training step was 6-9 % faster
// under PyPI's 2.11 (MKL) too (docs/performance.md). That is for many small
// products; a batch of a few large ones (a projection, the layers of a few
// experts) goes to the BLAS, which blocks each for the caches.
bool ownKernel(const torch::Tensor& a, const torch::Tensor& b)
{
    return fastPathEnabled(FastPath::BatchedProduct) && batchedProductApplies(a, b)
           && batchedProductTakesWholeProducts(a);
}

// The kernel with its gradients, each another batched product: one autograd
// node for the batch, where a loop of mm would make one per product.
struct OwnProduct : torch::autograd::Function<OwnProduct> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b)
    {
        ctx->save_for_backward({a, b});
        return batchedProduct(a, b);
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list gradients)
    {
        const std::vector<torch::Tensor> saved = ctx->get_saved_variables();
        const torch::Tensor &a = saved[0], &b = saved[1], &g = gradients[0];
        return {ctx->needs_input_grad(0) ? batchedProduct(g, b.transpose(-2, -1)) : torch::Tensor(),
                ctx->needs_input_grad(1) ? batchedProduct(a.transpose(-2, -1), g) : torch::Tensor()};
    }
};

// A bias that takes no gradient, passed to OwnSoftmaxProduct as data: an
// autograd function's tensor inputs must be defined, and this one may not be.
struct Constant {
    torch::Tensor tensor;
};

// softmax(a b + bias) in one pass of the kernel; its gradient is softmax's,
// then the product's.
struct OwnSoftmaxProduct : torch::autograd::Function<OwnSoftmaxProduct> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b,
                                 const Constant& bias)
    {
        torch::Tensor probabilities = batchedSoftmaxProduct(a, b, bias.tensor);
        ctx->save_for_backward({a, b, probabilities});
        return probabilities;
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list gradients)
    {
        const std::vector<torch::Tensor> saved = ctx->get_saved_variables();
        const torch::Tensor &a = saved[0], &b = saved[1], &probabilities = saved[2];
        const torch::Tensor scores =
            torch::_softmax_backward_data(gradients[0], probabilities, -1, probabilities.scalar_type());
        return {ctx->needs_input_grad(0) ? batchedProduct(scores, b.transpose(-2, -1)) : torch::Tensor(),
                ctx->needs_input_grad(1) ? batchedProduct(a.transpose(-2, -1), scores) : torch::Tensor(),
                torch::Tensor()};  // the bias's
    }
};

}  // namespace

torch::Tensor batchedSoftmax(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias)
{
    // The kernel whatever the batch: with the softmax in its tiles, the scores
    // are written once, where the BLAS's product would leave three more passes.
    if (fastPathEnabled(FastPath::BatchedProduct) && batchedSoftmaxProductApplies(a, b, bias)
        && !(bias.defined() && torch::GradMode::is_enabled() && bias.requires_grad()))
        return OwnSoftmaxProduct::apply(a, b, Constant{bias});
    torch::Tensor scores = batchedMatmul(a, b);
    if (bias.defined())
        scores.add_(bias);
    return torch::softmax(scores, -1);
}

torch::Tensor batchedMatmul(const torch::Tensor& a, const torch::Tensor& b)
{
    if (ownKernel(a, b))
        return OwnProduct::apply(a, b);
    if (!loopOverBatch(a) || a.dim() < 3)
        return torch::matmul(a, b);
    // Flatten the leading dimensions: [G, N, K] x [G, K, M] -> [G, N, M].
    const std::int64_t N = a.size(-2), K = a.size(-1), M = b.size(-1);
    // unbind, not a3[g]: its backward stacks the G gradients once, where G
    // separate selects would each write a zero-filled gradient of all of a3.
    const std::vector<torch::Tensor> as = a.reshape({-1, N, K}).unbind(0);
    const std::vector<torch::Tensor> bs = b.reshape({-1, K, M}).unbind(0);
    std::vector<torch::Tensor> products;
    products.reserve(as.size());
    for (std::size_t g = 0; g < as.size(); ++g)
        products.push_back(torch::mm(as[g], bs[g]));
    std::vector<std::int64_t> shape(a.sizes().begin(), a.sizes().end());
    shape.back() = M;
    return torch::stack(products).view(shape);
}

torch::Tensor batchedAddMatmul(const torch::Tensor& bias, const torch::Tensor& a, const torch::Tensor& b)
{
    // One product with one bias row (a single path's projection): addmm,
    // whose 1-D bias a GPU's BLAS adds in the product's epilogue, where
    // baddbmm first copies the bias, broadcast, into every row of the answer.
    if (a.size(0) == 1 && b.size(0) == 1 && bias.dim() == 3 && bias.size(0) == 1 && bias.size(1) == 1) {
        const torch::Tensor a2 = a.squeeze(0), b2 = b.squeeze(0), row = bias.view({-1});
        if (inferenceProductApplies(a2, b2, row))
            return inferenceProduct(a2, b2, row).unsqueeze(0);
        return torch::addmm(row, a2, b2).unsqueeze(0);
    }
    if (!loopOverBatch(a))
        return torch::baddbmm(bias, a, b);
    return batchedMatmul(a, b) + bias;
}

torch::Tensor linearLayer(const torch::nn::Linear& layer, const torch::Tensor& x)
{
    return linearProduct(x, layer->weight, layer->bias);
}

torch::Tensor linearProduct(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias)
{
    if (x.dim() >= 2 && x.is_contiguous()) {
        const torch::Tensor rows = x.view({-1, x.size(-1)});
        if (inferenceProductApplies(rows, weight.t(), bias)) {
            std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
            shape.back() = weight.size(0);
            return inferenceProduct(rows, weight.t(), bias).view(shape);
        }
    }
    return torch::linear(x, weight, bias);
}

}  // namespace widelab
