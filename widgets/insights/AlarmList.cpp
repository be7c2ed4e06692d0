#include "AlarmList.h"

#include "common/Palette.h"

#include <QLabel>
#include <QListWidget>
#include <QSet>
#include <QStyle>
#include <QVBoxLayout>

namespace widelab {

namespace {

QString kindText(const HealthEvent& alarm)
{
    QString where = QObject::tr("block %1").arg(alarm.block + 1);
    if (alarm.index >= 0)
        where += alarm.kind == "path weight" ? QObject::tr(", feature %1").arg(alarm.index + 1)
                                             : QObject::tr(", expert %1").arg(alarm.index + 1);
    return QStringLiteral("%1 (%2)").arg(QString::fromStdString(alarm.kind), where);
}

}  // namespace

QVector<AlarmEntry> alarmsUpTo(const InsightHistory& history, qint64 upTo, const QStringList& kinds)
{
    QVector<AlarmEntry> entries;
    const QVector<TrainingSnapshot>& states = history.states();
    for (auto state = states.crbegin(); state != states.crend(); ++state) {
        if (upTo >= 0 && state->step > upTo)
            continue;
        for (auto alarm = state->alarms.crbegin(); alarm != state->alarms.crend(); ++alarm)
            if (kinds.isEmpty() || kinds.contains(QString::fromStdString(alarm->kind)))
                entries.push_back({state->step, *alarm, false});
    }
    // Newest first: an entry is in force when it is a warning and the first of its key.
    QSet<QString> seen;
    for (AlarmEntry& entry : entries) {
        const QString key = QStringLiteral("%1/%2/%3").arg(QString::fromStdString(entry.alarm.kind)).arg(entry.alarm.block).arg(entry.alarm.index);
        if (seen.contains(key))
            continue;
        seen.insert(key);
        entry.active = entry.alarm.level == "warning";
    }
    return entries;
}

QVector<HealthEvent> activeAlarms(const QVector<AlarmEntry>& entries)
{
    QVector<HealthEvent> active;
    for (const AlarmEntry& entry : entries)
        if (entry.active)
            active.push_back(entry.alarm);
    return active;
}

bool hasAlarm(const QVector<HealthEvent>& alarms, const QString& kind, qint64 block, qint64 index)
{
    for (const HealthEvent& alarm : alarms)
        if (QString::fromStdString(alarm.kind) == kind && alarm.block == block && (index < 0 || alarm.index == index))
            return true;
    return false;
}

AlarmList::AlarmList(QWidget* parent) : QWidget(parent)
{
    m_emptyText = tr("No alarm so far.");
    m_title = new QLabel(this);
    m_title->setWordWrap(true);
    m_list = new QListWidget(this);
    m_list->setAccessibleName(tr("Health alarms, newest first"));
    m_list->setWordWrap(true);
    m_list->setUniformItemSizes(false);
    m_list->setIconSize(QSize(16, 16));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_title);
    layout->addWidget(m_list, 1);
    connect(m_list, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
        const int at = item->data(Qt::UserRole).toInt();
        if (at >= 0 && at < m_entries.size())
            Q_EMIT alarmActivated(m_entries[at].alarm);
    });
}

void AlarmList::setKinds(const QStringList& kinds) { m_kinds = kinds; }
void AlarmList::setEmptyText(const QString& text) { m_emptyText = text; }

void AlarmList::setHistory(const InsightHistory* history, qint64 upTo)
{
    m_entries = history != nullptr ? alarmsUpTo(*history, upTo, m_kinds) : QVector<AlarmEntry>{};
    m_list->clear();
    const QIcon warning = style()->standardIcon(QStyle::SP_MessageBoxWarning);
    const QIcon cleared = style()->standardIcon(QStyle::SP_DialogApplyButton);
    const QColor base = palette().color(QPalette::Base), text = palette().color(QPalette::Text);
    const QColor inForce = palette::blend(base, palette::seriesColor(5), 0.22);  // vermillion tint
    const QColor faded = palette::blend(text, base, 0.4);
    int active = 0;
    for (int i = 0; i < m_entries.size(); ++i) {
        const AlarmEntry& entry = m_entries[i];
        const bool isWarning = entry.alarm.level == "warning";
        auto* item = new QListWidgetItem(isWarning ? warning : cleared,
                                         tr("step %1: %2").arg(entry.step).arg(QString::fromStdString(entry.alarm.text)), m_list);
        item->setData(Qt::UserRole, i);
        QString state;
        if (entry.active) {
            ++active;
            QFont bold = item->font();
            bold.setBold(true);
            item->setFont(bold);
            item->setBackground(inForce);
            state = tr("in force at the step shown");
        } else if (isWarning) {
            state = tr("raised, since cleared or raised again");
        } else {
            item->setForeground(faded);
            state = tr("cleared: the measure is back within bounds");
        }
        item->setToolTip(tr("%1, step %2: %3\n%4").arg(kindText(entry.alarm)).arg(entry.step).arg(QString::fromStdString(entry.alarm.text), state));
    }
    if (m_entries.isEmpty())
        m_title->setText(m_emptyText);
    else if (active == 0)
        m_title->setText(tr("No alarm in force; %1 raised or cleared so far (newest first):").arg(m_entries.size()));
    else
        m_title->setText(QStringLiteral("⚠ ") + (active == 1 ? tr("1 alarm in force (bold)") : tr("%1 alarms in force (bold)").arg(active))
                         + tr("; all so far, newest first:"));
}

QString AlarmList::badgeText() const
{
    const QVector<HealthEvent> now = active();
    if (now.isEmpty())
        return QString();
    QStringList texts;
    for (const HealthEvent& alarm : now)
        texts << QString::fromStdString(alarm.text);
    return QStringLiteral("⚠ ") + (now.size() == 1 ? tr("1 alarm in force: ") : tr("%1 alarms in force: ").arg(now.size()))
           + texts.join(QStringLiteral("; "));
}

}  // namespace widelab
