// defines: LogLine, parseSpdlogLine, normalizedLogLevel, logLevelRank: one line of a
// run's log, read from spdlog's default pattern, and the order of its levels
#pragma once

#include <QString>
#include <QStringList>

#include <optional>

namespace widelab {

struct LogLine {
    QString time;    // "2026-11-22 05:12:03.123"; empty when unknown
    QString logger;  // "run"; empty when the line names none
    QString level;   // normalised: trace, debug, info, warning, error, critical
    QString text;
};

// Reads spdlog's default pattern "[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v"
// ("[2026-11-22 05:12:03.123] [run] [info] text"); the logger part is optional,
// as spdlog leaves it out for an unnamed logger. nullopt for any other line
// (the continuation of a multi-line message, say).
std::optional<LogLine> parseSpdlogLine(const QString& line);

// "warn" -> "warning", "err" -> "error", "crit" -> "critical", any case;
// anything unknown -> "info".
QString normalizedLogLevel(const QString& level);

// 0 (trace) ... 5 (critical), for "show this level and above".
int logLevelRank(const QString& level);

// The normalised levels in rank order.
QStringList logLevels();

}  // namespace widelab
