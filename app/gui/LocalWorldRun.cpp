#include "LocalWorldRun.h"

#include "configuration/LogLine.h"
#include "RunFollower.h"
#include "vocab/MetricsCodec.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTimer>

namespace widelab {
namespace {

constexpr qsizetype kKeptOutput = 8192;

void keepTail(QByteArray& kept, const QByteArray& more)
{
    kept += more;
    if (kept.size() > kKeptOutput)
        kept = kept.right(kKeptOutput);
}

QString lastLine(const QByteArray& output)
{
    const QStringList lines = QString::fromUtf8(output).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    return lines.isEmpty() ? QString() : lines.last().trimmed();
}

}  // namespace

LocalWorldRun::LocalWorldRun(QObject* parent) : RunEvents(parent)
{
    connect(&m_process, &QProcess::readyReadStandardOutput, this,
            [this] { keepTail(m_out, m_process.readAllStandardOutput()); });
    connect(&m_process, &QProcess::readyReadStandardError, this,
            [this] { keepTail(m_err, m_process.readAllStandardError()); });
    connect(&m_process, &QProcess::finished, this, &LocalWorldRun::onExited);
    connect(&m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart)
            onExited(127, QProcess::CrashExit);
    });
}

LocalWorldRun::~LocalWorldRun()
{
    if (m_process.state() == QProcess::NotRunning)
        return;
    disconnect(&m_process, nullptr, this, nullptr);
    m_process.terminate();
    if (!m_process.waitForFinished(120000))
        m_process.kill();
    m_process.waitForFinished(5000);
}

QString LocalWorldRun::cliProgram()
{
    const QString given = qEnvironmentVariable("WIDELAB_CLI");
    if (!given.isEmpty())
        return QFileInfo(given).isExecutable() ? given : QString();
    const QDir here(QCoreApplication::applicationDirPath());
    for (const QString& candidate : {here.filePath(QStringLiteral("widelab-cli")),
                                     here.filePath(QStringLiteral("../cli/widelab-cli")),
                                     here.filePath(QStringLiteral("../app/cli/widelab-cli"))})
        if (QFileInfo(candidate).isExecutable())
            return QFileInfo(candidate).canonicalFilePath();
    return {};
}

bool LocalWorldRun::start(const TrainingRequest& request, QString* error)
{
    const QString program = cliProgram();
    if (program.isEmpty()) {
        *error = tr("A run of several processes is trained by widelab-cli, which is not beside this program "
                    "(%1); set WIDELAB_CLI to its path, or train with one process.")
                     .arg(QDir::toNativeSeparators(QCoreApplication::applicationDirPath()));
        return false;
    }
    m_document.setFileTemplate(QDir::temp().filePath(QStringLiteral("widelab-run-XXXXXX.json")));
    if (!m_document.open() || m_document.write(request.documentJson.toUtf8()) != request.documentJson.toUtf8().size()
        || !m_document.flush()) {
        *error = tr("The run document cannot be written for widelab-cli: %1").arg(m_document.errorString());
        return false;
    }
    const QJsonObject document = QJsonDocument::fromJson(request.documentJson.toUtf8()).object();
    const QJsonObject train = document.value(QStringLiteral("train")).toObject();
    m_processes = train.value(QStringLiteral("processes")).toInteger(1);
    m_device = train.value(QStringLiteral("device")).toString(QStringLiteral("auto"));
    m_name = document.value(QStringLiteral("name")).toString();
    m_directory = request.directory;
    m_resume = request.resume;
    m_launchedAt = QDateTime::currentSecsSinceEpoch();

    m_follower = std::make_unique<RunFollower>(m_directory);
    m_follower->setInterval(500);
    connect(m_follower.get(), &RunFollower::metricsLines, this,
            [this](const QList<QByteArray>& lines, const QList<qint64>&, bool) { onMetrics(lines); });
    connect(m_follower.get(), &RunFollower::logLines, this,
            [this](const QStringList& lines, bool) { onLog(lines); });
    connect(m_follower.get(), &RunFollower::stateChanged, this, &LocalWorldRun::onStatus);

    QStringList args{QStringLiteral("train"), m_document.fileName(), QStringLiteral("--out"), m_directory};
    if (request.resume)
        args << QStringLiteral("--resume");
    if (request.force)
        args << QStringLiteral("--force");
    m_process.start(program, args);
    return true;
}

void LocalWorldRun::stop()
{
    if (m_process.state() != QProcess::NotRunning)
        m_process.terminate();  // SIGTERM: widelab-cli passes it on to every rank
}

// The run has begun once status.json says training, written by this session.
void LocalWorldRun::onStatus()
{
    if (m_started || !m_follower || !m_follower->status())
        return;
    const RunStatus& status = *m_follower->status();
    if (status.state != RunState::Training || status.updated + 1 < m_launchedAt)
        return;
    m_started = true;
    m_startStep = status.step;
    RunStarted run;
    run.directory = m_directory;
    run.name = m_name;
    run.device = tr("%1 processes, %2").arg(m_processes).arg(m_device);
    run.step = status.step;
    run.totalSteps = status.totalSteps;
    run.log = std::exchange(m_pendingLog, {});
    Q_EMIT started(run);
    onMetrics(std::exchange(m_pendingMetrics, {}));
}

void LocalWorldRun::onMetrics(const QList<QByteArray>& lines)
{
    if (!m_started) {
        m_pendingMetrics += lines;
        return;
    }
    for (const QByteArray& line : lines) {
        std::string reason;
        std::optional<MetricsRecord> record = decodeMetricsLine(std::string_view(line.constData(), line.size()), &reason);
        // A resumed run's earlier lines are the window's already.
        if (!record || (m_resume && record->step <= m_startStep) || record->type == MetricsRecord::Type::Other)
            continue;
        Q_EMIT this->record(*record);
    }
}

void LocalWorldRun::onLog(const QStringList& lines)
{
    if (!m_started) {
        m_pendingLog += lines;
        return;
    }
    for (const QString& line : lines) {
        const std::optional<LogLine> parsed = parseSpdlogLine(line);
        Q_EMIT message(parsed ? parsed->level : QStringLiteral("info"), parsed ? parsed->text : line);
    }
}

void LocalWorldRun::onExited(int code, QProcess::ExitStatus status)
{
    if (!m_outcome.isEmpty())
        return;
    keepTail(m_out, m_process.readAllStandardOutput());
    keepTail(m_err, m_process.readAllStandardError());
    if (status == QProcess::NormalExit && code == 0) {
        m_summary = lastLine(m_out);
        m_outcome = m_summary.startsWith(QLatin1String("stopped")) ? QStringLiteral("stopped") : QStringLiteral("completed");
    } else {
        m_outcome = QStringLiteral("failed");
        m_summary = QString::fromUtf8(m_err).trimmed();
        if (m_summary.isEmpty())
            m_summary = status == QProcess::CrashExit ? tr("widelab-cli could not run or was killed (%1)").arg(m_process.errorString())
                                                      : tr("widelab-cli exited with status %1").arg(code);
    }
    // The last lines written before the processes ended are read first.
    if (m_follower)
        m_follower->setInterval(100);
    QTimer::singleShot(m_follower ? 600 : 0, this, &LocalWorldRun::end);
}

void LocalWorldRun::end()
{
    m_follower.reset();
    Q_EMIT finished(m_outcome, m_summary);
}

}  // namespace widelab
