// defines: helpers shared by the test executables: tensor comparison, the shipped
// presets, and running the Python reference model on a case
#pragma once

// torch before Qt: Qt's keywords and torch's identifiers do not mix otherwise.
#include <torch/torch.h>

#include "config/ModelConfig.h"
#include "run/Checkpoint.h"
#include "train/RunConfig.h"

#include <QString>

#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace widelab {
class Trainer;
struct TrainSummary;
}  // namespace widelab

namespace widelab::test {

// ||a - b|| / ||b|| (Frobenius, in double); 0 when both are zero.
double relativeError(const torch::Tensor& a, const torch::Tensor& b);

// The tensor as LibTorch prints it, for a failed comparison's message.
QString printed(const torch::Tensor& t);

// A `model` section: `base` with the keys of `overrides` replacing its own.
// Throws std::runtime_error listing the problems when it does not validate.
ModelConfig modelConfig(const std::string& base, const std::string& overrides = "{}");

// A run document of a tiny model on a small ListOps task (20 steps, batch 16,
// a checkpoint and a validation every 10 steps, one thread), with the keys of
// `overrides` merged in (JSON merge patch).
RunDocument tinyRun(const std::string& overrides = "{}");

// A checkpoint's state at `step` (the rest as a new run has it).
CheckpointState stateAt(std::int64_t step, std::int64_t samplerPosition = 0,
                        double bestValidationLoss = std::numeric_limits<double>::infinity());

// Runs `trainer`, a stop raised at its snapshot of `step` (as Ctrl-C would,
// so a checkpoint of that step is saved), and returns how the run ended.
TrainSummary runStoppedAt(Trainer& trainer, std::int64_t step);

// The message of the std::exception `call` throws, or "" when it throws none.
inline QString thrownMessage(const std::function<void()>& call)
{
    try {
        call();
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return QString();
}

// Inverts every bit of the byte in the middle of `file`, in place: damage that its
// checksum catches and nothing else does.
void flipMiddleByte(const std::filesystem::path& file);

// The lines of RUN/metrics.jsonl whose "type" is `type`, in order.
std::vector<nlohmann::json> metricLines(const std::filesystem::path& run, const std::string& type);

// Every preset shipped in resources/presets, by file stem.
std::vector<std::pair<std::string, ModelDocument>> shippedPresets();

// Writes CASE.json and CASE.pt for the Python reference (tests/reference/), runs
// it, and returns what it wrote. Throws std::runtime_error with the script's
// output when it fails. `dtype` "float64": the reference computes the case in
// double precision (its floating tensors cast up), the exact value to measure an
// fp32 result's rounding against.
std::map<std::string, torch::Tensor> runReference(const ModelConfig& config, const std::string& mode,
                                                  const std::map<std::string, torch::Tensor>& tensors,
                                                  const std::string& caseName, const char* dtype = "float32");

}  // namespace widelab::test
