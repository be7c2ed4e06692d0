// defines: FollowUpdate, FollowReader: one look at a run directory that another
// process writes: new complete lines of metrics.jsonl and log.txt, and
// status.json when it changed. Runs on RunFollower's thread, never the GUI's.
#pragma once

#include "run/LineTail.h"
#include "run/RunStatus.h"

#include <QByteArray>
#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <optional>

namespace widelab {

struct FollowUpdate {
    QList<QByteArray> metrics;      // complete lines of metrics.jsonl, in order
    QList<qint64> metricsLineNumbers;  // each one's line number in the file, for warnings
    bool metricsRestarted = false;  // metrics.jsonl was replaced or trimmed: `metrics` starts it again
    QStringList log;                // complete lines of log.txt
    bool logRestarted = false;
    bool more = false;              // a file has more to read: look again at once
    bool statusChanged = false;     // status.json was (re)read: `status` and `statusError` hold it
    std::optional<RunStatus> status;
    QString statusError;            // damaged status.json: the file and the reason
    QStringList errors;             // files that exist but cannot be read
};

class FollowReader {
public:
    // `metrics` and `log` continue where the window's own reading of the files
    // stopped (LineTail at offset 0 to read them from the start).
    FollowReader(const QString& directory, LineTail metrics, LineTail log);

    // One look: status.json when its stat changed, and, with `tailFiles`, what
    // the two files gained. A look at files that did not change is three stats.
    FollowUpdate look(bool tailFiles);

private:
    void lookAtStatus(FollowUpdate& update);

    std::filesystem::path m_directory;
    LineTail m_metrics, m_log;
    QByteArray m_statusStamp;  // inode, size and time of status.json as last read; empty: not read
};

}  // namespace widelab

Q_DECLARE_METATYPE(widelab::FollowUpdate)
