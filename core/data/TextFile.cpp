#include "Datasets.h"

#include "DatasetChecks.h"
#include "MappedFile.h"

#include "runtime/SystemError.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <stdexcept>
#include <system_error>
#include <utility>

// A text file for a language model, tokenized once into a cache beside the run.

namespace widelab {

namespace {

std::uint64_t fnv1a(std::string_view text, std::uint64_t hash = 0xcbf29ce484222325ULL)
{
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

std::string hex64(std::uint64_t value)
{
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string text(16, '0');
    for (int i = 15; i >= 0; --i, value >>= 4)
        text[static_cast<std::size_t>(i)] = kDigits[value & 15];
    return text;
}
}  // namespace

namespace {

// The token cache: this header, then `count` int32 token ids. "WLTOKEN1" caches
// were keyed by the text's path, size and time; "WLTOKEN2" by its content.
constexpr char kCacheMagic[8] = {'W', 'L', 'T', 'O', 'K', 'E', 'N', '2'};
constexpr char kOldCacheMagic[8] = {'W', 'L', 'T', 'O', 'K', 'E', 'N', '1'};
struct CacheHeader {
    char magic[8] = {'W', 'L', 'T', 'O', 'K', 'E', 'N', '2'};
    std::uint64_t key = 0;
    std::uint64_t count = 0;
    std::uint64_t sourceSize = 0;
};
static_assert(sizeof(CacheHeader) == 32);

class LanguageModelDataset : public Dataset {
public:
    LanguageModelDataset(std::shared_ptr<const MappedFile> cache, std::int64_t firstWindow, std::int64_t windows,
                         std::int64_t sequenceLength)
        : m_cache(std::move(cache)), m_first(firstWindow), m_windows(windows), m_length(sequenceLength)
    {
        const std::string_view bytes = m_cache->bytes();
        m_tokens = reinterpret_cast<const std::int32_t*>(bytes.data() + sizeof(CacheHeader));
        m_count = static_cast<std::int64_t>((bytes.size() - sizeof(CacheHeader)) / sizeof(std::int32_t));
    }

    std::int64_t size() const override { return m_windows; }

    Example get(std::int64_t index) const override
    {
        checkIndex(index, size());
        // window w covers tokens [w*L, w*L + L]: ids are its first L tokens, targets its last L
        const std::int64_t start = (m_first + index) * m_length;
        const std::int64_t length = std::min(m_length, m_count - 1 - start);
        Example example;
        example.ids.assign(m_tokens + start, m_tokens + start + length);
        example.targets.assign(m_tokens + start + 1, m_tokens + start + 1 + length);
        return example;
    }

private:
    std::shared_ptr<const MappedFile> m_cache;
    const std::int32_t* m_tokens = nullptr;
    std::int64_t m_count = 0;
    std::int64_t m_first;
    std::int64_t m_windows;
    std::int64_t m_length;
};

// Removes a temporary file unless released.
struct TemporaryFile {
    std::filesystem::path path;
    bool keep = false;
    ~TemporaryFile()
    {
        if (!keep) {
            std::error_code ignored;
            std::filesystem::remove(path, ignored);
        }
    }
};

// Closes a descriptor when it goes.
struct Descriptor {
    int fd = -1;
    ~Descriptor()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

// Reads exactly `size` bytes; false when the file ends first.
bool readExactly(int fd, char* data, std::size_t size)
{
    for (std::size_t done = 0; done < size;) {
        const ssize_t read = ::read(fd, data + done, size - done);
        if (read < 0 && errno == EINTR)
            continue;
        if (read <= 0)
            return false;
        done += static_cast<std::size_t>(read);
    }
    return true;
}

// The process that wrote a cache temporary (NAME.tokens.tmp.PID.N) is gone.
bool writerGone(const std::string& name)
{
    static const std::regex pattern(R"(.+\.tokens\.tmp\.(\d+)\.\d+)");
    std::smatch match;
    if (!std::regex_match(name, match, pattern))
        return false;
    const long pid = std::strtol(match[1].str().c_str(), nullptr, 10);
    return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// A name of its own beside `cache` for each writer and copy, in this process and
// others: NAME.tokens.tmp.PID.N (writerGone's pattern).
std::filesystem::path cacheTemporary(const std::filesystem::path& cache)
{
    static std::atomic<std::uint64_t> count{0};
    return cache.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(count++);
}

std::string mebibytes(std::uint64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return text;
}

}  // namespace

TextFile::TextFile(std::filesystem::path path, std::filesystem::path cacheDirectory,
                   std::function<void(const std::string&)> progress)
    : m_path(std::move(path)), m_cacheDirectory(std::move(cacheDirectory)), m_progress(std::move(progress))
{
    struct stat info = {};
    if (::stat(m_path.c_str(), &info) != 0)
        throw DataError(m_path.string() + ": cannot open (" + systemReason(errno) + ")");
    if (!S_ISREG(info.st_mode))
        throw DataError(m_path.string() + ": not a regular file");
    m_size = static_cast<std::uint64_t>(info.st_size);
    if (m_size == 0)
        throw DataError(m_path.string() + ": file is empty");
}

void TextFile::readPieces(const std::function<void(std::string_view, std::size_t)>& piece) const
{
    Descriptor file{::open(m_path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0)
        throw DataError(m_path.string() + ": cannot open (" + systemReason(errno) + ")");
    ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    const auto changed = [&](std::uint64_t now) {
        return DataError(m_path.string() + ": changed while it was read (" + std::to_string(m_size) + " bytes, then "
                         + std::to_string(now) + "); read it again when nothing writes it");
    };
    constexpr std::size_t kBlock = std::size_t(1) << 20;
    std::vector<char> block(kBlock);
    std::string pending;     // read, not yet handed on
    std::size_t offset = 0;  // of pending's first byte
    std::uint64_t total = 0;
    for (;;) {
        const ssize_t read = ::read(file.fd, block.data(), kBlock);
        if (read < 0 && errno == EINTR)
            continue;
        if (read < 0)
            throw DataError(m_path.string() + ": cannot be read (" + systemReason(errno) + ")");
        if (read == 0)
            break;
        total += static_cast<std::uint64_t>(read);
        if (total > m_size)
            throw changed(total);
        pending.append(block.data(), static_cast<std::size_t>(read));
        // Hand on everything before the last run of whitespace that something else follows, which starts the next
        // piece: a word, or a bpe piece (data/Bpe.h), never spans that cut, and the run is whole on its side.
        const auto space = [&](std::size_t i) { return detail::isAsciiSpace(static_cast<unsigned char>(pending[i])); };
        std::size_t last = pending.size();
        while (last > 0 && space(last - 1))  // a run at the end may go on in the next block
            --last;
        while (last > 0 && !space(last - 1))
            --last;
        while (last > 0 && space(last - 1))
            --last;
        if (last == 0)
            continue;
        piece(std::string_view(pending).substr(0, last), offset);
        pending.erase(0, last);
        offset += last;
    }
    if (total != m_size)
        throw changed(total);
    if (!pending.empty())
        piece(pending, offset);
}

void TextFile::addTexts(VocabularyBuilder& builder) const
{
    readPieces([&](std::string_view piece, std::size_t offset) {
        try {
            builder.add(piece);
        } catch (const InvalidUtf8& e) {
            throw DataError(m_path.string() + ": invalid UTF-8 at byte " + std::to_string(offset + e.offset())
                            + " (word and character tokenizers need UTF-8 text; the byte tokenizer takes any file)");
        }
    });
}

std::uint64_t TextFile::contentHash() const
{
    if (!m_contentHash) {
        std::uint64_t hash = fnv1a({});
        readPieces([&](std::string_view piece, std::size_t) { hash = fnv1a(piece, hash); });
        m_contentHash = hash;
    }
    return *m_contentHash;
}

std::uint64_t TextFile::cacheKey(const Tokenizer& tokenizer) const
{
    return fnv1a(tokenizer.toJson().dump(), contentHash());
}

std::filesystem::path TextFile::cachePath(const Tokenizer& tokenizer) const
{
    std::error_code error;
    std::filesystem::path absolute = std::filesystem::absolute(m_path, error);
    if (error)
        absolute = m_path;
    const std::uint64_t name = fnv1a(toString(tokenizer.kind()), fnv1a(absolute.string() + '\0'));
    return m_cacheDirectory / (m_path.filename().string() + "." + hex64(name) + ".tokens");
}

std::shared_ptr<const MappedFile> TextFile::readCache(const std::filesystem::path& cache, std::uint64_t key) const
{
    Descriptor file{::open(cache.c_str(), O_RDONLY | O_CLOEXEC)};
    struct stat info = {};
    if (file.fd < 0 || ::fstat(file.fd, &info) != 0 || !S_ISREG(info.st_mode))
        return nullptr;
    CacheHeader header;
    const std::uint64_t size = static_cast<std::uint64_t>(info.st_size);
    if (!readExactly(file.fd, reinterpret_cast<char*>(&header), sizeof header)
        || std::memcmp(header.magic, kCacheMagic, sizeof kCacheMagic) != 0 || header.key != key
        || header.sourceSize != m_size || size != sizeof header + header.count * sizeof(std::int32_t))
        return nullptr;
    // Mapped, the shared cache would end this process with SIGBUS if another cut it
    // short: what is mapped is a private copy, a file no other process can open
    // (unlinked as soon as it is made), in the page cache rather than on the heap.
    const std::filesystem::path name = cacheTemporary(cache);
    Descriptor copy{::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
    if (copy.fd < 0)
        throw DataError(name.string() + ": cannot copy the token cache: " + systemReason(errno));
    ::unlink(name.c_str());
    if (int failure = writeAll(copy.fd, std::string_view(reinterpret_cast<const char*>(&header), sizeof header));
        failure != 0)
        throw DataError(name.string() + ": cannot copy the token cache: " + systemReason(failure));
    std::vector<char> block(std::size_t(1) << 20);
    for (std::uint64_t left = size - sizeof header; left > 0;) {
        const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(left, block.size()));
        if (!readExactly(file.fd, block.data(), take))
            return nullptr;  // cut short since fstat (another process writing it): tokenize again
        if (int failure = writeAll(copy.fd, std::string_view(block.data(), take)); failure != 0)
            throw DataError(name.string() + ": cannot copy the token cache: " + systemReason(failure));
        left -= take;
    }
    return std::make_shared<const MappedFile>(copy.fd, cache);
}

void TextFile::removeStaleCaches(const std::filesystem::path& keep) const
{
    const std::string prefix = m_path.filename().string() + ".";
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(m_cacheDirectory, error)) {
        const std::filesystem::path file = entry.path();
        const std::string name = file.filename().string();
        if (file == keep || name.compare(0, prefix.size(), prefix) != 0)
            continue;
        bool stale = writerGone(name);
        if (!stale && name.size() == prefix.size() + 16 + 7 && name.ends_with(".tokens")) {
            // An earlier WideLab's cache of this text, keyed by its path, size and time.
            char magic[8] = {};
            Descriptor old{::open(file.c_str(), O_RDONLY | O_CLOEXEC)};
            stale = old.fd >= 0 && readExactly(old.fd, magic, sizeof magic)
                    && std::memcmp(magic, kOldCacheMagic, sizeof magic) == 0;
        }
        if (stale) {
            std::error_code ignored;
            std::filesystem::remove(file, ignored);
        }
    }
}

std::shared_ptr<const MappedFile> TextFile::tokens(const Tokenizer& tokenizer) const
{
    const std::uint64_t key = cacheKey(tokenizer);
    if (const auto known = m_tokens.find(key); known != m_tokens.end())
        return known->second;
    const std::filesystem::path path = cachePath(tokenizer);
    std::error_code error;
    std::filesystem::create_directories(m_cacheDirectory, error);
    if (error)
        throw DataError(m_cacheDirectory.string() + ": cannot create the token cache directory ("
                        + systemReason(error.value()) + ")");
    removeStaleCaches(path);
    if (auto cached = readCache(path, key))
        return m_tokens[key] = cached;

    TemporaryFile temporary{cacheTemporary(path)};
    Descriptor out{::open(temporary.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    int failure = out.fd < 0 ? errno : 0;
    const auto cannotWrite = [&] {
        return DataError(temporary.path.string() + ": cannot write the token cache: " + systemReason(failure));
    };
    CacheHeader header;
    header.key = key;
    header.sourceSize = m_size;
    if (failure == 0)
        failure = writeAll(out.fd, std::string_view(reinterpret_cast<const char*>(&header), sizeof header));
    if (failure != 0)
        throw cannotWrite();
    std::vector<std::int32_t> buffer;
    buffer.reserve(1 << 16);
    const auto flush = [&] {
        if (failure == 0)
            failure = writeAll(out.fd, std::string_view(reinterpret_cast<const char*>(buffer.data()),
                                                        buffer.size() * sizeof(std::int32_t)));
        buffer.clear();
    };
    std::uint64_t hash = fnv1a({});
    std::uint64_t reported = 0;  // tenths
    readPieces([&](std::string_view piece, std::size_t offset) {
        hash = fnv1a(piece, hash);
        try {
            tokenizer.encodeTo(piece, [&](std::int64_t id) {
                buffer.push_back(static_cast<std::int32_t>(id));
                ++header.count;
                if (buffer.size() == buffer.capacity())
                    flush();
            });
        } catch (const InvalidUtf8& e) {
            throw DataError(m_path.string() + ": invalid UTF-8 at byte " + std::to_string(offset + e.offset())
                            + " (the " + toString(tokenizer.kind())
                            + " tokenizer needs UTF-8 text; the byte tokenizer takes any file)");
        }
        if (failure != 0)
            throw cannotWrite();
        const std::uint64_t done = offset + piece.size();
        if (m_progress && m_size >= kTextProgressFrom && done * 10 / m_size > reported) {
            reported = done * 10 / m_size;
            m_progress("tokenizing " + m_path.string() + ": " + std::to_string(reported * 10) + "% ("
                       + mebibytes(done) + " of " + mebibytes(m_size) + " MiB)");
        }
    });
    flush();
    if (hash != contentHash())
        throw DataError(m_path.string() + ": changed while it was read (its content differs between two readings); "
                                          "read it again when nothing writes it");
    if (failure == 0 && ::pwrite(out.fd, &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header))
        failure = errno != 0 ? errno : EIO;
    if (out.fd >= 0 && ::close(std::exchange(out.fd, -1)) != 0 && failure == 0)
        failure = errno;
    if (failure != 0)
        throw cannotWrite();
    if (::rename(temporary.path.c_str(), path.c_str()) != 0)
        throw DataError(path.string() + ": cannot write the token cache: " + systemReason(errno));
    temporary.keep = true;
    auto cached = readCache(path, key);
    if (!cached)
        throw DataError(path.string() + ": the token cache changed while it was written");
    return m_tokens[key] = cached;
}

std::int64_t TextFile::tokenCount(const Tokenizer& tokenizer) const
{
    return static_cast<std::int64_t>((tokens(tokenizer)->bytes().size() - sizeof(CacheHeader)) / sizeof(std::int32_t));
}

std::unique_ptr<Dataset> TextFile::dataset(Split split, const Tokenizer& tokenizer, std::int64_t sequenceLength,
                                           SplitFractions fractions) const
{
    checkSequenceLength(sequenceLength);
    checkFractions(fractions);
    auto all = tokens(tokenizer);
    const auto count = static_cast<std::int64_t>((all->bytes().size() - sizeof(CacheHeader)) / sizeof(std::int32_t));
    if (count < 2)
        throw DataError(m_path.string() + ": " + std::to_string(count) + " token" + (count == 1 ? "" : "s")
                        + " with the " + toString(tokenizer.kind())
                        + " tokenizer; language modelling needs at least 2");
    // Windows of L + 1 tokens overlapping by one: ceil((count - 1) / L) of them, the last maybe shorter.
    const std::int64_t windows = (count - 2) / sequenceLength + 1;
    const auto part = [&](double fraction) {
        return static_cast<std::int64_t>(std::floor(static_cast<double>(windows) * fraction + 1e-9));
    };
    const std::int64_t test = part(fractions.test);
    const std::int64_t validation = part(fractions.validation);
    const std::int64_t train = std::max<std::int64_t>(0, windows - test - validation);
    switch (split) {
    case Split::Train:
        return std::make_unique<LanguageModelDataset>(std::move(all), 0, train, sequenceLength);
    case Split::Validation:
        return std::make_unique<LanguageModelDataset>(std::move(all), train, validation, sequenceLength);
    case Split::Test:
        return std::make_unique<LanguageModelDataset>(std::move(all), train + validation, test, sequenceLength);
    }
    throw std::invalid_argument("unknown split");
}

}  // namespace widelab
