// defines: MetricsRecord, decodeMetricsLine, encodeMetricsLine, toJson, kMaxMetricsStep:
// metrics.jsonl's one writer and one reader (docs/run-directory.md). The writer is
// what the trainer and keepProbe append; the reader checks a line at the boundary:
// what passes is what a view may draw, what does not is refused with the reason in
// words. The app's MetricsLine converts a record into the views' types.
#pragma once

#include "Snapshot.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace widelab {

// The largest step a line may carry: 2^53, the largest integer a double holds
// exactly (a reader in another language reads JSON numbers as doubles).
inline constexpr std::int64_t kMaxMetricsStep = std::int64_t{1} << 53;

// One line, decoded. Each type fills its own part.
struct MetricsRecord {
    enum class Type { Train, Eval, Probe, Insights, Other };
    Type type = Type::Other;
    std::string typeName;  // as written: "train", "eval", "probe", or another (passed over)
    std::int64_t step = 0;
    // train: the curves' values as written: a value left out is absent (no point, not
    // a 0), null (how NaN and infinities are written) is NaN. `train` holds them too
    // (absent ones 0), with the model state: routing, LayerNorms, divergences, paths.
    std::map<std::string, double> values;
    TrainingSnapshot train;
    // eval: step, split, loss, accuracy (perplexity and examples when written).
    EvaluationResult eval;
    // probe: the text as written (legible UTF-8, see data/ByteText.h), tokens,
    // attention, experts, prediction and its labels.
    ProbeResult probe;
    // insights: head roles and expert specialisation at a validation.
    ValidationInsights insights;
};

// Decodes one line (without its '\n'). nullopt with *reason set (a phrase such as
// `"step" is 1e+308, not a whole number from 0 to 2^53`) when the line is not
// valid UTF-8, not a JSON object, or a train, eval or probe line whose fields have
// the wrong type, a number that is not finite, or shapes that do not agree
// (attention T x T for T tokens in every head, the same heads in every layer, one
// expert list per token, routing arrays sized by the experts, LayerNorm rows of
// one length, a path's alpha sized by its paths). A line of another type needs
// only a "type" and passes as Type::Other. Never throws.
std::optional<MetricsRecord> decodeMetricsLine(std::string_view line, std::string* reason);

// A line as the trainer appends it (without the '\n'): compact JSON; a text that is
// not valid UTF-8 despite data/ByteText is written with U+FFFD for the bad bytes.
std::string encodeMetricsLine(const TrainingSnapshot& snapshot);
std::string encodeMetricsLine(const EvaluationResult& result);
std::string encodeMetricsLine(const ProbeResult& result);
std::string encodeMetricsLine(const ValidationInsights& insights);

// Each as its line of metrics.jsonl, as JSON.
nlohmann::json toJson(const TrainingSnapshot& snapshot);
nlohmann::json toJson(const EvaluationResult& result);
nlohmann::json toJson(const ProbeResult& result);
nlohmann::json toJson(const ValidationInsights& insights);

}  // namespace widelab
