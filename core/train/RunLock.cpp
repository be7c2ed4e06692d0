#include "RunLock.h"

#include "RunLayout.h"

#include "Checkpoint.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace widelab {

RunLock::RunLock(const std::filesystem::path& directory)
{
    const std::filesystem::path file = runlayout::lockFile(directory);
    m_fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0)
        throw CheckpointError(file.string() + ": cannot open the run's lock file: " + std::strerror(errno));
    if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
        char holder[32] = {};
        const ssize_t read = ::pread(m_fd, holder, sizeof holder - 1, 0);
        ::close(m_fd);
        m_fd = -1;
        const std::string pid = read > 0 ? std::string(holder, static_cast<std::size_t>(read)) : std::string();
        throw CheckpointError(directory.string() + " is in use by another training run"
                              + (pid.empty() ? std::string() : " (process " + pid.substr(0, pid.find('\n')) + ")")
                              + "; wait for it to finish or choose another directory");
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(m_fd, 0) == 0 && ::pwrite(m_fd, pid.data(), pid.size(), 0) < 0) {
        // The process id is only a courtesy for the message above.
    }
}

RunLock::~RunLock()
{
    if (m_fd >= 0)
        ::close(m_fd);  // releases the lock
}

}  // namespace widelab
