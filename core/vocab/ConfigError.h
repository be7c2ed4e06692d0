// defines: ConfigIssue (one problem with one key), ConfigError (all problems of a document)
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace widelab {

struct ConfigIssue {
    std::string key;     // full dotted key, e.g. "model.top_k"; empty for the document itself
    std::string reason;  // e.g. "3 exceeds model.experts: 2"

    std::string text() const { return key.empty() ? reason : key + ": " + reason; }
};

class ConfigError : public std::runtime_error {
public:
    explicit ConfigError(std::vector<ConfigIssue> issues);

    const std::vector<ConfigIssue>& issues() const { return m_issues; }

private:
    std::vector<ConfigIssue> m_issues;
};

}  // namespace widelab
