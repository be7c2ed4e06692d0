// defines: StudyArguments, studyCommand: `widelab-cli study`, which runs a study
// (core/study) member by member with a progress line, continues a stopped one,
// lists the built-in studies and prints a study directory's results table
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace widelab {

struct StudyArguments {
    std::vector<std::string> positional;  // STUDY.json or a built-in study's name
    std::string out;                      // --out STUDY_DIR
    std::string report;                   // --report STUDY_DIR
    bool list = false;                    // --list
    std::int64_t steps = -1;              // --steps
    std::int64_t seeds = -1;              // --seeds
    std::int64_t jobs = 1;                // --jobs
    std::string device;                   // --device
    std::int64_t threads = -1;            // --threads
};

// Progress and warnings on `err`; the results table on `out`. Throws
// RunUsageError (RunCommands.h) for wrong arguments, ConfigError for a document
// that does not validate, StudyRefused for a directory holding another study.
// Exit status 0 when every member completed or the study was stopped (run it
// again to continue), 1 when a member failed.
int studyCommand(const StudyArguments& a, std::ostream& out, std::ostream& err);

}  // namespace widelab
