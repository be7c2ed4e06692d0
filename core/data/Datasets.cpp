#include "Datasets.h"

#include "runtime/SystemError.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace widelab {

class MappedFile {
public:
    explicit MappedFile(const std::filesystem::path& path);
    // Maps the whole file open at `fd` (which the caller keeps and closes); `name` for messages.
    MappedFile(int fd, const std::filesystem::path& name);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::string_view bytes() const { return {m_data, m_size}; }
    void adviseSequential() const;

private:
    void map(int fd, std::size_t size, const std::filesystem::path& name);

    const char* m_data = nullptr;
    std::size_t m_size = 0;
};

namespace {

std::string where(const std::filesystem::path& path, std::int64_t line)
{
    return path.string() + ":" + std::to_string(line) + ": ";
}

void checkFractions(const SplitFractions& f)
{
    const auto inRange = [](double x) { return x >= 0.0 && x <= 1.0; };
    if (!inRange(f.validation) || !inRange(f.test) || f.validation + f.test > 1.0)
        throw std::invalid_argument("split fractions validation " + std::to_string(f.validation) + " and test "
                                    + std::to_string(f.test) + " must lie in [0, 1] and sum to at most 1");
}

void checkSequenceLength(std::int64_t sequenceLength)
{
    if (sequenceLength < 1)
        throw std::invalid_argument("sequence length " + std::to_string(sequenceLength) + " is below 1");
}

void checkIndex(std::int64_t index, std::int64_t size)
{
    if (index < 0 || index >= size)
        throw std::out_of_range("example " + std::to_string(index) + " of a dataset of " + std::to_string(size));
}

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

bool isBlank(std::string_view text)
{
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return detail::isAsciiSpace(static_cast<unsigned char>(c)); });
}

std::string_view trim(std::string_view text)
{
    while (!text.empty() && detail::isAsciiSpace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
    while (!text.empty() && detail::isAsciiSpace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    return text;
}

std::string lowerCase(std::string text)
{
    for (char& c : text)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return text;
}

// The content of a quoted CSV field with each "" turned into ".
std::string unquote(std::string_view raw)
{
    std::string text;
    text.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        text += raw[i];
        if (raw[i] == '"')
            ++i;  // the second quote of ""
    }
    return text;
}

// ---- ListOps ----

class ListOpsDataset : public Dataset {
public:
    ListOpsDataset(const ListOpsOptions& options, std::int64_t count, std::uint64_t seed,
                   const std::function<void(std::int64_t)>& progress)
    {
        const Tokenizer tokenizer = listOpsTokenizer();
        ListOpsGenerator generator(options, seed);
        m_offsets.reserve(static_cast<std::size_t>(count) + 1);
        m_offsets.push_back(0);
        for (std::int64_t i = 0; i < count; ++i) {
            const TextExample example = generator.next();
            tokenizer.encodeTo(example.text, [&](std::int64_t id) { m_ids.push_back(static_cast<std::uint8_t>(id)); });
            m_offsets.push_back(m_ids.size());
            m_labels.push_back(static_cast<std::uint8_t>(example.label));
            if (progress && (i + 1) % kListOpsProgressEvery == 0)
                progress(i + 1);
        }
        m_ids.shrink_to_fit();
    }

    std::int64_t size() const override { return static_cast<std::int64_t>(m_labels.size()); }

    Example get(std::int64_t index) const override
    {
        checkIndex(index, size());
        const auto i = static_cast<std::size_t>(index);
        Example example;
        example.ids.assign(m_ids.begin() + static_cast<std::ptrdiff_t>(m_offsets[i]),
                           m_ids.begin() + static_cast<std::ptrdiff_t>(m_offsets[i + 1]));
        example.label = m_labels[i];
        return example;
    }

private:
    std::vector<std::uint8_t> m_ids;  // all examples' token ids (< 17), one after the other
    std::vector<std::size_t> m_offsets;
    std::vector<std::uint8_t> m_labels;
};

}  // namespace

// ---- MappedFile ----

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

std::string toString(Split split)
{
    switch (split) {
    case Split::Train:
        return "train";
    case Split::Validation:
        return "validation";
    case Split::Test:
        return "test";
    }
    return "unknown";
}

std::int64_t listOpsMemoryBytes(const ListOpsOptions& options, std::int64_t count)
{
    // Per example: its offset, its label and at most maxLength token bytes.
    const double perExample = static_cast<double>(sizeof(std::size_t) + 1) + static_cast<double>(options.maxLength);
    return static_cast<std::int64_t>(std::min(9.0e18, perExample * static_cast<double>(std::max<std::int64_t>(0, count))));
}

std::unique_ptr<Dataset> makeListOpsDataset(const ListOpsOptions& options, std::int64_t count, std::uint64_t seed,
                                            Split split, std::int64_t sequenceLength,
                                            const std::function<void(std::int64_t)>& progress)
{
    checkSequenceLength(sequenceLength);
    if (options.maxLength > sequenceLength)
        throw std::invalid_argument("ListOps max length " + std::to_string(options.maxLength)
                                    + " exceeds the sequence length " + std::to_string(sequenceLength));
    if (count < 0)
        throw std::invalid_argument("ListOps: negative example count " + std::to_string(count));
    return std::make_unique<ListOpsDataset>(options, count, mixSeed(seed, 1 + static_cast<std::uint64_t>(split)),
                                            progress);
}

// ---- ClassificationFile ----

struct ClassificationFile::State {
    struct Row {
        std::uint64_t offset = 0;  // the text's bytes in the file (inside the quotes when quoted)
        std::uint64_t length = 0;
        std::int32_t label = 0;
        Split split = Split::Train;
        bool quoted = false;       // CSV text in quotes: "" stands for "
    };

    explicit State(const std::filesystem::path& file) : path(file), mapped(file) {}

    // The text of `row`; `buffer` holds it when it must be unquoted.
    std::string_view text(const Row& row, std::string& buffer) const
    {
        const std::string_view raw = mapped.bytes().substr(row.offset, row.length);
        if (!row.quoted)
            return raw;
        buffer = unquote(raw);
        return buffer;
    }

    std::filesystem::path path;
    MappedFile mapped;
    std::vector<Row> rows;
    std::vector<std::string> labels;
    std::array<std::int64_t, 3> splitRows = {0, 0, 0};
};

namespace {

using Row = ClassificationFile::State::Row;

// One field of a row: bytes [begin, end) of the file, inside the quotes when quoted.
struct Field {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::int64_t line = 0;  // where it starts
    bool quoted = false;
};

// Line ends: "\n", "\r\n" and a lone "\r" (old Mac files) all end a line.
bool isLineEnd(char c) { return c == '\n' || c == '\r'; }

// Moves `p` past the line end at data[p] ("\r\n" counts once).
void skipLineEnd(std::string_view data, std::size_t& p)
{
    if (data[p] == '\r' && p + 1 < data.size() && data[p + 1] == '\n')
        ++p;
    ++p;
}

// The line ends in `text`.
std::int64_t countLineEnds(std::string_view text)
{
    std::int64_t count = 0;
    for (std::size_t p = 0; p < text.size(); ++p)
        if (text[p] == '\n' || (text[p] == '\r' && (p + 1 == text.size() || text[p + 1] != '\n')))
            ++count;
    return count;
}

// Reads the CSV field at `p` and moves `p` past its terminator: ',' , a line end
// (reported as '\n') or the end of the file (0).
Field readCsvField(std::string_view data, std::size_t& p, std::int64_t& line, char& terminator,
                   const std::filesystem::path& path)
{
    const std::size_t n = data.size();
    Field field;
    field.line = line;
    if (p < n && data[p] == '"') {
        field.quoted = true;
        field.begin = ++p;
        for (;; ++p) {
            if (p >= n)
                throw DataError(where(path, field.line) + "quoted field is not closed");
            if (data[p] == '"') {
                if (p + 1 < n && data[p + 1] == '"') {
                    ++p;
                    continue;
                }
                break;
            }
        }
        field.end = p++;
        line += countLineEnds(data.substr(field.begin, field.end - field.begin));
        if (p < n && data[p] != ',' && !isLineEnd(data[p]))
            throw DataError(where(path, line) + "unexpected character after a closing quote (a quote inside a "
                                                "quoted field is written \"\")");
    } else {
        field.begin = p;
        while (p < n && data[p] != ',' && !isLineEnd(data[p]))
            ++p;
        field.end = p;
    }
    terminator = '\0';
    if (p < n && data[p] == ',') {
        terminator = ',';
        ++p;
    } else if (p < n) {
        terminator = '\n';
        skipLineEnd(data, p);
        ++line;
    }
    return field;
}

// Collects the rows of a classification file as it is scanned, checking each.
class RowCollector {
public:
    RowCollector(ClassificationFile::State& state, const SplitFractions& fractions, std::uint64_t seed)
        : m_state(state), m_fractions(fractions), m_seed(seed)
    {
    }

    void add(const Field& label, const Field& text)
    {
        const std::string_view data = m_state.mapped.bytes();
        const std::string_view rawLabel = data.substr(label.begin, label.end - label.begin);
        checkUtf8(rawLabel, label);
        const std::string unquoted = label.quoted ? unquote(rawLabel) : std::string(rawLabel);
        const std::string labelText(trim(unquoted));
        const bool firstRow = !m_sawRow;
        m_sawRow = true;
        if (firstRow && lowerCase(labelText) == "label")
            return;  // a header
        if (labelText.empty())
            throw DataError(where(m_state.path, label.line) + "empty label");
        const std::string_view rawText = data.substr(text.begin, text.end - text.begin);
        checkUtf8(rawText, text);
        if (isBlank(rawText))
            throw DataError(where(m_state.path, text.line) + "empty text");

        auto found = m_labelIndex.find(labelText);
        if (found == m_labelIndex.end()) {
            found = m_labelIndex.emplace(labelText, static_cast<std::int32_t>(m_names.size())).first;
            m_names.push_back(labelText);
            m_firstLines.push_back(label.line);
        }
        Row row;
        row.offset = text.begin;
        row.length = text.end - text.begin;
        row.label = found->second;
        row.quoted = text.quoted;
        const std::uint64_t hash = mixSeed(m_seed, m_state.rows.size());
        const double u = static_cast<double>(hash >> 11) * 0x1.0p-53;
        row.split = u < m_fractions.test                         ? Split::Test
                    : u < m_fractions.test + m_fractions.validation ? Split::Validation
                                                                    : Split::Train;
        ++m_state.splitRows[static_cast<std::size_t>(row.split)];
        m_state.rows.push_back(row);
    }

    // Turns the labels seen into the given classes (a run's labels.json), each label
    // by its name; a decimal label also by its number when the classes are 0..C-1.
    void assignClasses(const std::vector<std::string>& classes)
    {
        bool numbered = true;
        for (std::size_t c = 0; c < classes.size() && numbered; ++c)
            numbered = classes[c] == std::to_string(c);
        detail::StringMap<std::int32_t> index;
        for (std::size_t c = 0; c < classes.size(); ++c)
            index.emplace(classes[c], static_cast<std::int32_t>(c));
        std::vector<std::int32_t> classOf(m_names.size());
        for (std::size_t i = 0; i < m_names.size(); ++i) {
            const std::string& name = m_names[i];
            if (const auto found = index.find(name); found != index.end()) {
                classOf[i] = found->second;
                continue;
            }
            const bool decimal = !name.empty() && name.size() <= 6
                                 && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
            if (numbered && decimal && std::stoll(name) < static_cast<std::int64_t>(classes.size())) {
                classOf[i] = static_cast<std::int32_t>(std::stoll(name));
                continue;
            }
            throw DataError(where(m_state.path, m_firstLines[i]) + "label \"" + name + "\" is not one of the run's "
                            + std::to_string(classes.size()) + " classes (its labels.json fixes them for the life of "
                            "the run; a new class needs a new run)");
        }
        m_state.labels = classes;
        for (Row& row : m_state.rows)
            row.label = classOf[static_cast<std::size_t>(row.label)];
    }

    // Turns the labels seen into classes: their numbers when all are decimal numbers, else their sorted order.
    void assignClasses()
    {
        std::vector<std::int32_t> classOf(m_names.size());
        const bool numeric = std::all_of(m_names.begin(), m_names.end(), [](const std::string& name) {
            return std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
        });
        constexpr std::int64_t kMaxClasses = 100000;
        if (numeric) {
            std::int64_t largest = 0;
            for (std::size_t i = 0; i < m_names.size(); ++i) {
                const std::string_view digits = m_names[i];
                const std::size_t first = std::min(digits.find_first_not_of('0'), digits.size());
                if (digits.size() - first > 6 || std::stoll(m_names[i]) >= kMaxClasses)
                    throw DataError(where(m_state.path, m_firstLines[i]) + "label " + m_names[i]
                                    + " is too large for a class number (at most " + std::to_string(kMaxClasses - 1)
                                    + ")");
                classOf[i] = static_cast<std::int32_t>(std::stoll(m_names[i]));
                largest = std::max<std::int64_t>(largest, classOf[i]);
            }
            for (std::int64_t c = 0; c <= largest; ++c)
                m_state.labels.push_back(std::to_string(c));
        } else {
            std::vector<std::size_t> order(m_names.size());
            for (std::size_t i = 0; i < order.size(); ++i)
                order[i] = i;
            std::sort(order.begin(), order.end(),
                      [&](std::size_t a, std::size_t b) { return m_names[a] < m_names[b]; });
            for (std::size_t k = 0; k < order.size(); ++k) {
                classOf[order[k]] = static_cast<std::int32_t>(k);
                m_state.labels.push_back(m_names[order[k]]);
            }
        }
        for (Row& row : m_state.rows)
            row.label = classOf[static_cast<std::size_t>(row.label)];
    }

private:
    // Invalid UTF-8 is reported on the line where the bad byte is.
    void checkUtf8(std::string_view raw, const Field& field) const
    {
        const std::size_t bad = findInvalidUtf8(raw);
        if (bad == std::string_view::npos)
            return;
        const auto line = field.line + countLineEnds(raw.substr(0, bad));
        throw DataError(where(m_state.path, line) + "invalid UTF-8 at byte "
                        + std::to_string(field.begin + bad) + " of the file");
    }

    ClassificationFile::State& m_state;
    SplitFractions m_fractions;
    std::uint64_t m_seed;
    bool m_sawRow = false;
    detail::StringMap<std::int32_t> m_labelIndex;
    std::vector<std::string> m_names;  // in order of first appearance
    std::vector<std::int64_t> m_firstLines;
};

void scanTsv(std::string_view data, std::size_t start, const std::filesystem::path& path, RowCollector& rows)
{
    std::int64_t line = 0;
    for (std::size_t p = start; p < data.size();) {
        ++line;
        const std::size_t begin = p;
        std::size_t end = data.find_first_of("\r\n", p);
        if (end == std::string_view::npos)
            end = p = data.size();
        else
            skipLineEnd(data, p = end);
        if (end == begin)
            continue;  // an empty line
        const std::size_t tab = data.substr(begin, end - begin).find('\t');
        if (tab == std::string_view::npos) {
            const bool commas = data.substr(begin, end - begin).find(',') != std::string_view::npos;
            throw DataError(where(path, line) + "no tab between label and text"
                            + (commas ? " (the file is read as TSV; a comma-separated file needs the extension .csv)"
                                      : ""));
        }
        rows.add({begin, begin + tab, line, false}, {begin + tab + 1, end, line, false});
    }
}

void scanCsv(std::string_view data, std::size_t start, const std::filesystem::path& path, RowCollector& rows)
{
    std::int64_t line = 1;
    for (std::size_t p = start; p < data.size();) {
        const std::int64_t rowLine = line;
        char terminator = 0;
        const Field label = readCsvField(data, p, line, terminator, path);
        if (terminator != ',') {
            if (!label.quoted && label.end == label.begin)
                continue;  // an empty line
            throw DataError(where(path, rowLine) + "no comma between label and text");
        }
        const Field text = readCsvField(data, p, line, terminator, path);
        if (terminator == ',')
            throw DataError(where(path, rowLine) + "more than two fields (quote a text that contains commas)");
        rows.add(label, text);
    }
}

class ClassificationDataset : public Dataset {
public:
    ClassificationDataset(std::shared_ptr<const ClassificationFile::State> state, Split split, Tokenizer tokenizer,
                          std::int64_t sequenceLength)
        : m_state(std::move(state)), m_tokenizer(std::move(tokenizer)), m_sequenceLength(sequenceLength)
    {
        for (std::size_t i = 0; i < m_state->rows.size(); ++i)
            if (m_state->rows[i].split == split)
                m_rows.push_back(i);
    }

    std::int64_t size() const override { return static_cast<std::int64_t>(m_rows.size()); }

    Example get(std::int64_t index) const override
    {
        checkIndex(index, size());
        const Row& row = m_state->rows[m_rows[static_cast<std::size_t>(index)]];
        std::string buffer;
        Example example;
        example.ids = m_tokenizer.encode(m_state->text(row, buffer), m_sequenceLength);
        example.label = row.label;
        return example;
    }

private:
    std::shared_ptr<const ClassificationFile::State> m_state;
    Tokenizer m_tokenizer;
    std::int64_t m_sequenceLength;
    std::vector<std::size_t> m_rows;
};

}  // namespace

ClassificationFile::ClassificationFile(std::filesystem::path path, SplitFractions fractions, std::uint64_t seed,
                                       const std::vector<std::string>& classes)
{
    checkFractions(fractions);
    auto state = std::make_shared<State>(path);
    const std::string_view data = state->mapped.bytes();
    if (data.empty())
        throw DataError(path.string() + ": file is empty");
    state->mapped.adviseSequential();
    RowCollector rows(*state, fractions, seed);
    // A UTF-8 byte order mark (spreadsheets write one) is not part of the first label.
    const std::size_t start = data.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
    if (lowerCase(path.extension().string()) == ".csv")
        scanCsv(data, start, path, rows);
    else
        scanTsv(data, start, path, rows);
    if (state->rows.empty())
        throw DataError(path.string() + ": no rows");
    if (classes.empty())
        rows.assignClasses();
    else
        rows.assignClasses(classes);
    m_state = std::move(state);
}

const std::vector<std::string>& ClassificationFile::labels() const { return m_state->labels; }

std::int64_t ClassificationFile::rows() const { return static_cast<std::int64_t>(m_state->rows.size()); }

std::int64_t ClassificationFile::rows(Split split) const
{
    return m_state->splitRows[static_cast<std::size_t>(split)];
}

const std::filesystem::path& ClassificationFile::path() const { return m_state->path; }

void ClassificationFile::addTrainingTexts(VocabularyBuilder& builder) const
{
    std::string buffer;
    for (const State::Row& row : m_state->rows)
        if (row.split == Split::Train)
            builder.add(m_state->text(row, buffer));  // checked to be UTF-8 by the scan
}

std::unique_ptr<Dataset> ClassificationFile::dataset(Split split, const Tokenizer& tokenizer,
                                                     std::int64_t sequenceLength) const
{
    checkSequenceLength(sequenceLength);
    return std::make_unique<ClassificationDataset>(m_state, split, tokenizer, sequenceLength);
}

// ---- TextFile ----

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
        // Hand on everything before the last whitespace, which starts the next piece.
        std::size_t last = pending.size();
        while (last > 0 && !detail::isAsciiSpace(static_cast<unsigned char>(pending[last - 1])))
            --last;
        if (last <= 1)
            continue;
        piece(std::string_view(pending).substr(0, last - 1), offset);
        pending.erase(0, last - 1);
        offset += last - 1;
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
