#include "FollowReader.h"

#include "run/RunLayout.h"

#include <sys/stat.h>

namespace widelab {
namespace {

// A few bytes that change whenever status.json is replaced or rewritten.
QByteArray stampOf(const std::filesystem::path& file)
{
    struct stat info {};
    if (::stat(file.c_str(), &info) != 0)
        return QByteArrayLiteral("missing");
    return QByteArray::number(static_cast<qulonglong>(info.st_ino)) + ':' + QByteArray::number(static_cast<qlonglong>(info.st_size))
           + ':' + QByteArray::number(static_cast<qlonglong>(info.st_mtim.tv_sec)) + '.'
           + QByteArray::number(static_cast<qlonglong>(info.st_mtim.tv_nsec));
}

}  // namespace

FollowReader::FollowReader(const QString& directory, LineTail metrics, LineTail log)
    : m_directory(directory.toStdString()), m_metrics(std::move(metrics)), m_log(std::move(log))
{
    if (m_metrics.file().empty())
        m_metrics = LineTail(runlayout::metricsFile(m_directory));
    if (m_log.file().empty())
        m_log = LineTail(runlayout::logFile(m_directory));
}

void FollowReader::lookAtStatus(FollowUpdate& update)
{
    const QByteArray stamp = stampOf(runlayout::statusFile(m_directory));
    if (stamp == m_statusStamp)
        return;
    m_statusStamp = stamp;
    update.statusChanged = true;
    std::string error;
    update.status = readRunStatus(m_directory, &error);
    update.statusError = QString::fromStdString(error);
}

FollowUpdate FollowReader::look(bool tailFiles)
{
    FollowUpdate update;
    // The status first: lines written before a final status are then read in this same look.
    lookAtStatus(update);
    if (!tailFiles)
        return update;
    const LineTail::Update metrics = m_metrics.poll();
    update.metricsRestarted = metrics.restarted;
    update.metrics.reserve(static_cast<qsizetype>(metrics.lines.size()));
    for (std::size_t i = 0; i < metrics.lines.size(); ++i) {
        update.metrics.append(QByteArray::fromStdString(metrics.lines[i]));
        update.metricsLineNumbers.append(static_cast<qint64>(metrics.lineNumbers[i]));
    }
    const LineTail::Update log = m_log.poll();
    update.logRestarted = log.restarted;
    for (const std::string& line : log.lines)
        update.log.append(QString::fromUtf8(line));  // invalid UTF-8 becomes U+FFFD
    update.more = metrics.more || log.more;
    for (const std::string* error : {&metrics.error, &log.error})
        if (!error->empty())
            update.errors.append(QString::fromStdString(*error));
    return update;
}

}  // namespace widelab
