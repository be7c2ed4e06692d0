#include "LogLine.h"

#include <QRegularExpression>

namespace widelab {

QStringList logLevels()
{
    return {QStringLiteral("trace"), QStringLiteral("debug"), QStringLiteral("info"),
            QStringLiteral("warning"), QStringLiteral("error"), QStringLiteral("critical")};
}

QString normalizedLogLevel(const QString& level)
{
    const QString l = level.trimmed().toLower();
    if (l == QLatin1String("warn"))
        return QStringLiteral("warning");
    if (l == QLatin1String("err"))
        return QStringLiteral("error");
    if (l == QLatin1String("crit") || l == QLatin1String("fatal"))
        return QStringLiteral("critical");
    if (l == QLatin1String("trc"))
        return QStringLiteral("trace");
    if (l == QLatin1String("dbg"))
        return QStringLiteral("debug");
    if (logLevels().contains(l))
        return l;
    return QStringLiteral("info");
}

int logLevelRank(const QString& level) { return static_cast<int>(logLevels().indexOf(normalizedLogLevel(level))); }

std::optional<LogLine> parseSpdlogLine(const QString& input)
{
    // Colour codes, should a console sink's output have been saved.
    static const QRegularExpression ansi(QStringLiteral("\x1b\\[[0-9;]*m"));
    static const QRegularExpression pattern(QStringLiteral(
        R"(^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\] (?:\[([^\]]*)\] )?\[(trace|debug|info|warning|warn|error|err|critical|off)\] ?(.*)$)"),
        QRegularExpression::CaseInsensitiveOption);
    QString line = input;
    line.remove(ansi);
    while (line.endsWith(QLatin1Char('\n')) || line.endsWith(QLatin1Char('\r')))
        line.chop(1);
    const QRegularExpressionMatch match = pattern.match(line);
    if (!match.hasMatch())
        return std::nullopt;
    LogLine result;
    result.time = match.captured(1);
    result.logger = match.captured(2);
    result.level = normalizedLogLevel(match.captured(3));
    result.text = match.captured(4);
    return result;
}

}  // namespace widelab
