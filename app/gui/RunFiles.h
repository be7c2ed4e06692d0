// defines: runFile: a run directory's file as the app names it, from the core's
// layout (run/RunLayout.h), so that the app spells no file name itself
#pragma once

#include "run/RunLayout.h"

#include <QDir>
#include <QString>

#include <string_view>

namespace widelab {

// runFile(dir, runlayout::kMetrics): DIR/metrics.jsonl
inline QString runFile(const QString& directory, std::string_view name)
{
    return QDir(directory).filePath(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())));
}

}  // namespace widelab
