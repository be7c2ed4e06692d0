// defines: the helpers the ModelConfig tests share (widelab::modelconfigtest): issues joined and
// looked up by key, a bare model read, a document's ConfigError, a shipped preset loaded
#pragma once

#include "TestSupport.h"
#include "vocab/ConfigError.h"
#include "config/JsonSection.h"
#include "vocab/JsonText.h"
#include "config/ModelConfig.h"
#include "model/ParameterCount.h"
#include "config/Presets.h"

#include <QtTest>

#include <set>

#include <algorithm>
#include <fstream>
#include <optional>

namespace widelab::modelconfigtest {

inline QString q(const std::string& text) { return QString::fromStdString(text); }

inline QString joined(const std::vector<ConfigIssue>& issues)
{
    QStringList lines;
    for (const auto& issue : issues)
        lines << q(issue.text());
    return lines.join(QStringLiteral(" | "));
}

// Reads a bare `model` object.
inline ModelConfig readModel(const std::string& json, std::vector<ConfigIssue>& issues)
{
    return ModelConfig::fromJson(nlohmann::json::parse(json), issues);
}

// The ConfigError a document raises; nullopt when it parses cleanly. Any other
// exception escapes and fails the test.
inline std::optional<ConfigError> documentError(const std::string& text, const std::string& origin = "")
{
    try {
        parseModelDocument(text, origin);
    } catch (const ConfigError& error) {
        return error;
    }
    return std::nullopt;
}

inline bool contains(const std::vector<std::string>& names, const std::string& name)
{
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace widelab::modelconfigtest
