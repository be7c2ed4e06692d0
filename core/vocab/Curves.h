// defines: curve::k* (the name of each curve a run draws), TrainingCurve and
// kTrainingCurves: each metric's name written once, for metrics.jsonl, the run
// records, the charts and the studies
#pragma once

#include "Snapshot.h"

#include <array>

namespace widelab {

namespace curve {
inline constexpr char kLoss[] = "loss";
inline constexpr char kAccuracy[] = "accuracy";
inline constexpr char kBalanceLoss[] = "balance_loss";
inline constexpr char kLearningRate[] = "learning_rate";
inline constexpr char kGradientNorm[] = "gradient_norm";
inline constexpr char kTokensPerSecond[] = "tokens_per_second";
// From the eval lines of the validation split.
inline constexpr char kValidationLoss[] = "validation_loss";
inline constexpr char kValidationAccuracy[] = "validation_accuracy";
// Translation runs: BLEU and chrF of the validation sentences translated (0-100).
inline constexpr char kValidationBleu[] = "validation_bleu";
inline constexpr char kValidationChrf[] = "validation_chrf";
}  // namespace curve

// A curve of the train lines: its name in metrics.jsonl and its field.
struct TrainingCurve {
    const char* name;
    double TrainingSnapshot::*value;
};

// The six, in the order the charts show them.
inline constexpr std::array<TrainingCurve, 6> kTrainingCurves{{
    {curve::kLoss, &TrainingSnapshot::loss},
    {curve::kAccuracy, &TrainingSnapshot::accuracy},
    {curve::kBalanceLoss, &TrainingSnapshot::balanceLoss},
    {curve::kLearningRate, &TrainingSnapshot::learningRate},
    {curve::kGradientNorm, &TrainingSnapshot::gradientNorm},
    {curve::kTokensPerSecond, &TrainingSnapshot::tokensPerSecond},
}};

}  // namespace widelab
