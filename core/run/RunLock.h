// defines: RunLock: one trainer per run directory at a time (an advisory lock,
// flock(2), on the directory itself, which the operating system releases when the
// process ends; RUN_DIR/lock only names the holder's process id)
#pragma once

#include "Checkpoint.h"

#include <filesystem>
#include <string>

namespace widelab {

// Another process (or another RunLock in this one) holds the run.
class RunInUse : public CheckpointError {
public:
    using CheckpointError::CheckpointError;
};

class RunLock {
public:
    // Throws RunInUse naming the directory (and the process holding it, when
    // known) if another trainer holds the lock; CheckpointError with the
    // system's reason when the directory cannot be opened.
    explicit RunLock(const std::filesystem::path& directory);
    ~RunLock();
    RunLock(const RunLock&) = delete;
    RunLock& operator=(const RunLock&) = delete;

    // The process id RUN_DIR/lock names ("" when none is recorded).
    static std::string holder(const std::filesystem::path& directory);

private:
    int m_fd = -1;
};

}  // namespace widelab
