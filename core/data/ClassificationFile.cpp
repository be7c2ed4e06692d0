#include "Datasets.h"

#include "DatasetChecks.h"
#include "MappedFile.h"
#include "PairInput.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

// A classification file (TSV or CSV) read into rows, split and labelled.

namespace widelab {

namespace {

std::string where(const std::filesystem::path& path, std::int64_t line)
{
    return path.string() + ":" + std::to_string(line) + ": ";
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
}  // namespace

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
    RowCollector(ClassificationFile::State& state, const SplitFractions& fractions, std::uint64_t seed, bool pairs)
        : m_state(state), m_fractions(fractions), m_seed(seed), m_pairs(pairs)
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
        if (m_pairs) {
            const std::size_t tab = rawText.find('\t');
            if (tab == std::string_view::npos)
                throw DataError(where(m_state.path, text.line)
                                + "one text where a pair task needs two, separated by a tab (label TAB first TAB second)");
            const bool firstBlank = isBlank(rawText.substr(0, tab));
            if (firstBlank || isBlank(rawText.substr(tab + 1)))
                throw DataError(where(m_state.path, text.line) + "the pair's " + (firstBlank ? "first" : "second")
                                + " text is empty");
        }

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
        row.split = splitOfRow(m_seed, static_cast<std::int64_t>(m_state.rows.size()), m_fractions);
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
    bool m_pairs = false;  // each text two, split at a tab
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
                          std::int64_t sequenceLength, std::optional<std::int64_t> separator)
        : m_state(std::move(state)), m_tokenizer(std::move(tokenizer)), m_sequenceLength(sequenceLength),
          m_separator(separator)
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
        const std::string_view text = m_state->text(row, buffer);
        if (m_separator) {
            const auto [first, second] = splitProbePair(text);  // at the tab the scan made sure of
            example.ids = encodePair(m_tokenizer, first, second, m_sequenceLength, *m_separator);
        } else {
            example.ids = m_tokenizer.encode(text, m_sequenceLength);
        }
        example.label = row.label;
        return example;
    }

private:
    std::shared_ptr<const ClassificationFile::State> m_state;
    Tokenizer m_tokenizer;
    std::int64_t m_sequenceLength;
    std::optional<std::int64_t> m_separator;
    std::vector<std::size_t> m_rows;
};

}  // namespace

ClassificationFile::ClassificationFile(std::filesystem::path path, SplitFractions fractions, std::uint64_t seed,
                                       const std::vector<std::string>& classes, bool pairs)
{
    checkFractions(fractions);
    auto state = std::make_shared<State>(path);
    const std::string_view data = state->mapped.bytes();
    if (data.empty())
        throw DataError(path.string() + ": file is empty");
    state->mapped.adviseSequential();
    RowCollector rows(*state, fractions, seed, pairs);
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
                                                     std::int64_t sequenceLength,
                                                     std::optional<std::int64_t> separator) const
{
    checkSequenceLength(sequenceLength);
    return std::make_unique<ClassificationDataset>(m_state, split, tokenizer, sequenceLength, separator);
}

}  // namespace widelab
