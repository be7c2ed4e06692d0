#include "RunRegistry.h"

#include "ConfigAssessment.h"
#include "ConfigDocument.h"
#include "curves/CurvesView.h"
#include "InsightFacts.h"
#include "insights/InsightsView.h"
#include "RunFiles.h"
#include "run/RunNotes.h"

#include <QDir>
#include <QFileInfo>
#include <QListWidget>
#include <QSet>

#include <utility>

namespace widelab {

RunRegistry::RunRegistry(CurvesView* curves, InsightsView* insights, QListWidget* list, QObject* parent)
    : QObject(parent), m_curves(curves), m_insights(insights), m_list(list)
{
    connect(m_list, &QListWidget::itemChanged, this, &RunRegistry::onItemChanged);
    m_curves->setMetricTags([this] { return metricTags(); });
    connect(m_curves, &CurvesView::metricChartAdded, this, &RunRegistry::feedMetric);
    connect(m_curves, &CurvesView::runColorsChanged, this, [this] {  // the theme changed
        const QSignalBlocker block(m_list);
        for (int row = 0; row < m_list->count(); ++row)
            m_list->item(row)->setForeground(m_curves->runColor(m_list->item(row)->data(Qt::UserRole).toString()));
    });
}

const RunRecord* RunRegistry::record(const QString& runId) const
{
    const auto it = m_records.constFind(runId);
    return it == m_records.constEnd() ? nullptr : &it.value();
}

void RunRegistry::setCurrent(const QString& runId)
{
    m_current = runId;
    m_insights->setCurrentRun(runId);
    Q_EMIT currentChanged(runId);
}

RunRecord& RunRegistry::add(RunRecord record)
{
    auto* item = new QListWidgetItem(record.label);
    item->setData(Qt::UserRole, record.id);
    item->setToolTip(QDir::toNativeSeparators(record.directory));
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    const QSignalBlocker block(m_list);
    item->setCheckState(Qt::Checked);
    m_list->addItem(item);
    const QString id = record.id;
    m_records.insert(id, std::move(record));
    RunRecord& stored = m_records[id];
    show(stored);
    item->setForeground(m_curves->runColor(id));
    m_insights->addRun(id, stored.label, stored.insights);
    Q_EMIT runAdded(id);
    return stored;
}

void RunRegistry::show(const RunRecord& record)
{
    m_curves->addRun(record.id, record.label, record.parameters);
    // A run whose configuration could not be read keeps its balance loss chart.
    const InsightHistory& insights = *record.insights;
    m_curves->setRunTraits(record.id, {!insights.architecture() || insights.hasExperts()});
    m_curves->clearRun(record.id);
    appendCurves(record.id, record.curves);
}

void RunRegistry::appendCurves(const QString& runId, const CurveBatch& batch)
{
    for (auto it = batch.begin(); it != batch.end(); ++it)
        m_curves->appendPoints(runId, it.key(), it.value());
}

void RunRegistry::onItemChanged(QListWidgetItem* item)
{
    const QString id = item->data(Qt::UserRole).toString();
    const auto it = m_records.constFind(id);
    if (it == m_records.constEnd())
        return;
    if (item->checkState() == Qt::Checked)
        show(it.value());
    else
        m_curves->removeRun(id);
}

void RunRegistry::remove(const QString& runId)
{
    m_curves->removeRun(runId);
    m_insights->removeRun(runId);
    m_records.remove(runId);
    m_marks.remove(runId);
    for (int row = 0; row < m_list->count(); ++row) {
        if (m_list->item(row)->data(Qt::UserRole).toString() == runId) {
            delete m_list->takeItem(row);
            break;
        }
    }
    Q_EMIT runRemoved(runId);
}

QStringList RunRegistry::metricTags() const
{
    QSet<QString> tags;
    for (const RunRecord& record : m_records)
        for (auto it = record.curves.keyBegin(); it != record.curves.keyEnd(); ++it)
            if (it->contains(QLatin1Char('/')))
                tags.insert(*it);
    QStringList sorted(tags.begin(), tags.end());
    sorted.sort();
    return sorted;
}

void RunRegistry::feedMetric(const QString& tag)
{
    const QStringList shown = m_curves->runs();
    for (const RunRecord& record : std::as_const(m_records))
        if (shown.contains(record.id))
            m_curves->appendPoints(record.id, tag, record.curves.value(tag));
}

QStringList RunRegistry::runIds() const
{
    QStringList ids;
    for (int row = 0; row < m_list->count(); ++row)
        ids << m_list->item(row)->data(Qt::UserRole).toString();
    return ids;
}

void RunRegistry::setRunMark(const QString& runId, const QString& mark, const QString& details)
{
    if (!m_records.contains(runId))
        return;
    if (mark.isEmpty() && details.isEmpty())
        m_marks.remove(runId);
    else
        m_marks.insert(runId, {mark, details});
    updateItem(runId);
}

void RunRegistry::setRunLabel(const QString& runId, const QString& label)
{
    const auto record = m_records.find(runId);
    if (record == m_records.end() || record->label == label)
        return;
    record->label = label;
    if (m_curves->runs().contains(runId))
        m_curves->addRun(runId, label, record->parameters);
    m_insights->addRun(runId, label, record->insights);
    updateItem(runId);
}

// The run's line in the Runs panel: its label, the mark after it, and where it
// is with the mark's details in the tooltip.
void RunRegistry::updateItem(const QString& runId)
{
    const auto record = m_records.constFind(runId);
    if (record == m_records.constEnd())
        return;
    const auto [mark, details] = m_marks.value(runId);
    for (int row = 0; row < m_list->count(); ++row) {
        QListWidgetItem* item = m_list->item(row);
        if (item->data(Qt::UserRole).toString() != runId)
            continue;
        const QSignalBlocker block(m_list);
        item->setText(mark.isEmpty() ? record->label : tr("%1 · %2").arg(record->label, mark));
        const QString where = QDir::toNativeSeparators(record->directory);
        item->setToolTip(details.isEmpty() ? where : where + QLatin1Char('\n') + details);
        return;
    }
}

// One warning per skipped line in the log, where each names its file and line;
// the status bar says how many, so that a damaged file is noticed without a
// dialog per line.
void RunRegistry::reportSkippedLines(const QStringList& warnings)
{
    for (const QString& warning : warnings)
        Q_EMIT message(QStringLiteral("warning"), warning);
    if (!warnings.isEmpty())
        Q_EMIT statusMessage(warnings.size() == 1
                                 ? tr("1 damaged line skipped; the log names it and why.")
                                 : tr("%1 damaged lines skipped; the log names each and why.").arg(warnings.size()),
                             15000);
}

bool RunRegistry::addSaved(const QString& directory, LineTail* metricsTail, QStringList* warnings)
{
    const QString absolute = QDir(directory).absolutePath();
    for (auto it = m_records.begin(); it != m_records.end(); ++it) {
        if (it->directory != absolute)
            continue;
        if (metricsTail) {
            it->restart();
            loadRunRecord(absolute, *it, nullptr, metricsTail, warnings);
            if (m_curves->runs().contains(it->id))
                show(*it);
            m_insights->historyChanged(it->id);
        }
        return true;  // already shown
    }
    RunRecord record;
    QString error;
    if (!loadRunRecord(absolute, record, &error, metricsTail, warnings)) {
        Q_EMIT problem(tr("Cannot Open Run"), error);
        return false;
    }
    QString configError;
    const QJsonObject config = readJsonObject(runFile(absolute, runlayout::kConfig), &configError);
    if (!configError.isEmpty()) {  // the curves are still worth seeing
        const QString warning = tr("%1 (its size is unknown)").arg(configError);
        Q_EMIT message(QStringLiteral("warning"), warning);
        Q_EMIT statusMessage(warning, 15000);
    }
    const ConfigAssessment assessment = assessDocument(config);
    record.id = absolute;
    record.label = QString::fromStdString(runName(readRunNotes(absolute.toStdString()), absolute.toStdString()));
    record.parameters = static_cast<double>(assessment.cost.stored);
    if (assessment.valid) {
        record.insights->setArchitecture(assessment.sketch);
        describeInsights(*record.insights, assessment.complete);
    }
    add(std::move(record));
    return true;
}

bool RunRegistry::add(const QString& runId, const MetricsRecord& record)
{
    auto it = m_records.find(runId);
    if (it == m_records.end())
        return false;
    const CurveBatch added = it->add(record);
    if (m_curves->runs().contains(runId))
        appendCurves(runId, added);
    if (record.type != MetricsRecord::Type::Eval)
        m_insights->historyChanged(runId);
    return true;
}

std::optional<CurveBatch> RunRegistry::addLines(const QString& runId, const QList<QByteArray>& lines,
                                                const QList<qint64>& lineNumbers, bool fromStart)
{
    auto it = m_records.find(runId);
    if (it == m_records.end())
        return std::nullopt;
    if (fromStart)
        it->restart();
    CurveBatch added;
    QStringList warnings;
    for (qsizetype i = 0; i < lines.size(); ++i) {
        QString warning;
        const CurveBatch batch = it->addMetricsLine(lines[i], lineNumbers.value(i), &warning);
        if (!warning.isEmpty())
            warnings.append(warning);
        for (auto series = batch.begin(); series != batch.end(); ++series)
            added[series.key()] += series.value();
    }
    reportSkippedLines(warnings);
    if (m_curves->runs().contains(runId)) {
        if (fromStart)
            show(*it);
        else
            appendCurves(runId, added);
    }
    m_insights->historyChanged(runId);
    return added;
}

void RunRegistry::retraceAfter(const QString& runId, qint64 step)
{
    if (auto it = m_records.find(runId); it != m_records.end()) {
        it->insights->truncateAfter(step);
        m_insights->historyChanged(runId);
    }
}

}  // namespace widelab
