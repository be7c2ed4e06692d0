#include "RunsWorkspace.h"

#include "ComparedRuns.h"
#include "RunRegistry.h"
#include "SchemaFields.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QMessageBox>
#include <QSettings>
#include <QThread>
#include <QTimer>

#include <set>

namespace widelab {
namespace {

const QString kChartLayouts = QStringLiteral("chartLayouts");  // settings: folder -> the tags of its added charts

QString fromUtf8(const std::string& text) { return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())); }

// "6 x 8 · 4 experts, top-2 · shared · 2 paths · linear": the settings that tell
// the papers' models apart, from a resolved document.
QString modelText(const QJsonObject& resolved)
{
    const QJsonObject model = resolved.value(QLatin1String("model")).toObject();
    const auto number = [&](const char* key) { return model.value(QLatin1String(key)).toInt(); };
    QStringList parts;
    const int decoder = resolved.value(QLatin1String("task")).toObject().value(QLatin1String("kind")).toString()
                                == QLatin1String("translation")
                            ? number("decoder_layers")
                            : 0;
    const QString depth = decoder > 0 ? QObject::tr("%1+%2").arg(number("layers")).arg(decoder)
                                      : QString::number(number("layers"));
    parts << QObject::tr("%1 x %2").arg(depth).arg(number("heads"));
    if (number("experts") > 1)
        parts << QObject::tr("%1 experts, top-%2").arg(number("experts")).arg(number("top_k"));
    if (model.value(QLatin1String("share_attention")).toBool() || model.value(QLatin1String("share_ffn")).toBool())
        parts << QObject::tr("shared");
    const int paths = std::max(number("paths"), number("decoder_paths"));
    if (paths > 1)
        parts << QObject::tr("%1 paths").arg(paths);
    parts << model.value(QLatin1String("attention")).toString();
    return parts.join(QStringLiteral(" \u00b7 "));
}

// A trainer writes it now: deleting it would leave the trainer writing into the trash.
bool beingWritten(const RunSummary& summary)
{
    if (!summary.status)
        return false;
    const RunStatus& s = *summary.status;
    const RunActivity activity =
        runActivity(s, localHostName(), QDateTime::currentSecsSinceEpoch() - s.updated, kStaleAfterSeconds);
    return activity == RunActivity::Training || activity == RunActivity::Paused;
}

}  // namespace

RunsWorkspace::ReadRun RunsWorkspace::readRun(const std::filesystem::path& directory, const ReadRun* previous)
{
    ReadRun run;
    run.summary = summariseRun(directory, previous ? &previous->summary : nullptr);
    run.row = runRowOf(run.summary, QDateTime::currentSecsSinceEpoch());
    return run;
}

RunRow runRowOf(const RunSummary& summary, std::int64_t now)
{
    RunRow row;
    row.id = QDir(QString::fromStdString(summary.directory.string())).absolutePath();
    row.name = fromUtf8(summary.name());
    QStringList problems;
    if (summary.config.is_object()) {
        const QJsonObject config =
            QJsonDocument::fromJson(QByteArray::fromStdString(summary.config.dump(-1, ' ', false,
                                                                                nlohmann::json::error_handler_t::replace)))
                .object();
        row.family = modelFamily(config);
        row.model = modelText(resolveDocument(config));
    } else {
        problems << fromUtf8(summary.configError);
    }
    if (summary.status) {
        const RunStatus& s = *summary.status;
        const RunActivity activity = runActivity(s, localHostName(), now - s.updated, kStaleAfterSeconds);
        row.state = fromUtf8(toString(activity));
        const QString where = QObject::tr("%1 (process %2)").arg(fromUtf8(s.host)).arg(s.pid);
        switch (activity) {
        case RunActivity::Stale:
            row.details = QObject::tr("No update from %1 for %2 s").arg(where).arg(now - s.updated);
            break;
        case RunActivity::Gone:
            row.details = QObject::tr("The trainer, %1, is gone without a last word: resume it to go on").arg(where);
            break;
        case RunActivity::Failed:
            row.details = QObject::tr("Failed on %1: %2").arg(fromUtf8(s.host), fromUtf8(s.message));
            break;
        default:
            row.details = s.message.empty() ? QObject::tr("%1 on %2").arg(row.state, where) : fromUtf8(s.message);
            break;
        }
    } else if (!summary.statusError.empty()) {
        problems << fromUtf8(summary.statusError);
    }
    if (!summary.notesError.empty())
        problems << fromUtf8(summary.notesError);
    if (!problems.isEmpty()) {
        row.problem = true;
        if (!row.details.isEmpty())
            problems.prepend(row.details);
        row.details = problems.join(QLatin1Char('\n'));
    }
    row.step = summary.step;
    row.totalSteps = summary.totalSteps;
    row.bestLoss = summary.best.loss;
    row.scoreIsBleu = summary.best.bleu.has_value();
    row.bestScore = row.scoreIsBleu ? summary.best.bleu : summary.best.accuracy;
    row.tokensPerSecond = summary.tokensPerSecond;
    if (summary.updated > 0)
        row.updated = QDateTime::fromSecsSinceEpoch(summary.updated);
    for (const std::string& tag : summary.notes.tags)
        row.tags << fromUtf8(tag);
    row.note = fromUtf8(summary.notes.note);
    return row;
}

RunsWorkspace::RunsWorkspace(RunsTable& table, RunRegistry& runs, ComparedRuns& compared,
                             std::function<bool(const QString&)> writing, QObject* parent)
    : QObject(parent), m_table(table), m_runs(runs), m_compared(compared), m_writing(std::move(writing))
{
    m_timer = new QTimer(this);
    m_timer->setInterval(3000);
    connect(m_timer, &QTimer::timeout, this, [this] {
        if (m_table.isVisible())
            refresh();
    });
    m_timer->start();
    connect(&m_table, &RunsTable::refreshRequested, this, &RunsWorkspace::refresh);
    connect(&m_table, &RunsTable::openRequested, this, &RunsWorkspace::openRequested);
    connect(&m_table, &RunsTable::shownChanged, this, &RunsWorkspace::setShown);
    connect(&m_table, &RunsTable::renameRequested, this, [this](const QString& id, const QString& name) {
        editNotes(id, [&](RunNotes& notes) { notes.name = name.toStdString(); });
    });
    connect(&m_table, &RunsTable::tagsRequested, this, [this](const QString& id, const QString& tags) {
        editNotes(id, [&](RunNotes& notes) { notes.tags = parseTags(tags.toStdString()); });
    });
    connect(&m_table, &RunsTable::noteRequested, this, [this](const QString& id, const QString& note) {
        editNotes(id, [&](RunNotes& notes) { notes.note = note.toStdString(); });
    });
    connect(&m_table, &RunsTable::deleteRequested, this, &RunsWorkspace::deleteRuns);
    // The Shown column follows the Runs panel, whoever changes it.
    connect(&m_runs, &RunRegistry::runAdded, this, &RunsWorkspace::publishRows);
    connect(&m_runs, &RunRegistry::runRemoved, this, &RunsWorkspace::publishRows);
}

RunsWorkspace::~RunsWorkspace()
{
    if (m_reader)
        m_reader->wait();
}

void RunsWorkspace::setFolder(const QString& folder)
{
    m_folder = QDir::cleanPath(QDir(folder).absolutePath());
    m_table.setFolder(m_folder);
    refresh();
}

void RunsWorkspace::refresh() { startReading(); }

QStringList RunsWorkspace::savedCharts() const
{
    return QSettings().value(kChartLayouts).toMap().value(m_folder).toStringList();
}

void RunsWorkspace::saveCharts(const QStringList& tags)
{
    QSettings settings;
    QVariantMap layouts = settings.value(kChartLayouts).toMap();
    if (tags.isEmpty())
        layouts.remove(m_folder);
    else
        layouts.insert(m_folder, tags);
    settings.setValue(kChartLayouts, layouts);
}

bool RunsWorkspace::waitForReading(int milliseconds)
{
    const QDeadlineTimer deadline(milliseconds);
    while ((m_reader || m_again) && !deadline.hasExpired())
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    return !m_reader && !m_again;
}

void RunsWorkspace::startReading()
{
    if (m_reader) {
        m_again = true;
        return;
    }
    std::vector<std::filesystem::path> shown;
    for (const QString& id : m_runs.runIds())
        shown.emplace_back(id.toStdString());
    auto result = std::make_shared<std::map<std::string, ReadRun>>();
    // The rows too, off the window's thread: each resolves its run's configuration.
    m_reader = QThread::create([folder = m_folder.toStdString(), shown = std::move(shown), previous = m_read, result] {
        std::set<std::filesystem::path> directories(shown.begin(), shown.end());
        for (const std::filesystem::path& run : runDirectories(folder))
            directories.insert(run);
        for (const std::filesystem::path& run : directories) {
            const auto known = previous.find(run.string());
            (*result)[run.string()] = readRun(run, known == previous.end() ? nullptr : &known->second);
        }
    });
    m_reader->setParent(this);  // waited for and deleted with the workspace, if it goes first
    connect(m_reader, &QThread::finished, this, [this, result] {
        m_reader->deleteLater();
        m_reader = nullptr;
        finishReading(std::move(*result));
        if (m_again) {
            m_again = false;
            startReading();
        }
    });
    m_reader->start(QThread::LowPriority);
}

void RunsWorkspace::finishReading(std::map<std::string, ReadRun> read)
{
    m_read = std::move(read);
    publishRows();
}

void RunsWorkspace::publishRows()
{
    QList<RunRow> rows;
    for (const auto& [directory, run] : m_read) {
        RunRow row = run.row;
        row.shown = m_runs.record(row.id) != nullptr;
        // Taken out of the folder and the window meanwhile: gone from the table too.
        if (!row.shown && !QDir(row.id).exists())
            continue;
        rows << row;
    }
    m_table.setRows(rows);
}

void RunsWorkspace::setShown(const QString& runId, bool shown)
{
    if (shown) {
        m_compared.add(runId);
    } else if (m_writing(runId)) {
        Q_EMIT statusMessage(tr("%1 is training in this window: it stays in the charts").arg(QDir(runId).dirName()), 8000);
    } else {
        m_runs.remove(runId);
    }
    publishRows();
}

void RunsWorkspace::editNotes(const QString& runId, const std::function<void(RunNotes&)>& change)
{
    const std::filesystem::path directory = runId.toStdString();
    std::string error;
    RunNotes notes = readRunNotes(directory, &error);
    if (!error.empty()) {  // never written over: it may hold what the user wrote by hand
        Q_EMIT problem(tr("Cannot Change the Run's Notes"),
                       tr("%1\nMend or remove the file, then try again.").arg(fromUtf8(error)));
        return;
    }
    change(notes);
    try {
        writeRunNotes(directory, notes);
    } catch (const std::exception& e) {
        Q_EMIT problem(tr("Cannot Change the Run's Notes"), fromUtf8(e.what()));
        return;
    }
    m_runs.setRunLabel(runId, fromUtf8(runName(readRunNotes(directory), directory)));
    // This run now, the others as they were; the next reading reads it from disk.
    auto known = m_read.find(directory.string());
    if (known != m_read.end())
        known->second = readRun(directory, &known->second);
    publishRows();
}

void RunsWorkspace::deleteRuns(const QStringList& runIds)
{
    QStringList names;
    for (const QString& id : runIds) {
        // Read afresh: a trainer may have started since the last reading.
        const auto known = m_read.find(id.toStdString());
        const ReadRun fresh = readRun(id.toStdString(), known != m_read.end() ? &known->second : nullptr);
        const RunRow& row = fresh.row;
        if (m_writing(id) || beingWritten(fresh.summary)) {
            Q_EMIT problem(tr("Cannot Delete a Training Run"),
                           tr("%1 is %2 (%3). Stop its training first.")
                               .arg(row.name, m_writing(id) ? tr("training in this window") : row.state, row.details));
            return;
        }
        names << row.name;
    }
    if (names.isEmpty())
        return;
    const QString question = names.size() == 1
                                 ? tr("Move the run \"%1\" to the trash?").arg(names.first())
                                 : tr("Move these %1 runs to the trash?\n%2").arg(names.size()).arg(names.join(QLatin1Char('\n')));
    ask(QStringLiteral("deleteRunsQuestion"), question + QLatin1Char('\n') + tr("Their checkpoints, metrics and notes go with them."),
        [this, runIds, names] {
            QStringList stuck;  // no trash on their volume
            for (const QString& id : runIds) {
                m_runs.remove(id);
                if (QFile::moveToTrash(id))
                    Q_EMIT message(QStringLiteral("info"), tr("Moved %1 to the trash").arg(QDir::toNativeSeparators(id)));
                else
                    stuck << id;
            }
            forget(runIds);
            if (stuck.isEmpty()) {
                Q_EMIT statusMessage(names.size() == 1 ? tr("Moved %1 to the trash").arg(names.first())
                                                       : tr("Moved %1 runs to the trash").arg(names.size()),
                                     8000);
                return;
            }
            QStringList where;
            for (const QString& id : stuck)
                where << QDir::toNativeSeparators(id);
            ask(QStringLiteral("deleteForGoodQuestion"),
                tr("There is no trash for these folders here:\n%1\nDelete them for good?").arg(where.join(QLatin1Char('\n'))),
                [this, stuck] {
                    for (const QString& id : stuck) {
                        if (QDir(id).removeRecursively())
                            Q_EMIT message(QStringLiteral("info"), tr("Deleted %1").arg(QDir::toNativeSeparators(id)));
                        else
                            Q_EMIT problem(tr("Delete Runs"),
                                           tr("%1 could not be deleted entirely.").arg(QDir::toNativeSeparators(id)));
                    }
                    forget(stuck);
                });
        });
}

void RunsWorkspace::ask(const QString& name, const QString& question, const std::function<void()>& then)
{
    auto* box = new QMessageBox(QMessageBox::Question, tr("Delete Runs"), question, QMessageBox::Yes | QMessageBox::Cancel,
                                m_table.window());
    box->setObjectName(name);
    box->setDefaultButton(QMessageBox::Cancel);
    connect(box, &QMessageBox::finished, this, [box, then] {
        box->deleteLater();
        if (box->standardButton(box->clickedButton()) == QMessageBox::Yes)
            then();
    });
    box->open();
}

void RunsWorkspace::forget(const QStringList& runIds)
{
    for (const QString& id : runIds)
        m_read.erase(id.toStdString());
    publishRows();
}

}  // namespace widelab
