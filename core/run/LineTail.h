// defines: LineTail: the complete lines another process has appended to a file
// since the last look, for following metrics.jsonl or log.txt as they grow
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace widelab {

// Poll-based, because change notifications (inotify) do not cross NFS or sshfs.
// A poll costs one stat() when nothing changed. Only complete lines come back:
// a last line still being written (no '\n' yet) waits for its newline. A file
// that was replaced (renamed over: another inode or device), truncated (shorter
// than what was read) or rewritten in place (the bytes before the offset differ)
// starts again from its beginning, and the poll says so with `restarted`: the
// caller drops what it built from the earlier lines. No lock is taken.
class LineTail {
public:
    static constexpr std::size_t kDefaultChunk = std::size_t{1} << 20;  // 1 MiB per poll

    struct Update {
        std::vector<std::string> lines;  // complete lines in file order, without '\n'; empty lines skipped
        std::vector<std::uint64_t> lineNumbers;  // each line's number in the file (1 = the first), for messages
        bool restarted = false;          // the lines read before are void; `lines` start at the file's beginning
        bool more = false;               // stopped after about maxBytes: poll again for the rest
        std::string error;               // the file exists but cannot be read: names it and says why
    };

    LineTail() = default;  // no file: for a reader to choose one later
    explicit LineTail(std::filesystem::path file);

    // Reads at most about `maxBytes` (more only when a single line is longer).
    // A missing file is no error: nothing yet, or (if lines were read) a restart.
    Update poll(std::size_t maxBytes = kDefaultChunk);

    const std::filesystem::path& file() const { return m_file; }
    std::uint64_t offset() const { return m_offset; }  // bytes of complete lines returned so far

private:
    struct Seen {  // the file as the last look found it
        std::uint64_t device = 0, inode = 0, size = 0;
        std::int64_t modifiedNs = 0;
        bool operator==(const Seen&) const = default;
    };

    void forget();  // back to the beginning, as for a file never seen
    Update read(int fd, const Seen& now, std::size_t maxBytes);
    bool stillTheSameBytes(int fd) const;  // the bytes just before m_offset are the ones read

    std::filesystem::path m_file;
    bool m_known = false;        // m_seen describes the file
    Seen m_seen;
    std::uint64_t m_offset = 0;  // end of the last complete line returned
    std::uint64_t m_scanned = 0; // how far the last read looked (a torn line lies between the two)
    std::uint64_t m_lines = 0;   // lines (newlines) before m_offset
    std::string m_before;        // up to kFingerprint bytes ending at m_offset
};

}  // namespace widelab
