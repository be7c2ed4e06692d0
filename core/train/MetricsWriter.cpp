#include "MetricsWriter.h"

#include "Checkpoint.h"
#include "MetricsCodec.h"
#include "config/JsonText.h"

namespace widelab {

namespace {

// Keeps the lines of metrics.jsonl up to `step` (and drops a line cut short by
// a kill), rewriting the file atomically.
void trimMetrics(const std::filesystem::path& file, std::int64_t step)
{
    std::ifstream in(file);
    if (!in)
        return;
    std::string kept;
    for (std::string line; std::getline(in, line);) {
        // A damaged line goes as an unreadable one does: one that is not an object,
        // or whose step is not a number, made json.value() throw (a resume refused
        // over "[json.exception.type_error...]"), and a step of 1e308 converted to
        // an integer undefinedly and stayed.
        const nlohmann::json json = tryParseJsonText(line).value_or(nlohmann::json());
        if (!json.is_object())
            continue;
        const auto found = json.find("step");
        if (found == json.end() || (found->is_number() && found->get<double>() <= static_cast<double>(step)))
            kept += line + "\n";
    }
    writeFileAtomically(file, kept);
}

}  // namespace

MetricsWriter::MetricsWriter(std::filesystem::path file, Start start, std::int64_t step)
{
    if (file.empty())
        return;
    if (start == Start::Resumed) {
        trimMetrics(file, step);
    } else {
        std::error_code ignored;
        std::filesystem::remove(file, ignored);
    }
    m_out.open(file, std::ios::app);
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
    if (!m_out.is_open())
        return;
    m_out << line << '\n';
    m_out.flush();
}

}  // namespace widelab
