#include "StudiesPage.h"

#include "CurveMath.h"
#include "RunRecord.h"
#include "SchemaFields.h"
#include "StudiesView.h"
#include "StudyBuilderDialog.h"
#include "StudyData.h"
#include "study/BuiltinStudies.h"
#include "study/StudyDocument.h"
#include "study/StudyResults.h"

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
        return record.document == study.toJson() && record.overrides == overrides.toJson();
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

    connect(&m_controller, &StudyController::memberStarted, this, [this](const QString& member, bool resumed) {
        m_running.insert(member, {0, 0});
        if (resumed)
            m_secondsOffset.insert(member, -1.0);  // reloaded from its run at its first snapshot
        Q_EMIT message(QStringLiteral("info"), tr("Study: %1 %2").arg(member, resumed ? tr("continues") : tr("starts")));
        refresh();
    });
    connect(&m_controller, &StudyController::memberProgress, this, &StudiesPage::onMemberProgress);
    connect(&m_controller, &StudyController::memberEvaluation, this,
            [this](const QString& member, qint64 step, double loss, double accuracy) {
                const double seconds = m_secondsOffset.value(member, 0.0);
                m_view->appendCurve(member, QStringLiteral("validation_loss"), {{double(step), seconds, loss}});
                m_view->appendCurve(member, QStringLiteral("validation_accuracy"), {{double(step), seconds, accuracy}});
            });
    connect(&m_controller, &StudyController::memberMessage, this,
            [this](const QString& member, const QString& level, const QString& text) {
                if (level != QLatin1String("info"))
                    Q_EMIT message(level, tr("Study member %1: %2").arg(member, text));
            });
    connect(&m_controller, &StudyController::memberFinished, this,
            [this](const QString& member, const QString& status, const QString& error) {
                const bool ran = m_running.remove(member) > 0;
                if (status == QLatin1String("failed"))
                    Q_EMIT message(QStringLiteral("warning"), tr("Study: %1 failed: %2").arg(member, error));
                else if (ran)
                    Q_EMIT message(QStringLiteral("info"), tr("Study: %1 %2").arg(member, status));
                refresh();
            });
    connect(&m_controller, &StudyController::progress, this, [this](int done, int total, int running, double left) {
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
    StudyData data;
    QString error;
    if (!loadStudyData(directory, data, &error)) {
        Q_EMIT problem(tr("Cannot Open Study"),
                       tr("%1 is not a study WideLab can read:\n%2").arg(QDir::toNativeSeparators(directory), error));
        return false;
    }
    m_directory = directory;
    m_view->clearCurves();
    m_view->setStudy(data);
    loadMemberCurves(data);
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
                       tr("Study \"%1\": %2 of %3 members done; Continue in the Studies tab (Ctrl+F5) trains the rest.")
                           .arg(data.title)
                           .arg(done)
                           .arg(data.members.size()));
}

void StudiesPage::loadMemberCurves(const StudyData& data)
{
    for (const StudyMemberRow& member : data.members) {
        if (!QFileInfo(member.directory).isDir())
            continue;
        RunRecord record;
        QString error;
        if (!loadRunRecord(member.directory, record, &error))
            continue;
        m_view->clearCurve(member.name);
        for (auto it = record.curves.constBegin(); it != record.curves.constEnd(); ++it)
            m_view->appendCurve(member.name, it.key(), it.value());
        m_secondsOffset.insert(member.name, record.lastSeconds());
    }
}

void StudiesPage::onMemberProgress(const QString& member, qint64 step, qint64 total, double seconds, double loss,
                                   double accuracy)
{
    const bool first = m_running.value(member).second == 0;
    m_running.insert(member, {step, total});
    if (first && m_secondsOffset.value(member, 0.0) < 0.0) {
        // A continued member: its run now holds what it kept before its checkpoint.
        StudyData one;
        for (const StudyMemberRow& row : m_view->study().members)
            if (row.name == member)
                one.members.push_back(row);
        m_secondsOffset.insert(member, 0.0);
        loadMemberCurves(one);
        m_secondsOffset.insert(member, m_secondsOffset.value(member) - seconds);
        return;
    }
    const double at = m_secondsOffset.value(member, 0.0) + seconds;
    m_view->appendCurve(member, QStringLiteral("loss"), {{double(step), at, loss}});
    m_view->appendCurve(member, QStringLiteral("accuracy"), {{double(step), at, accuracy}});
    if (first)
        refresh();
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
    // The same study with the same overrides continues where it is; anything else gets a folder of its own.
    const QString home = QDir(m_studiesRoot).filePath(folderName(options.builtin));
    job.directory = !QFileInfo::exists(home) || (isStudyDirectory(home) && sameStudy(home, job.documentJson, job.steps, job.seeds))
                        ? home
                        : freeDirectory(options.builtin);
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
    m_refreshTimer.stop();
    if (job.directory != m_directory) {
        m_view->clearCurves();
        StudyData placeholder;
        placeholder.directory = job.directory;
        placeholder.title = tr("Starting...");
        m_view->setStudy(placeholder);
    }
    m_directory = job.directory;
    const int cores = std::max(1, QThread::idealThreadCount());
    if (job.jobs > cores)
        Q_EMIT message(QStringLiteral("warning"),
                       tr("Study: %1 members at once on %2 cores: each gets less than a core").arg(job.jobs).arg(cores));
    m_controller.start(job);
    m_view->setRunning(true);
    m_view->setProgress(0, 0, tr("starting..."));
    QSettings().setValue(kLastStudy, job.directory);
    Q_EMIT message(QStringLiteral("info"), tr("Study in %1").arg(QDir::toNativeSeparators(job.directory)));
    Q_EMIT runningChanged(true);
    if (isStudyDirectory(job.directory)) {
        refresh();
        loadMemberCurves(m_view->study());
    }
    return true;
}

void StudiesPage::stop()
{
    if (!m_controller.busy())
        return;
    m_controller.stop();
    m_view->setProgress(m_view->study().count(QStringLiteral("completed")) + m_view->study().count(QStringLiteral("failed")),
                        static_cast<int>(m_view->study().members.size()),
                        tr("stopping: the running members save a checkpoint..."));
}

void StudiesPage::onFinished(const QString& outcome, int failed, const QString& text)
{
    m_running.clear();
    m_view->setRunning(false);
    if (outcome == QLatin1String("refused")) {
        Q_EMIT problem(tr("Cannot Start Study"), text);
        Q_EMIT message(QStringLiteral("error"), tr("Study: %1").arg(text));
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
