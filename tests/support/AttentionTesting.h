// defines: test::attentionReference, test::additiveMask, test::fullMechanismInInference:
// softmax attention in double precision, the additive masks the model makes,
// and the full mechanism's context with the operators it ran, for the tests of
// WideLab's own CPU attention kernels
#pragma once

#include "TestSupport.h"
#include "model/attention/AttentionMechanism.h"
#include "runtime/OperatorCount.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace widelab::test {

// softmax(q k^T * scale + bias) v in double precision, from q, k and v as given
// (fp32 or bf16, widened exactly); bias undefined, or broadcastable to the scores.
inline torch::Tensor attentionReference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                        const torch::Tensor& bias, double scale)
{
    torch::Tensor scores = torch::matmul(q.to(torch::kDouble) * scale, k.to(torch::kDouble).transpose(-2, -1));
    if (bias.defined())
        scores = scores + bias.to(torch::kDouble);
    return torch::matmul(torch::softmax(scores, -1), v.to(torch::kDouble));
}

// An additive mask as the model makes one: -1e9 for the padding keys of each
// entry past `lengths` ([B, 1, 1, Tk]), and for the future when `causal`
// ([1, 1, Tq, Tk]); both summed; undefined for neither.
inline torch::Tensor additiveMask(std::int64_t Tq, std::int64_t Tk, const std::vector<std::int64_t>& lengths,
                                  bool causal)
{
    torch::Tensor bias;
    if (!lengths.empty()) {
        const std::int64_t B = static_cast<std::int64_t>(lengths.size());
        const torch::Tensor padding = torch::arange(Tk).unsqueeze(0) >= torch::tensor(lengths).unsqueeze(1);
        bias = torch::zeros({B, 1, 1, Tk}).masked_fill(padding.view({B, 1, 1, Tk}), -1e9);
    }
    if (causal) {
        const torch::Tensor future =
            torch::zeros({1, 1, Tq, Tk}).masked_fill(torch::ones({Tq, Tk}, torch::kBool).triu(1), -1e9);
        bias = bias.defined() ? bias + future : future;
    }
    return bias;
}

// The full mechanism's context for `in` in inference (eval, no gradient, no
// map asked for), and whether it made the [T, T] scores: a softmax or a
// batched product among the operators it ran.
struct FullMechanismPass {
    torch::Tensor context;
    bool madeScores = false;
};

inline FullMechanismPass fullMechanismInInference(const MixInput& in)
{
    const std::int64_t heads = in.q.size(1), headDim = in.q.size(3), T = std::max(in.q.size(2), in.k.size(2));
    const ModelConfig config = modelConfig(R"({"vocab_size": 17, "dropout": 0.0})",
                                           "{\"max_len\": " + std::to_string(T) + ", \"heads\": " + std::to_string(heads)
                                               + ", \"head_dim\": " + std::to_string(headDim)
                                               + ", \"d_model\": " + std::to_string(heads * headDim) + "}");
    const std::shared_ptr<MechanismImpl> mechanism =
        findMechanism("full")->make(MechanismShape{heads, headDim, config.positions(), false}, config);
    mechanism->eval();
    torch::NoGradGuard noGrad;
    FullMechanismPass pass;
    const OperatorCounter counter;
    pass.context = mechanism->mix(in, nullptr);
    const std::map<std::string, std::int64_t> names = counter.tally().innermostByName();
    for (const char* scores : {"aten::_softmax", "aten::softmax", "aten::bmm"})
        pass.madeScores = pass.madeScores || names.count(scores) > 0;
    return pass;
}

}  // namespace widelab::test
