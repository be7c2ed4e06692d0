#include "RunLog.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

namespace widelab {

struct RunLog::Sink {
    std::shared_ptr<spdlog::logger> logger;
};

RunLog::RunLog(const std::filesystem::path& file) : m_sink(std::make_unique<Sink>())
{
    m_sink->logger = file.empty() ? std::make_shared<spdlog::logger>("run")
                                  : std::make_shared<spdlog::logger>(
                                        "run", std::make_shared<spdlog::sinks::basic_file_sink_mt>(file.string()));
    m_sink->logger->flush_on(spdlog::level::info);
}

RunLog::~RunLog() = default;

void RunLog::write(const std::string& level, const std::string& text)
{
    m_sink->logger->log(spdlog::level::from_str(level), text);
}

}  // namespace widelab
