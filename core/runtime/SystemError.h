// defines: systemReason, FileError, readFileBytes, writeAll: what the operating system said,
// in words and by name ("No space left on device (ENOSPC)"), for messages about
// files that could not be written or read
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace widelab {

// strerror(error) followed by the error's symbolic name where it is one a user
// can act on (ENOSPC, EDQUOT, EACCES, EPERM, EROFS, ENAMETOOLONG, EFBIG, EIO, ...).
std::string systemReason(int error);

// A file that could not be read: "FILE: cannot be read: REASON"; error() is the
// errno (ENOENT for a missing file, EISDIR for a folder), for callers that say
// more about some of them.
class FileError : public std::runtime_error {
public:
    FileError(const std::filesystem::path& file, int error);
    int error() const { return m_error; }

private:
    int m_error;
};

// The whole of `file`; throws FileError.
std::string readFileBytes(const std::filesystem::path& file);

// Writes all of `bytes` to `fd`, again after a short write or EINTR; 0 when
// done, else the errno (ENOSPC for a write of nothing).
int writeAll(int fd, std::string_view bytes);

}  // namespace widelab
