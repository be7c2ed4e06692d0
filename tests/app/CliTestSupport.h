// defines: what the widelab-cli tests share (widelab::clitest): a command run through runCli with its
// exit code and output, files written for a test, grouped numbers read back, and a text's lines
#pragma once

#include "TestSupport.h"
#include "Commands.h"
#include "TextTable.h"
#include "config/ConfigSchema.h"
#include "config/ModelConfig.h"
#include "config/Presets.h"
#include "config/ResourceFolder.h"
#include "study/BuiltinStudies.h"

#include <QCryptographicHash>
#include <QtTest>

#include <QDir>
#include <QProcess>

#include <torch/cuda.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <sys/stat.h>

namespace widelab::clitest {

struct CliResult {
    int code = -1;
    QString out;
    QString err;
};

inline CliResult cli(const QStringList& args)
{
    std::vector<std::string> list;
    for (const auto& arg : args)
        list.push_back(arg.toStdString());
    std::ostringstream out, err;
    CliResult result;
    result.code = runCli(list, out, err);
    result.out = QString::fromStdString(out.str());
    result.err = QString::fromStdString(err.str());
    return result;
}

inline QString q(const std::string& text) { return QString::fromStdString(text); }

// Writes `text` to NAME in `directory` and returns the path.
inline QString writeFile(const QTemporaryDir& directory, const QString& name, const std::string& text)
{
    const QString path = directory.filePath(name);
    std::ofstream(path.toStdString(), std::ios::binary) << text;
    return path;
}

// Lines of a text, without the empty ones.
inline QStringList lines(const QString& text) { return text.split(QLatin1Char('\n'), Qt::SkipEmptyParts); }

inline QString lineStartingWith(const QString& text, const QString& start)
{
    for (const auto& line : lines(text))
        if (line.startsWith(start))
            return line;
    return {};
}

}  // namespace widelab::clitest
