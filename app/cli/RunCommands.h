// defines: trainCommand, evalCommand, inspectCommand, exportCommand: the widelab-cli
// commands that train a run and read it back
#pragma once

#include "model/PaperSearch.h"
#include "vocab/Snapshot.h"

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace widelab {

// Wrong arguments for one of these commands (exit status 2, with the usage).
struct RunUsageError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

struct RunArguments {
    std::vector<std::string> positional;
    std::string out;            // --out
    std::string device;         // --device
    std::string tensorboard;    // train --tensorboard LOGDIR: events into LOGDIR/<run> as it trains
    std::string split = "validation";
    std::string text;           // --text
    std::string image;          // --image: an image file or validation:N (image runs)
    std::string checkpoint = "latest";
    std::string format;         // export --format safetensors|pt (empty: from --out's extension)
    std::int64_t steps = -1;    // --steps
    std::int64_t threads = -1;  // --threads
    int processes = 0;          // train --nproc; 0: as the document's train.processes says
    std::vector<std::string> arguments;  // train: the command and its arguments, less --nproc
    bool resume = false;
    bool force = false;         // --force: train even when the memory estimate says it will not fit;
                                // export over files that are not an earlier export
    bool json = false;
    bool heads = false;         // inspect --heads: score every head's role on the text
    std::int64_t beam = kPaperBeamSize;  // eval --beam: a translation run's beam search (1: greedy)
    double lengthPenalty = kPaperLengthPenalty;  // eval --length-penalty: its alpha
};

// What a trainer opened read-only says that the user must hear (a checkpoint
// passed over): its warnings and errors, on `err`.
class Warnings : public TrainingObserver {
public:
    // `withProgress`: information too (tokenizing and evaluating a long text
    // say how far they have come), for a command that may run for minutes.
    explicit Warnings(std::ostream& err, bool withProgress = false) : m_err(err), m_withProgress(withProgress) {}
    void onMessage(const std::string& level, const std::string& text) override;

private:
    std::ostream& m_err;
    bool m_withProgress;
};

// Warnings (a damaged checkpoint passed over, say) go to `err` for eval, inspect
// and export, whose `out` may be JSON; train prints them among its progress.
int trainCommand(const RunArguments& a, std::ostream& out, std::ostream& err);
int evalCommand(const RunArguments& a, std::ostream& out, std::ostream& err);
int inspectCommand(const RunArguments& a, std::ostream& out, std::ostream& err);
int exportCommand(const RunArguments& a, std::ostream& out, std::ostream& err);

}  // namespace widelab
