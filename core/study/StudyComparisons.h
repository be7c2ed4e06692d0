// defines: memberSetting, PaperPoint, PaperComparison, paperComparisons,
// LatencyRatio, latencyRatios, studyReport: what a study's results are compared
// with: the papers' own figures at the settings the study matches, and the
// inference latency of its deepest shape against its widest
#pragma once

#include "PaperFigures.h"
#include "StudyResults.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <string>
#include <vector>

namespace widelab {

// The value a member's run has for a dotted key: its settings, else the study's
// `set`, else the base document, else the schema's default; null when none says
// (a key whose default is derived from others, a key not in the schema).
nlohmann::json memberSetting(const StudyRecord& record, const MemberResult& member, const std::string& key);

// A paper's number for one axis point of a study.
struct PaperPoint {
    std::string point;   // MemberResult::point
    std::string label;   // the paper's cell: "Transformer, 6-8"
    double value = 0.0;  // in the measure's units
    double spread = 0.0; // NaN: the paper gives none
};

// One paper figure beside a study: the axis points whose setting (every key of a
// cell's settings, as memberSetting reads it) is one of the figure's cells.
struct PaperComparison {
    std::string paper, source, measure, note;  // as PaperFigure
    std::vector<PaperPoint> points;            // in the study's order; at least one
};

// The figures a study matches, in the figures' order; a point takes the first
// cell it matches.
std::vector<PaperComparison> paperComparisons(const StudyRecord& record, const std::vector<PaperFigure>& figures);

// The deepest against the widest shape of a study whose axis sets model.layers:
// among the points equal in every other axis (`group`: those settings, e.g.
// "attention=linformer"; empty when there is no other axis), the point with the
// most layers against the one with the fewest, by mean latency over completed seeds.
struct LatencyRatio {
    std::string group;
    std::string deep, wide;        // points
    double deepMs = 0.0, wideMs = 0.0;
    double ratio() const { return deepMs / wideMs; }
    // The paper's deep/wide ratio at the same settings (a latency_ms comparison
    // giving both points); NaN when none does.
    double paperRatio = std::numeric_limits<double>::quiet_NaN();
    std::string paperSource;
};
std::vector<LatencyRatio> latencyRatios(const StudyRecord& record, const std::vector<MemberResult>& members,
                                        const std::vector<PaperComparison>& papers = {});

// results.md: the results table (resultsMarkdown), then the deep/wide latency
// ratios and the papers' figures beside the study's, when there are any. The
// shipped paper figures are read here; one that does not read is named in the
// report instead of its comparison.
std::string studyReport(const StudyRecord& record, const std::vector<MemberResult>& members);

}  // namespace widelab
