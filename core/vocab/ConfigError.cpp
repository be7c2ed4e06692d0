#include "ConfigError.h"

namespace widelab {
namespace {

std::string joinIssues(const std::vector<ConfigIssue>& issues)
{
    std::string text;
    for (const auto& issue : issues) {
        if (!text.empty())
            text += '\n';
        text += issue.text();
    }
    return text;
}

}  // namespace

ConfigError::ConfigError(std::vector<ConfigIssue> issues)
    : std::runtime_error(joinIssues(issues)), m_issues(std::move(issues))
{
}

}  // namespace widelab
