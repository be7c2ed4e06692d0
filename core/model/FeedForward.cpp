#include "FeedForward.h"

#include "BatchedMatmul.h"
#include "BiasActivation.h"
#include "InferenceProduct.h"
#include "Init.h"
#include "runtime/Autocast.h"

#include <torch/nn/functional/activation.h>

namespace widelab {

torch::Tensor activate(const torch::Tensor& x, Activation activation)
{
    switch (activation) {
    case Activation::Relu:
        return torch::relu(x);
    case Activation::Silu:
        return torch::silu(x);
    case Activation::Gelu:
        break;
    }
    return torch::gelu(x);
}

torch::Tensor activatedProduct(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                               Activation activation)
{
    const bool batched = x.dim() == 3;
    if (!biasActivationApplies(x, bias))
        return activate(batched ? batchedAddMatmul(bias.unsqueeze(1), x, weight.transpose(1, 2))
                                : torch::addmm(bias, x, weight.t()),
                        activation);
    const torch::Tensor product = batched ? batchedMatmul(x, weight.transpose(1, 2)) : torch::mm(x, weight.t());
    return biasActivation(product.contiguous(), bias, activation);
}

FeedForwardImpl::FeedForwardImpl(std::int64_t units_, std::int64_t dModel_, std::int64_t hidden_,
                                 Activation activation_)
    : units(units_), dModel(dModel_), hidden(hidden_), activation(activation_)
{
    wIn = register_parameter("w_in", torch::empty({units, hidden, dModel}));
    bIn = register_parameter("b_in", torch::zeros({units, hidden}));
    wOut = register_parameter("w_out", torch::empty({units, dModel, hidden}));
    bOut = register_parameter("b_out", torch::zeros({units, dModel}));
    xavierUniformStacked(wIn);
    xavierUniformStacked(wOut);
}

torch::Tensor FeedForwardImpl::forwardShared(const torch::Tensor& x)
{
    // N = rows, U = units, M = hidden, D = model width
    const std::int64_t N = x.size(0);
    const torch::Tensor weight = autocastWeight(wIn).view({units * hidden, dModel});
    const torch::Tensor bias = autocastWeight(bIn).view({units * hidden});
    // In inference, oneDNN's matmul with the bias and activation in its tiles
    // (InferenceProduct.h). Not for a mixture's experts (GroupedExperts), whose
    // rows change from batch to batch: there WideNet's step measured no faster.
    const torch::Tensor h = inferenceProductApplies(x, weight.t(), bias)
                                ? inferenceProduct(x, weight.t(), bias, activation)
                                : activatedProduct(x, weight, bias, activation);  // [N, U*M]
    const torch::Tensor perUnit = h.view({N, units, hidden}).transpose(0, 1);                        // [U, N, M]
    return batchedAddMatmul(autocastWeight(bOut).unsqueeze(1), perUnit,
                            autocastWeight(wOut).transpose(1, 2));  // [U, N, D]
}

torch::Tensor FeedForwardImpl::forwardEach(const torch::Tensor& x)
{
    const torch::Tensor h = activatedProduct(x, autocastWeight(wIn), autocastWeight(bIn), activation);  // [U, C, M]
    return batchedAddMatmul(autocastWeight(bOut).unsqueeze(1), h, autocastWeight(wOut).transpose(1, 2));  // [U, C, D]
}

void FeedForwardImpl::keepUnits(std::int64_t first, std::int64_t count)
{
    torch::NoGradGuard noGrad;
    for (torch::Tensor* p : {&wIn, &bIn, &wOut, &bOut})
        p->set_data(p->narrow(0, first, count).clone());
    units = count;
}

}  // namespace widelab
