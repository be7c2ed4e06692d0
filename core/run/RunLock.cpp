#include "RunLock.h"

#include "RunLayout.h"

#include "Checkpoint.h"
#include "runtime/SystemError.h"

#include <cerrno>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace widelab {

std::string RunLock::holder(const std::filesystem::path& directory)
{
    const std::filesystem::path file = runlayout::lockFile(directory);
    char text[32] = {};
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return {};
    const ssize_t read = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    std::string pid = read > 0 ? std::string(text, static_cast<std::size_t>(read)) : std::string();
    pid = pid.substr(0, pid.find('\n'));
    return pid.find_first_not_of("0123456789") == std::string::npos ? pid : std::string();
}

RunLock::RunLock(const std::filesystem::path& directory)
{
    // The lock is held on the directory itself, which cannot be deleted or
    // replaced while a run writes into it: a lock on RUN_DIR/lock would be lost
    // with the file (delete it, and the next trainer locks a new one).
    m_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (m_fd < 0)
        throw CheckpointError(directory.string() + ": cannot open the run directory to lock it: "
                              + systemReason(errno));
    const std::filesystem::path file = runlayout::lockFile(directory);
    if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        ::close(m_fd);
        m_fd = -1;
        if (error != EWOULDBLOCK)
            throw CheckpointError(directory.string() + ": cannot lock the run directory: " + systemReason(error));
        const std::string pid = holder(directory);
        throw RunInUse(directory.string() + " is in use by another training run"
                       + (pid.empty() ? std::string() : " (process " + pid + ")")
                       + "; wait for it to finish or choose another directory");
    }
    // The holder's process id, only for the message above: a lock file that
    // cannot be written does not stop the run.
    const std::string pid = std::to_string(::getpid()) + "\n";
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        [[maybe_unused]] const ssize_t written = ::write(fd, pid.data(), pid.size());
        ::close(fd);
    }
}

RunLock::~RunLock()
{
    if (m_fd >= 0)
        ::close(m_fd);  // releases the lock
}

}  // namespace widelab
