// defines: RunRegistry: the runs the window knows (the one trained or opened
// here, those added for comparison, read from disk or followed), each a
// RunRecord, listed in the Runs panel in its chart colour and drawn in the
// curves and the insights while ticked
#pragma once

#include "RunRecord.h"

#include <QHash>
#include <QObject>
#include <QString>
#include <QStringList>

#include <optional>

class QListWidget;
class QListWidgetItem;

namespace widelab {

class CurvesView;
class InsightsView;

class RunRegistry : public QObject {
    Q_OBJECT
public:
    // `list`: the Runs panel's list, an item a run.
    RunRegistry(CurvesView* curves, InsightsView* insights, QListWidget* list, QObject* parent = nullptr);

    const RunRecord* record(const QString& runId) const;  // null when the window has no such run
    QStringList runIds() const;  // every run the window has, in the Runs panel's order
    // The run training now (or last), or opened: the insights' current run.
    QString current() const { return m_current; }
    void setCurrent(const QString& runId);

    // Lists the run, ticked, and draws it.
    RunRecord& add(RunRecord record);
    // Adds the run in `directory`, read from disk. With `metricsTail`, the run is
    // read afresh even when shown already, and the tail ends where the reading
    // stopped, for a follower to go on from there. Lines skipped as damaged are
    // added to `warnings`; a config.json that cannot be read is a warning in the
    // log. False, after saying why, when the directory is not a run.
    bool addSaved(const QString& directory, LineTail* metricsTail, QStringList* warnings);
    // Adds one record to the run, and shows what it added; false when the
    // window has no such run (it was removed meanwhile).
    bool add(const QString& runId, const MetricsRecord& record);
    // New lines of the run's metrics.jsonl: appended, or with `fromStart` (the
    // file was replaced or trimmed) the record rebuilt from them; damaged
    // lines are reported. The points added; none when there is no such run.
    std::optional<CurveBatch> addLines(const QString& runId, const QList<QByteArray>& lines,
                                       const QList<qint64>& lineNumbers, bool fromStart);
    // A resumed run retraces the steps after its checkpoint: its insights after
    // `step` go.
    void retraceAfter(const QString& runId, qint64 step);
    // The tags of every metric some run has beyond the fixed charts' (the chart
    // chooser's list), sorted.
    QStringList metricTags() const;
    // A metric chart was added: every run's points of it go to the charts.
    void feedMetric(const QString& tag);
    // Takes the run out of the window: list, curves, insights.
    void remove(const QString& runId);
    // A word after the run's name in the Runs panel ("training", "stale",
    // "finished"; none when empty) and, in its tooltip, the details.
    void setRunMark(const QString& runId, const QString& mark, const QString& details);
    // What the run is called in the Runs panel, the charts' legends and the
    // insights (its notes' name, once renamed).
    void setRunLabel(const QString& runId, const QString& label);
    // Each skipped line in the log, where each names its file and line; the
    // status bar says how many.
    void reportSkippedLines(const QStringList& warnings);

Q_SIGNALS:
    void message(const QString& level, const QString& text);  // for the log
    void statusMessage(const QString& text, int milliseconds);
    void problem(const QString& title, const QString& text);
    void runAdded(const QString& runId);        // add()
    void runRemoved(const QString& runId);      // remove()
    void currentChanged(const QString& runId);  // setCurrent()

private:
    void show(const RunRecord& record);
    void appendCurves(const QString& runId, const CurveBatch& batch);
    void onItemChanged(QListWidgetItem* item);
    void updateItem(const QString& runId);

    CurvesView* m_curves;
    InsightsView* m_insights;
    QListWidget* m_list;
    QHash<QString, RunRecord> m_records;
    QHash<QString, std::pair<QString, QString>> m_marks;  // setRunMark's word and details, by run
    QString m_current;
};

}  // namespace widelab
