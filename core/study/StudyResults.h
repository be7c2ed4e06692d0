// defines: studyMeasures, MemberResult, StudyRecord, readStudyRecord, readStudyResults,
// resultsCsv, resultsMarkdown, writeStudyResults: what a study measures of each
// member, the record of a study directory (study.json and members/NAME.json), and
// the results table (results.csv, one row per member; results.md, mean and spread
// over seeds per axis point)
#pragma once

#include "StudyDocument.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace widelab {

struct MeasureSpec {
    std::string column;  // results.csv's header and the key in members/NAME.json
    std::string title;   // results.md's header
    int decimals = 0;    // results.md's precision
    double scale = 1.0;  // results.md shows value * scale (accuracy in %, bytes in MiB)
    // A measure of some tasks only (a translation run's BLEU): results.md leaves
    // its column out when no member has it.
    bool someTasks = false;
};

// Every measure, in the columns' order: steps, final and best validation loss and
// accuracy, test loss and accuracy at the best checkpoint, stored and active
// parameters, forward FLOPs per token, training tokens/s (mean over metrics.jsonl),
// inference latency (ms, batch 1, the task's length), peak memory (bytes), wall time (s);
// then a translation run's final and best validation BLEU (greedy, the run's
// bleu_sentences) and the test split's BLEU and chrF at the best checkpoint (beam 4,
// length penalty 0.6: the Multi-Path paper's search).
const std::vector<MeasureSpec>& studyMeasures();

enum class MemberStatus { Pending, Stopped, Completed, Failed };
std::string toString(MemberStatus status);  // "pending", "stopped", "completed", "failed"

struct MemberResult {
    std::string name;   // the member's directory under runs/
    std::string point;  // the axis point (the name without the seed)
    std::int64_t seed = 0;
    StudySettings settings;  // axis (and solved) keys with their values
    MemberStatus status = MemberStatus::Pending;
    std::string error;  // failed: why
    std::map<std::string, double> measures;  // by MeasureSpec::column; absent: not measured

    nlohmann::json toJson() const;  // members/NAME.json
};

// A study directory's study.json: the document as run (base included), the command
// line's overrides, and the members in order.
struct StudyRecord {
    nlohmann::json document;
    nlohmann::json overrides;
    std::vector<MemberResult> members;  // name, point, seed, settings (Pending)

    std::string title() const;   // the document's name; empty when it has none
    std::string metric() const;  // report.metric: "accuracy" (the default), "loss" or "bleu"
};

// Throws ConfigError naming study.json when it is missing or damaged.
StudyRecord readStudyRecord(const std::filesystem::path& studyDirectory);

// Every member of the study with its status: a members/NAME.json says completed or
// failed (with measures or error); otherwise a member whose run has a checkpoint is
// stopped, the rest are pending. A damaged members/NAME.json counts as pending.
std::vector<MemberResult> readStudyResults(const std::filesystem::path& studyDirectory, const StudyRecord& record);

// One row per member: member, seed, status, error, a column per setting key, a
// column per measure (empty when not measured). RFC 4180 quoting.
std::string resultsCsv(const std::vector<MemberResult>& members);

// A Markdown table: a row per axis point, its settings, how many seeds finished,
// then each measure as mean ± sample standard deviation over the finished seeds.
// Opens with the title and how many members are done. An axis of `axes` with
// names has one column, titled with its label (else its keys), holding the
// point's name, in place of a column per key.
std::string resultsMarkdown(const std::string& title, const std::string& metric, const std::vector<MemberResult>& members,
                            const std::vector<StudyAxis>& axes = {});

// Sample mean and standard deviation (n - 1); the deviation is NaN for fewer than two values.
std::pair<double, double> meanAndSpread(const std::vector<double>& values);

// The measure of that column; nullptr for another name.
const MeasureSpec* findMeasure(const std::string& column);
// The axis points of `members` (MemberResult::point), in the members' order, each once.
std::vector<std::string> studyPoints(const std::vector<MemberResult>& members);
// A measure of one axis point: meanAndSpread over its completed members that have
// it (in the measure's own units, unscaled); the mean is NaN when none has.
// `count`, when given, is set to how many members that is.
std::pair<double, double> pointMeasure(const std::vector<MemberResult>& members, const std::string& point,
                                       const std::string& column, int* count = nullptr);
// "36.1 ± 0.4" at the measure's scale and precision; "–" for a NaN mean; no spread when it is NaN.
std::string measureText(const MeasureSpec& measure, double mean, double spread);

// Rewrites results.csv and results.md (each atomically) from the study directory's record.
void writeStudyResults(const std::filesystem::path& studyDirectory);

}  // namespace widelab
