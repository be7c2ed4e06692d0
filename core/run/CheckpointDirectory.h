// defines: LoadedCheckpoint, CheckpointDirectory, lowSpaceText: RUN_DIR/checkpoints as
// a whole: which checkpoint to load (past unreadable ones), which to keep, what to
// clear away, whether the disk has room for the next
#pragma once

#include "Checkpoint.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace widelab {

// The rule of CheckpointDirectory::lowSpaceWarning, on given sizes in bytes.
std::optional<std::string> lowSpaceText(const std::filesystem::path& folder, std::uintmax_t available,
                                        std::uintmax_t checkpointBytes);

struct LoadedCheckpoint {
    std::filesystem::path file;
    CheckpointState state;
};

// The rules (docs/run-directory.md, "Checkpoints"): "latest" is the newest
// step-NNNNNNNN.pt that loads; one that cannot be read (cut short, damaged, not a
// checkpoint, non-finite weights) is skipped with a warning. train.keep_last
// counts intact step files only: a damaged or foreign one is never counted and
// never makes an intact one go. A writer (the holder of the run's lock) sets
// such a file aside as NAME.unreadable, which WideLab never deletes, and removes
// the temporary files of a save that was killed; a reader changes nothing.
class CheckpointDirectory {
public:
    using Warn = std::function<void(const std::string&)>;

    // `mayWrite`: the caller holds the run's lock (RunLock).
    CheckpointDirectory(const std::filesystem::path& runDirectory, bool mayWrite);

    const std::filesystem::path& path() const { return m_directory; }
    std::filesystem::path stepFile(std::int64_t step) const;
    // Every step-NNNNNNNN.pt, intact or not, oldest (by name) first.
    std::vector<std::filesystem::path> stepFiles() const;

    // Removes NAME.tmp-PID-N files that a save killed midway left (those of other
    // processes: this one's may be being written). Returns their names; a reader
    // removes nothing.
    std::vector<std::string> removeOrphans() const;

    // Loads `which` ("latest", "best", or a file name in checkpoints/) into
    // `model` (and `optimizer`). "latest" falls back from an unreadable step file
    // to the one before it, saying so through `warn` (a writer sets the bad one
    // aside once an older one has loaded). An explicit file that cannot be read
    // throws its CheckpointUnreadable; so does "latest" when none can be read,
    // and CheckpointError when there is none. A format-1 file loads with a warning
    // that it is unverified.
    LoadedCheckpoint load(const std::string& which, WideTransformerImpl& model, torch::optim::Optimizer* optimizer,
                          const Warn& warn);

    // Records a step file the caller has just written as intact.
    void written(const std::filesystem::path& file);

    // Keeps the newest `keepLast` intact step files and deletes older intact ones;
    // a step file whose checksum fails (checked once) is set aside with a warning.
    // Returns the deleted files. Only for a writer.
    std::vector<std::filesystem::path> prune(std::int64_t keepLast, const Warn& warn);

    // A warning when the disk holding the checkpoints has room for fewer than two
    // more checkpoints of `checkpointBytes` (a save needs a whole new file before
    // the old one goes), naming the folder and both sizes; nullopt otherwise.
    std::optional<std::string> lowSpaceWarning(std::uintmax_t checkpointBytes) const;

private:
    bool intact(const std::filesystem::path& file, const Warn& warn);
    // Renames `file` to NAME.unreadable (NAME.unreadable-N when taken): the new
    // name, or an empty path when it could not be renamed.
    std::filesystem::path setAside(const std::filesystem::path& file) const;

    std::filesystem::path m_directory;
    bool m_mayWrite = false;
    std::map<std::string, bool> m_intact;  // by file name: written, loaded or checked already
};

}  // namespace widelab
