#include "Optimizers.h"

#include "FusedAdamW.h"
#include "Lamb.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace widelab {

namespace {

bool exemptFromDecay(const std::string& name, const torch::Tensor& parameter)
{
    return parameter.dim() < 2 || name.find("bias") != std::string::npos || name.find("norm") != std::string::npos
           || name.find("ln") != std::string::npos || name.ends_with("b_in") || name.ends_with("b_out");
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const TrainConfig& t, const torch::nn::Module& model)
{
    std::vector<torch::Tensor> decayed, exempt;
    for (const auto& item : model.named_parameters())
        (exemptFromDecay(item.key(), item.value()) ? exempt : decayed).push_back(item.value());
    auto groups = [&](auto options) {
        std::vector<torch::optim::OptimizerParamGroup> list;
        list.emplace_back(decayed, std::make_unique<decltype(options)>(options));
        options.weight_decay(0.0);
        list.emplace_back(exempt, std::make_unique<decltype(options)>(options));
        return list;
    };
    switch (t.optimizer) {
    case OptimizerKind::AdamW: {
        const auto options =
            torch::optim::AdamWOptions(t.learningRate).betas({t.beta1, t.beta2}).eps(t.epsilon).weight_decay(t.weightDecay);
        return std::make_unique<FusedAdamW>(groups(options), options);
    }
    case OptimizerKind::Lamb: {
        const auto options = LambOptions(t.learningRate).betas({t.beta1, t.beta2}).eps(t.epsilon).weight_decay(t.weightDecay);
        return std::make_unique<Lamb>(groups(options), options);
    }
    case OptimizerKind::Sgd: {
        const auto options = torch::optim::SGDOptions(t.learningRate).momentum(t.momentum).weight_decay(t.weightDecay);
        return std::make_unique<torch::optim::SGD>(groups(options), options);
    }
    }
    throw std::invalid_argument("train.optimizer: no optimiser for " + toString(t.optimizer));
}

}  // namespace widelab
