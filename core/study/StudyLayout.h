// defines: studylayout: the names of a study directory's files (study.json,
// results.csv, results.md, members/NAME.json, runs/NAME/), the one place that
// spells them (docs/studies.md describes what each holds)
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace widelab::studylayout {

inline constexpr std::string_view kStudy = "study.json";         // the document as run, its overrides, its members
inline constexpr std::string_view kResults = "results.csv";      // one row per member, rewritten after every member
inline constexpr std::string_view kReport = "results.md";        // mean and spread over seeds per axis point
inline constexpr std::string_view kMembers = "members";          // NAME.json: a finished member's status and measures
inline constexpr std::string_view kRuns = "runs";                // NAME/: each member's ordinary run directory
// The directory's lock is a run's (run/RunLayout's kLock, held through RunLock)
// by the process running the study.

inline std::filesystem::path studyFile(const std::filesystem::path& study) { return study / kStudy; }
inline std::filesystem::path resultsFile(const std::filesystem::path& study) { return study / kResults; }
inline std::filesystem::path reportFile(const std::filesystem::path& study) { return study / kReport; }
inline std::filesystem::path membersDirectory(const std::filesystem::path& study) { return study / kMembers; }
inline std::filesystem::path memberFile(const std::filesystem::path& study, const std::string& member)
{
    return study / kMembers / (member + ".json");
}
inline std::filesystem::path runsDirectory(const std::filesystem::path& study) { return study / kRuns; }
inline std::filesystem::path runDirectory(const std::filesystem::path& study, const std::string& member)
{
    return study / kRuns / member;
}

}  // namespace widelab::studylayout
