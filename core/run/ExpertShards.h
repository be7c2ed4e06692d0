// defines: GatheredExperts, widenExperts, keepOwnExperts: the checkpoints of an
// expert-parallel run hold every expert, as one process's checkpoints do, so that
// single-process eval, inspect, export and the app read them, and a run continues
// on any number of processes
#pragma once

#include "dist/ExpertParallel.h"

#include <torch/optim/optimizer.h>

#include <utility>
#include <vector>

namespace widelab {

// While it lives, rank 0's expert parameters and their optimiser state hold every
// expert, gathered from the ranks; theirs are unchanged. Every rank makes one, at
// the same moment (it exchanges each tensor).
class GatheredExperts {
public:
    GatheredExperts(ExpertParallel& experts, torch::optim::Optimizer& optimizer);
    ~GatheredExperts();  // rank 0's tensors are its own experts' again
    GatheredExperts(const GatheredExperts&) = delete;
    GatheredExperts& operator=(const GatheredExperts&) = delete;

private:
    std::vector<std::pair<torch::Tensor, torch::Tensor>> m_parameters;  // rank 0: a parameter, its own rows
    std::vector<std::pair<torch::Tensor*, torch::Tensor>> m_state;      // rank 0: a state tensor, its own rows
};

// Before a checkpoint of every expert is read: the expert parameters take the
// shape of every expert's (their values do not matter: the checkpoint's replace them).
void widenExperts(ExpertParallel& experts);
// After: the parameters and their optimiser state keep this rank's experts' rows.
void keepOwnExperts(ExpertParallel& experts, torch::optim::Optimizer* optimizer);

}  // namespace widelab
