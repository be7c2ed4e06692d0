#include "MappedFile.h"

#include "Datasets.h"
#include "runtime/SystemError.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace widelab {

MappedFile::MappedFile(const std::filesystem::path& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw DataError(path.string() + ": cannot open (" + systemReason(errno) + ")");
    struct stat info = {};
    if (::fstat(fd, &info) != 0) {
        const int error = errno;
        ::close(fd);
        throw DataError(path.string() + ": cannot open (" + systemReason(error) + ")");
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        throw DataError(path.string() + ": not a regular file");
    }
    try {
        map(fd, static_cast<std::size_t>(info.st_size), path);
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
}

MappedFile::MappedFile(int fd, const std::filesystem::path& name)
{
    struct stat info = {};
    if (::fstat(fd, &info) != 0)
        throw DataError(name.string() + ": cannot open (" + systemReason(errno) + ")");
    map(fd, static_cast<std::size_t>(info.st_size), name);
}

void MappedFile::map(int fd, std::size_t size, const std::filesystem::path& name)
{
    m_size = size;
    if (m_size > 0) {
        void* data = ::mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED)
            throw DataError(name.string() + ": cannot map (" + systemReason(errno) + ")");
        m_data = static_cast<const char*>(data);
    }
}

MappedFile::~MappedFile()
{
    if (m_data)
        ::munmap(const_cast<char*>(m_data), m_size);
}

void MappedFile::adviseSequential() const
{
    if (m_data)
        ::madvise(const_cast<char*>(m_data), m_size, MADV_SEQUENTIAL);
}
}  // namespace widelab
