// defines: RunLock: one trainer per run directory at a time (an advisory lock on
// RUN_DIR/lock that the operating system releases when the process ends)
#pragma once

#include <filesystem>

namespace widelab {

class RunLock {
public:
    // Throws CheckpointError naming the directory (and the process holding it,
    // when known) if another trainer holds the lock.
    explicit RunLock(const std::filesystem::path& directory);
    ~RunLock();
    RunLock(const RunLock&) = delete;
    RunLock& operator=(const RunLock&) = delete;

private:
    int m_fd = -1;
};

}  // namespace widelab
