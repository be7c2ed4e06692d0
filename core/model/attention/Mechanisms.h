// defines: the registered mechanisms' specs (one function per mechanism file) and
// maskIn, the additive mask in the scores' dtype; for Registry.cpp and the
// mechanism files only
#pragma once

#include "AttentionMechanism.h"

namespace widelab {

// The additive mask in the dtype of the scores. fp16 cannot hold the mask's
// -1e9, so the floor is lifted to a value that still zeroes a masked weight.
torch::Tensor maskIn(const torch::Tensor& bias, torch::ScalarType dtype);

const MechanismSpec& fullMechanism();
const MechanismSpec& linearMechanism();
const MechanismSpec& performerMechanism();
const MechanismSpec& linformerMechanism();
const MechanismSpec& sinkhornMechanism();
const MechanismSpec& synthesizerMechanism();
const MechanismSpec& localMechanism();
const MechanismSpec& longformerMechanism();
const MechanismSpec& bigbirdMechanism();
const MechanismSpec& sparseMechanism();

}  // namespace widelab
