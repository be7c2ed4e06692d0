// defines: widelab::AlarmEntry, alarmsUpTo, activeAlarms, widelab::AlarmList: the
// health alarms a run raised (and cleared) up to the shown step, newest first,
// those still active marked; one widget shared by the Experts and Paths pages
#pragma once

#include "InsightHistory.h"

#include <QStringList>
#include <QVector>
#include <QWidget>

class QLabel;
class QListWidget;

namespace widelab {

// One alarm as the list shows it: the step it was raised or cleared at, and
// whether it is still in force at the step shown.
struct AlarmEntry {
    qint64 step = 0;
    HealthEvent alarm;
    // A warning with no later alarm of the same (kind, block, index) up to the
    // step shown: the trainer has not cleared it (nor raised it again since).
    bool active = false;
};

// Every alarm of `kinds` (empty: of every kind) recorded at or before `upTo`
// (< 0: every one), newest first (within a step, in reverse of their order).
QVector<AlarmEntry> alarmsUpTo(const InsightHistory& history, qint64 upTo, const QStringList& kinds = {});
// The alarms in force among `entries`, newest first.
QVector<HealthEvent> activeAlarms(const QVector<AlarmEntry>& entries);
// Whether `alarms` holds one of `kind` for `block` and `index` (index -1: any index of the block).
bool hasAlarm(const QVector<HealthEvent>& alarms, const QString& kind, qint64 block, qint64 index = -1);

// A title line ("2 alarms in force at step 1200") over a list of entries: a
// warning icon for warnings (bold while in force), a tick for the notes that
// cleared one. A click on an entry emits alarmActivated.
class AlarmList : public QWidget {
    Q_OBJECT
public:
    explicit AlarmList(QWidget* parent = nullptr);

    // Which kinds this list shows (empty: all) and what it says when there are none.
    void setKinds(const QStringList& kinds);
    void setEmptyText(const QString& text);
    // The alarms of `history` up to `upTo` (< 0: all); nullptr clears the list.
    void setHistory(const InsightHistory* history, qint64 upTo);

    const QVector<AlarmEntry>& entries() const { return m_entries; }
    QVector<HealthEvent> active() const { return activeAlarms(m_entries); }
    QListWidget* list() const { return m_list; }
    QLabel* titleLabel() const { return m_title; }
    // "⚠ 2 alarms in force" for a badge; empty when none is in force.
    QString badgeText() const;

Q_SIGNALS:
    void alarmActivated(const widelab::HealthEvent& alarm);

private:
    QStringList m_kinds;
    QString m_emptyText;
    QVector<AlarmEntry> m_entries;
    QLabel* m_title = nullptr;
    QListWidget* m_list = nullptr;
};

}  // namespace widelab
