#include "RunStatusWriter.h"

#include <unistd.h>

namespace widelab {

RunStatusWriter::RunStatusWriter(std::filesystem::path directory, std::int64_t totalSteps, std::chrono::milliseconds every)
    : m_directory(std::move(directory)), m_every(every)
{
    m_status.host = localHostName();
    m_status.pid = static_cast<std::int64_t>(::getpid());
    m_status.totalSteps = totalSteps;
}

RunStatusWriter::~RunStatusWriter()
{
    if (m_started)
        ended(RunState::Failed, m_status.step, "the trainer ended with an error (see its output)");
}

void RunStatusWriter::training(std::int64_t step)
{
    m_started = true;
    m_status.state = RunState::Training;
    m_status.step = step;
    write();
}

void RunStatusWriter::paused(std::int64_t step)
{
    m_status.state = RunState::Paused;
    m_status.step = step;
    write();
}

void RunStatusWriter::ended(RunState state, std::int64_t step, const std::string& message)
{
    m_started = false;
    m_status.state = state;
    m_status.step = step;
    m_status.message = message;
    write();
}

void RunStatusWriter::progress(std::int64_t step)
{
    if (!m_started)
        return;
    m_status.step = step;
    if (std::chrono::steady_clock::now() - m_written >= m_every)
        write();
}

void RunStatusWriter::write()
{
    m_written = std::chrono::steady_clock::now();
    if (m_directory.empty())
        return;
    m_status.updated = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    try {
        writeRunStatus(m_directory, m_status);
    } catch (const std::exception&) {
        // A full disk or a vanished directory: training goes on without a heartbeat.
    }
}

}  // namespace widelab
