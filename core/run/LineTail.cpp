#include "LineTail.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace widelab {
namespace {

// Bytes before the offset compared on every read that finds the file changed:
// enough to tell a rewritten file from a grown one (each line carries its step
// and time), few enough to cost nothing.
constexpr std::size_t kFingerprint = 64;

std::int64_t modifiedNs(const struct stat& info)
{
    return static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
}

// Reads up to `count` bytes at `offset`; fewer at the end of the file. -1 on an error.
ssize_t readAt(int fd, char* into, std::size_t count, std::uint64_t offset)
{
    std::size_t done = 0;
    while (done < count) {
        const ssize_t n = ::pread(fd, into + done, count - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        done += static_cast<std::size_t>(n);
    }
    return static_cast<ssize_t>(done);
}

bool missing(int error) { return error == ENOENT || error == ENOTDIR; }

}  // namespace

LineTail::LineTail(std::filesystem::path file) : m_file(std::move(file)) {}

void LineTail::forget()
{
    m_known = false;
    m_seen = {};
    m_offset = 0;
    m_scanned = 0;
    m_lines = 0;
    m_before.clear();
}

LineTail::Update LineTail::poll(std::size_t maxBytes)
{
    maxBytes = std::max<std::size_t>(maxBytes, 1);
    auto failed = [&](int error) {
        Update update;
        if (missing(error)) {  // not written yet, or removed: what was read is void
            update.restarted = m_offset > 0;
            forget();
        } else {
            update.error = m_file.string() + ": cannot be read: " + std::strerror(error);
        }
        return update;
    };
    struct stat info {};
    if (::stat(m_file.c_str(), &info) != 0)
        return failed(errno);
    const Seen now{static_cast<std::uint64_t>(info.st_dev), static_cast<std::uint64_t>(info.st_ino),
                   static_cast<std::uint64_t>(info.st_size), modifiedNs(info)};
    if (m_known && now == m_seen && m_scanned >= now.size)
        return {};  // nothing changed: no open, no read
    const int fd = ::open(m_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return failed(errno);
    // What is read is the file opened, which may have been replaced since the stat.
    if (::fstat(fd, &info) != 0) {
        const int error = errno;
        ::close(fd);
        return failed(error);
    }
    const Seen opened{static_cast<std::uint64_t>(info.st_dev), static_cast<std::uint64_t>(info.st_ino),
                      static_cast<std::uint64_t>(info.st_size), modifiedNs(info)};
    Update update = read(fd, opened, maxBytes);
    ::close(fd);
    return update;
}

bool LineTail::stillTheSameBytes(int fd) const
{
    if (m_before.empty())
        return true;
    std::string bytes(m_before.size(), '\0');
    const ssize_t n = readAt(fd, bytes.data(), bytes.size(), m_offset - m_before.size());
    return n == static_cast<ssize_t>(bytes.size()) && bytes == m_before;
}

LineTail::Update LineTail::read(int fd, const Seen& now, std::size_t maxBytes)
{
    Update update;
    const bool replaced = m_known && (now.device != m_seen.device || now.inode != m_seen.inode);
    if (m_offset > 0 && (replaced || now.size < m_offset || !stillTheSameBytes(fd))) {
        forget();
        update.restarted = true;
    }
    m_known = true;
    m_seen = now;

    // From the offset, a chunk at a time until the chunk holds a newline (a line
    // longer than a chunk is read whole) or the file ends.
    std::string buffer;
    std::uint64_t position = m_offset;
    while (position < now.size) {
        const std::size_t searchFrom = buffer.size();
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(maxBytes, now.size - position));
        buffer.resize(searchFrom + want);
        const ssize_t n = readAt(fd, buffer.data() + searchFrom, want, position);
        if (n < 0) {
            update.error = m_file.string() + ": cannot be read: " + std::strerror(errno);
            buffer.resize(searchFrom);
            break;
        }
        buffer.resize(searchFrom + static_cast<std::size_t>(n));
        position += static_cast<std::uint64_t>(n);
        if (n == 0 || buffer.find('\n', searchFrom) != std::string::npos)
            break;  // the file ended early (shrank meanwhile), or a complete line is in hand
    }
    m_scanned = position;
    update.more = position < now.size && update.error.empty();

    const std::size_t end = buffer.rfind('\n');
    if (end == std::string::npos)
        return update;  // a torn line, at most: it waits for its newline
    for (std::size_t start = 0; start <= end;) {
        const std::size_t stop = buffer.find('\n', start);
        ++m_lines;
        if (stop > start) {
            update.lines.emplace_back(buffer, start, stop - start);
            update.lineNumbers.push_back(m_lines);
        }
        start = stop + 1;
    }
    m_offset += end + 1;
    m_before += buffer.substr(end + 1 > kFingerprint ? end + 1 - kFingerprint : 0, std::min(end + 1, kFingerprint));
    if (m_before.size() > kFingerprint)
        m_before.erase(0, m_before.size() - kFingerprint);
    return update;
}

}  // namespace widelab
