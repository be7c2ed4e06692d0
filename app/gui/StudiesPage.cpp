#include "StudiesPage.h"

#include "curves/CurveMath.h"
#include "RunRecord.h"
#include "SchemaFields.h"
#include "studies/StudiesView.h"
#include "studies/StudyBuilderDialog.h"
#include "StudyData.h"
#include "study/BuiltinStudies.h"
#include "study/StudyDocument.h"
#include "study/StudyResults.h"
#include "study/StudyRunner.h"
#include "vocab/Curves.h"

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSettings>
#include <QThread>

namespace widelab {
namespace {

const QString kLastStudy = QStringLiteral("studies/last");

// A folder name for a study: its name in lower case, runs of other characters as one '-'.
QString folderName(const QString& name)
{
    QString folder = name.toLower();
    folder.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
    folder.remove(QRegularExpression(QStringLiteral("^-+|-+$")));
    return folder.isEmpty() ? QStringLiteral("study") : folder;
}

// The study in `directory` is `documentJson` with these overrides: Start continues it there.
bool sameStudy(const QString& directory, const QByteArray& documentJson, int steps, int seeds)
{
    try {
        const StudyRecord record = readStudyRecord(directory.toStdString());
        const StudyDocument study = parseStudyDocument(documentJson.toStdString());
        StudyOverrides overrides;
        if (steps > 0)
            overrides.steps = steps;
        if (seeds > 0)
            overrides.seeds = seeds;
        return studyDifferences(record.document, study.toJson()).empty() && record.overrides == overrides.toJson();
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace

StudiesPage::StudiesPage(StudiesView* view, QString studiesRoot, QWidget* dialogParent)
    : QObject(view), m_view(view), m_studiesRoot(std::move(studiesRoot)), m_dialogParent(dialogParent)
{
    m_view->setBuiltins(builtinStudies());
    m_view->selectBuiltin(QStringLiteral("wide-attention-aspect-ratio"));  // the comparison WideLab is named for
    m_view->setDefaultJobs(1);
    connect(m_view, &StudiesView::startRequested, this, [this](const StudyStartOptions& options) { startBuiltin(options); });
    connect(m_view, &StudiesView::continueRequested, this, [this] { continueStudy(m_view->startOptions().jobs); });
    connect(m_view, &StudiesView::stopRequested, this, &StudiesPage::stop);
    connect(m_view, &StudiesView::openRequested, this, [this] {
        const QString directory = QFileDialog::getExistingDirectory(
            m_dialogParent, tr("Open Study"), m_directory.isEmpty() ? m_studiesRoot : QFileInfo(m_directory).path());
        if (!directory.isEmpty())
            openStudy(directory);
    });
    connect(m_view, &StudiesView::memberActivated, this, &StudiesPage::openRunRequested);

    connect(&m_controller, &StudyController::memberStarted, this, &StudiesPage::onMemberStarted);
    connect(&m_controller, &StudyController::memberProgress, this, &StudiesPage::onMemberProgress);
    connect(&m_controller, &StudyController::memberEvaluation, this,
            [this](const QString& member, const EvaluationResult& result) {
                const auto step = double(result.step);
                if (step <= m_loadedUntil.value(member, -1.0))
                    return;  // read from its run already
                const double seconds = m_lastSeconds.value(member, 0.0);
                m_view->appendCurve(member, QLatin1String(curve::kValidationLoss), {{step, seconds, result.loss}});
                m_view->appendCurve(member, QLatin1String(curve::kValidationAccuracy), {{step, seconds, result.accuracy}});
                if (result.translated > 0)
                    m_view->appendCurve(member, QLatin1String(curve::kValidationBleu), {{step, seconds, result.bleu}});
            });
    connect(&m_controller, &StudyController::memberMessage, this,
            [this](const QString& member, const QString& level, const QString& text) {
                if (level != QLatin1String("info"))
                    Q_EMIT message(level, tr("Study member %1: %2").arg(member, text));
            });
    connect(&m_controller, &StudyController::memberFinished, this,
            [this](const QString& member, const QString& status, const QString& error) {
                m_running.remove(member);
                if (status == QLatin1String("failed"))
                    Q_EMIT message(QStringLiteral("warning"), tr("Study: %1 failed: %2").arg(member, error));
                else
                    Q_EMIT message(QStringLiteral("info"), tr("Study: %1 %2").arg(member, status));
                refresh();
            });
    connect(&m_controller, &StudyController::memberSkipped, this,
            [this](const QString& member, const QString& status, const QString& error) {
                Q_EMIT message(QStringLiteral("info"),
                               error.isEmpty() ? tr("Study: %1 %2 before").arg(member, status)
                                               : tr("Study: %1 %2 before: %3").arg(member, status, error));
            });
    connect(&m_controller, &StudyController::progress, this, [this](int done, int total, int running, double left) {
        if (m_controller.stopping())
            return;  // "stopping" stays until it has stopped
        QString text = tr("%1 of %2 done, %3 running, %4 left").arg(done).arg(total).arg(running).arg(total - done - running);
        if (left >= 0)
            text += tr(", about %1 to go").arg(curvemath::formatDuration(left));
        m_view->setProgress(done, total, text);
    });
    connect(&m_controller, &StudyController::finished, this, &StudiesPage::onFinished);

    // A study another process runs (widelab-cli study) fills its table as its members finish.
    m_refreshTimer.setInterval(5000);
    connect(&m_refreshTimer, &QTimer::timeout, this, [this] {
        if (!m_controller.busy())
            refresh();
    });
}

bool StudiesPage::openStudy(const QString& directory)
{
    if (m_controller.busy() && QDir(directory) != QDir(m_controller.directory())) {
        Q_EMIT problem(tr("A Study Is Running"),
                       tr("The study in %1 is running. Stop it before opening another.")
                           .arg(QDir::toNativeSeparators(m_controller.directory())));
        return false;
    }
    if (m_controller.busy()) {
        refresh();  // it is the study shown, live
        return true;
    }
    StudyData data;
    QString error;
    if (!loadStudyData(directory, data, &error)) {
        Q_EMIT problem(tr("Cannot Open Study"),
                       tr("%1 is not a study WideLab can read:\n%2").arg(QDir::toNativeSeparators(directory), error));
        return false;
    }
    show(directory);
    m_view->setStudy(data);
    for (const StudyMemberRow& member : data.members)
        loadMemberCurves(member);
    QSettings().setValue(kLastStudy, directory);
    const int done = data.count(QStringLiteral("completed")) + data.count(QStringLiteral("failed"));
    if (done < data.members.size())
        m_refreshTimer.start();
    else
        m_refreshTimer.stop();
    return true;
}

void StudiesPage::reopenLast()
{
    const QString last = QSettings().value(kLastStudy).toString();
    if (last.isEmpty() || !isStudyDirectory(last))
        return;
    if (!openStudy(last))
        return;
    const StudyData& data = m_view->study();
    const int done = data.count(QStringLiteral("completed")) + data.count(QStringLiteral("failed"));
    if (done < data.members.size())
        Q_EMIT message(QStringLiteral("info"),
                       tr("Study \"%1\": %2 of %3 members done; Continue in the Studies tab (Ctrl+Shift+F5) trains the rest.")
                           .arg(data.title)
                           .arg(done)
                           .arg(data.members.size()));
}

void StudiesPage::show(const QString& directory)
{
    if (directory != m_directory || directory.isEmpty()) {
        m_view->clearCurves();
        m_timeBefore.clear();
        m_lastSeconds.clear();
        m_loadedUntil.clear();
        m_reload.clear();
    }
    m_directory = directory;
}

double StudiesPage::loadMemberCurves(const StudyMemberRow& member)
{
    m_view->clearCurve(member.name);
    if (!QFileInfo(member.directory).isDir())
        return 0.0;
    RunRecord record;
    QString error;
    if (!loadRunRecord(member.directory, record, &error))
        return 0.0;
    for (auto it = record.curves.constBegin(); it != record.curves.constEnd(); ++it)
        m_view->appendCurve(member.name, it.key(), it.value());
    m_loadedUntil.insert(member.name, record.lastStep());
    return record.lastSeconds();
}

void StudiesPage::onMemberStarted(const QString& member, bool resumed)
{
    m_running.insert(member, {0, 0});
    m_timeBefore.insert(member, 0.0);
    m_lastSeconds.insert(member, 0.0);
    m_loadedUntil.remove(member);
    // A member that starts afresh draws from nothing (a run folder left by an
    // earlier start without a checkpoint is begun again); one that continues keeps
    // what its run kept, read at its first snapshot, once its run has been cut back
    // to the checkpoint it continues from.
    if (resumed)
        m_reload.insert(member);
    else
        m_view->clearCurve(member);
    Q_EMIT message(QStringLiteral("info"), tr("Study: %1 %2").arg(member, resumed ? tr("continues") : tr("starts")));
    refresh();
}

void StudiesPage::onMemberProgress(const QString& member, qint64 step, qint64 total, double seconds, double loss,
                                   double accuracy)
{
    m_running.insert(member, {step, total});
    // Read from its run already (the study's thread runs ahead of this one's queue).
    if (double(step) <= m_loadedUntil.value(member, -1.0))
        return;
    if (m_reload.remove(member)) {
        for (const StudyMemberRow& row : m_view->study().members)
            if (row.name == member)
                m_timeBefore.insert(member, std::max(0.0, loadMemberCurves(row) - seconds));
        m_lastSeconds.insert(member, m_timeBefore.value(member) + seconds);
        // The run's file holds this snapshot's line when it was written first; it is
        // drawn from there or not at all rather than twice.
        m_view->setMemberProgress(member, step, total);
        return;
    }
    const double at = m_timeBefore.value(member, 0.0) + seconds;
    m_lastSeconds.insert(member, at);
    m_view->appendCurve(member, QLatin1String(curve::kLoss), {{double(step), at, loss}});
    m_view->appendCurve(member, QLatin1String(curve::kAccuracy), {{double(step), at, accuracy}});
    m_view->setMemberProgress(member, step, total);
}

void StudiesPage::refresh()
{
    if (m_directory.isEmpty() || !isStudyDirectory(m_directory))
        return;
    StudyData data;
    QString error;
    if (!loadStudyData(m_directory, data, &error)) {
        Q_EMIT message(QStringLiteral("warning"), tr("Study: %1").arg(error));
        return;
    }
    for (StudyMemberRow& member : data.members) {
        const auto it = m_running.constFind(member.name);
        if (it == m_running.constEnd())
            continue;
        member.status = QStringLiteral("running");
        member.step = it->first;
        member.totalSteps = it->second;
    }
    m_view->setStudy(data);
    const int done = data.count(QStringLiteral("completed")) + data.count(QStringLiteral("failed"));
    if (done == data.members.size())
        m_refreshTimer.stop();
}

QString StudiesPage::freeDirectory(const QString& name) const
{
    const QString base = QDir(m_studiesRoot).filePath(folderName(name));
    QString candidate = base;
    for (int i = 2; QFileInfo::exists(candidate); ++i)
        candidate = base + QStringLiteral("-%1").arg(i);
    return candidate;
}

bool StudiesPage::startBuiltin(const StudyStartOptions& options)
{
    QFile file;
    try {
        file.setFileName(QString::fromStdString(resolveStudyPath(options.builtin.toStdString()).string()));
    } catch (const std::exception& error) {
        Q_EMIT problem(tr("Cannot Start Study"), QString::fromStdString(error.what()));
        return false;
    }
    if (!file.open(QIODevice::ReadOnly)) {
        Q_EMIT problem(tr("Cannot Start Study"), tr("Cannot read %1: %2").arg(file.fileName(), file.errorString()));
        return false;
    }
    StudyController::Job job{file.readAll(), QString(), options.steps, options.seeds, options.jobs};
    // The same study with the same overrides continues where it is (NAME, NAME-2, ...);
    // anything else gets the first free folder.
    const QString home = QDir(m_studiesRoot).filePath(folderName(options.builtin));
    QString candidate = home;
    for (int i = 2; QFileInfo::exists(candidate); ++i) {
        if (isStudyDirectory(candidate) && sameStudy(candidate, job.documentJson, job.steps, job.seeds))
            break;
        candidate = home + QStringLiteral("-%1").arg(i);
    }
    if (candidate != home && !QFileInfo::exists(candidate))
        Q_EMIT message(QStringLiteral("info"),
                       tr("Study: %1 holds this study with other settings (or another study): this one goes to %2")
                           .arg(QDir::toNativeSeparators(home), QDir::toNativeSeparators(candidate)));
    job.directory = candidate;
    return run(job);
}

bool StudiesPage::startDocument(const QJsonObject& study, int jobs)
{
    const QByteArray json = QJsonDocument(study).toJson(QJsonDocument::Compact);
    return run({json, freeDirectory(study.value(QStringLiteral("name")).toString()), 0, 0, jobs});
}

bool StudiesPage::continueStudy(int jobs)
{
    if (m_directory.isEmpty())
        return false;
    return run({QByteArray(), m_directory, 0, 0, jobs});
}

bool StudiesPage::run(const StudyController::Job& job)
{
    if (m_controller.busy()) {
        Q_EMIT problem(tr("A Study Is Running"), tr("Stop the running study before starting another."));
        return false;
    }
    if (!QDir().mkpath(QFileInfo(job.directory).path())) {
        Q_EMIT problem(tr("Cannot Start Study"),
                       tr("Cannot make the folder %1.").arg(QDir::toNativeSeparators(QFileInfo(job.directory).path())));
        return false;
    }
    m_running.clear();
    m_reload.clear();
    m_refreshTimer.stop();
    if (job.directory != m_directory) {
        show(job.directory);
        StudyData placeholder;
        placeholder.directory = job.directory;
        placeholder.title = tr("Starting...");
        m_view->setStudy(placeholder);
    }
    const int cores = std::max(1, QThread::idealThreadCount());
    if (job.jobs > cores)
        Q_EMIT message(QStringLiteral("warning"),
                       tr("Study: %1 members at once on %2 cores: each gets less than a core").arg(job.jobs).arg(cores));
    // What the members have so far, read before the study's thread writes again.
    if (isStudyDirectory(job.directory)) {
        refresh();
        for (const StudyMemberRow& member : m_view->study().members)
            loadMemberCurves(member);
    }
    m_controller.start(job);
    m_view->setRunning(true);
    m_view->setProgress(0, 0, tr("starting..."));
    QSettings().setValue(kLastStudy, job.directory);
    Q_EMIT message(QStringLiteral("info"), tr("Study in %1").arg(QDir::toNativeSeparators(job.directory)));
    Q_EMIT runningChanged(true);
    return true;
}

void StudiesPage::stop()
{
    if (!m_controller.busy())
        return;
    m_controller.stop();
    m_view->setStopping();
    m_view->setProgress(m_view->study().count(QStringLiteral("completed")) + m_view->study().count(QStringLiteral("failed")),
                        static_cast<int>(m_view->study().members.size()),
                        tr("stopping: the running members save a checkpoint..."));
}

void StudiesPage::onFinished(const QString& outcome, int failed, const QString& text)
{
    m_running.clear();
    m_reload.clear();
    m_view->setRunning(false);
    if (outcome == QLatin1String("refused")) {
        Q_EMIT problem(tr("Cannot Start Study"), text);
        Q_EMIT message(QStringLiteral("error"), tr("Study: %1").arg(text));
        if (!isStudyDirectory(m_directory)) {
            // Nothing was written: the tab shows no study rather than "Starting...".
            show(QString());
            m_view->setStudy(StudyData());
        }
    } else if (outcome == QLatin1String("failed")) {
        Q_EMIT problem(tr("The Study Stopped"), tr("%1\n\nThe running members saved a checkpoint: Continue goes on "
                                                   "from there once the cause is fixed.")
                                                    .arg(text));
        Q_EMIT message(QStringLiteral("error"), tr("Study stopped by an error: %1").arg(text));
    } else if (outcome == QLatin1String("stopped")) {
        Q_EMIT message(QStringLiteral("info"), tr("Study stopped; Continue trains the rest."));
    } else {
        Q_EMIT message(failed > 0 ? QStringLiteral("warning") : QStringLiteral("info"),
                       failed > 0 ? tr("Study finished: %1 member(s) failed (see the table)").arg(failed)
                                  : tr("Study finished"));
    }
    refresh();
    Q_EMIT runningChanged(false);
}

void StudiesPage::build(const QJsonObject& base, const QJsonObject& resolved)
{
    StudyBuilderDialog dialog(base, resolved, schemaFields(), checkStudyDocument, m_dialogParent);
    if (dialog.exec() != QDialog::Accepted)
        return;
    startDocument(dialog.study(), m_view->startOptions().jobs);
}

}  // namespace widelab
