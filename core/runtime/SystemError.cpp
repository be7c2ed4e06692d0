#include "SystemError.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace widelab {
namespace {

const char* errorName(int error)
{
    switch (error) {
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EROFS: return "EROFS";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EFBIG: return "EFBIG";
    case EIO: return "EIO";
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    default: return nullptr;
    }
}

}  // namespace

std::string systemReason(int error)
{
    const char* name = errorName(error);
    return std::string(std::strerror(error)) + (name ? std::string(" (") + name + ")" : std::string());
}

FileError::FileError(const std::filesystem::path& file, int error)
    : std::runtime_error(file.string() + ": cannot be read: " + systemReason(error)), m_error(error)
{
}

std::string readFileBytes(const std::filesystem::path& file)
{
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw FileError(file, errno);
    struct stat info = {};
    int error = ::fstat(fd, &info) != 0 ? errno : S_ISDIR(info.st_mode) ? EISDIR : 0;
    std::string bytes;
    if (error == 0 && S_ISREG(info.st_mode))
        bytes.reserve(static_cast<std::size_t>(info.st_size));
    char buffer[1 << 16];
    while (error == 0) {
        const ssize_t read = ::read(fd, buffer, sizeof buffer);
        if (read < 0 && errno == EINTR)
            continue;
        if (read < 0)
            error = errno;
        else if (read == 0)
            break;
        else
            bytes.append(buffer, static_cast<std::size_t>(read));
    }
    ::close(fd);
    if (error != 0)
        throw FileError(file, error);
    return bytes;
}

int writeAll(int fd, std::string_view bytes)
{
    for (std::size_t done = 0; done < bytes.size();) {
        const ssize_t written = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return written < 0 ? errno : ENOSPC;
        done += static_cast<std::size_t>(written);
    }
    return 0;
}

}  // namespace widelab
