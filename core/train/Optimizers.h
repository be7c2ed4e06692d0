// defines: makeOptimizer: the optimiser train.optimizer names, over a model's
// parameters in two groups (weight decay on matrices only)
#pragma once

#include "RunConfig.h"

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>

namespace widelab {

// AdamW (FusedAdamW), LAMB or SGD with train.*'s settings. Group 0 holds the
// parameters that decay (matrices); group 1, with weight_decay 0, the vectors:
// biases, LayerNorms, path weights and anything named like them, left alone as
// BERT and ViT train them. A checkpoint's optimiser state follows this order.
std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const TrainConfig& train, const torch::nn::Module& model);

}  // namespace widelab
