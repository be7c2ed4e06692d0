#include "MetricsWriter.h"

#include "Checkpoint.h"
#include "vocab/MetricsCodec.h"
#include "vocab/JsonText.h"
#include "runtime/SystemError.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <stdexcept>

namespace widelab {

namespace {

// Keeps the lines of metrics.jsonl up to `step` (and drops a line cut short by
// a kill). When the lines kept are the file's first ones (the usual case: lines
// come in step order), the file is cut in place, which needs no free space (a run
// stopped by a full disk resumes on the same disk); otherwise it is rewritten
// atomically.
void trimMetrics(const std::filesystem::path& file, std::int64_t step)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return;
    std::string kept;
    std::uintmax_t prefix = 0;  // bytes of the leading lines kept, while every line so far is
    bool onlyLeading = true;
    for (std::string line; std::getline(in, line);) {
        // A damaged line goes as an unreadable one does: one that is not an object,
        // or whose step is not a number, made json.value() throw (a resume refused
        // over "[json.exception.type_error...]"), and a step of 1e308 converted to
        // an integer undefinedly and stayed.
        const nlohmann::json json = tryParseJsonText(line).value_or(nlohmann::json());
        const auto found = json.is_object() ? json.find("step") : json.end();
        const bool keep = json.is_object()
                          && (found == json.end()
                              || (found->is_number() && found->get<double>() <= static_cast<double>(step)));
        const bool whole = !in.eof();  // ended by a newline
        if (keep && whole) {
            kept += line + "\n";
            if (onlyLeading)
                prefix += line.size() + 1;
        } else if (keep) {
            kept += line + "\n";
            onlyLeading = false;  // a last line without its newline gains one
        } else {
            onlyLeading = false;
        }
    }
    in.close();
    if (kept.size() == prefix) {  // the lines kept are the leading ones
        std::error_code error;
        if (std::filesystem::file_size(file, error) != prefix && !error)
            std::filesystem::resize_file(file, prefix, error);
        if (!error)
            return;
    }
    writeFileAtomically(file, kept);
}

int openForAppending(const std::filesystem::path& file)
{
    const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        throw std::runtime_error(file.string() + ": cannot open for appending: " + systemReason(errno));
    return fd;
}

// `line` and a newline at the end of `fd`, or nothing: a failed write is cut away.
void appendWhole(int fd, const std::filesystem::path& file, const std::string& line, const char* consequence)
{
    const std::string text = line + '\n';
    const off_t before = ::lseek(fd, 0, SEEK_END);
    if (const int error = writeAll(fd, text); error != 0) {
        if (before >= 0 && ::ftruncate(fd, before) != 0) {
            // The part written stays: a resume drops a line cut short.
        }
        throw std::runtime_error(file.string() + ": cannot append a line: " + systemReason(error) + consequence);
    }
}

}  // namespace

void appendMetricsLine(const std::filesystem::path& file, const std::string& line)
{
    const int fd = openForAppending(file);
    try {
        appendWhole(fd, file, line, "");
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
}

MetricsWriter::MetricsWriter(std::filesystem::path file, Start start, std::int64_t step) : m_file(std::move(file))
{
    if (m_file.empty())
        return;
    if (start == Start::Resumed) {
        trimMetrics(m_file, step);
    } else {
        std::error_code ignored;
        std::filesystem::remove(m_file, ignored);
    }
    m_fd = openForAppending(m_file);
}

MetricsWriter::~MetricsWriter()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

void MetricsWriter::onSnapshot(const TrainingSnapshot& snapshot)
{
    if (!snapshot.provisional)
        write(encodeMetricsLine(snapshot));
}

void MetricsWriter::onEvaluation(const EvaluationResult& result) { write(encodeMetricsLine(result)); }

void MetricsWriter::onProbe(const ProbeResult& result) { write(encodeMetricsLine(result)); }

void MetricsWriter::onValidationInsights(const ValidationInsights& insights) { write(encodeMetricsLine(insights)); }

void MetricsWriter::write(const std::string& line)
{
    if (m_fd >= 0)
        appendWhole(m_fd, m_file, line,
                    "; the run stops here and keeps its last checkpoint: make room, then resume it, which writes "
                    "the lines from that checkpoint on");
}

}  // namespace widelab
