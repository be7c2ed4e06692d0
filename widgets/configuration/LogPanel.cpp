#include "LogPanel.h"

#include "LogLine.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextCursor>
#include <QTime>
#include <QVBoxLayout>

namespace widelab {
namespace {

constexpr int kWarningRank = 3;
constexpr int kErrorRank = 4;

// The part of spdlog's "2026-11-22 05:12:03.123" worth a column.
QString clockPart(const QString& time)
{
    const int space = time.indexOf(QLatin1Char(' '));
    return space < 0 ? time : time.mid(space + 1);
}

}  // namespace

LogPanel::LogPanel(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* bar = new QHBoxLayout;

    auto* levelLabel = new QLabel(tr("&Show:"), this);
    m_level = new QComboBox(this);
    const QStringList names = {tr("Everything (trace)"), tr("Debug and above"), tr("Info and above"),
                               tr("Warnings and errors"), tr("Errors only"), tr("Critical only")};
    const QStringList levels = logLevels();
    for (int i = 0; i < levels.size(); ++i)
        m_level->addItem(names.value(i), levels[i]);
    m_level->setAccessibleName(tr("Minimum level"));
    m_level->setToolTip(tr("Show lines of this level and above"));
    levelLabel->setBuddy(m_level);

    m_filter = new QLineEdit(this);
    m_filter->setPlaceholderText(tr("Filter text"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setAccessibleName(tr("Text filter"));
    m_filter->setToolTip(tr("Show only lines containing this text (any case)"));

    m_clear = new QPushButton(tr("Clear"), this);
    m_clear->setAccessibleName(tr("Clear the log"));
    m_clear->setToolTip(tr("Forget every line shown so far (the run's log.txt keeps them)"));

    m_count = new QLabel(this);
    m_count->setAccessibleName(tr("Line count"));

    bar->addWidget(levelLabel);
    bar->addWidget(m_level);
    bar->addWidget(m_filter, 1);
    bar->addWidget(m_count);
    bar->addWidget(m_clear);
    layout->addLayout(bar);

    m_view = new QPlainTextEdit(this);
    m_view->setReadOnly(true);
    m_view->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_view->setUndoRedoEnabled(false);
    m_view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_view->setAccessibleName(tr("Log"));
    layout->addWidget(m_view, 1);

    connect(m_level, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
    connect(m_filter, &QLineEdit::textChanged, this, [this] { rebuild(); });
    connect(m_clear, &QPushButton::clicked, this, &LogPanel::clear);
    updateCount();
}

void LogPanel::appendLine(const QString& level, const QString& text)
{
    const QString normal = normalizedLogLevel(level);
    const QString now = QTime::currentTime().toString(QStringLiteral("HH:mm:ss.zzz"));
    const QStringList lines = text.split(QLatin1Char('\n'));
    for (int i = 0; i < lines.size(); ++i) {
        QString line = lines[i];
        if (line.endsWith(QLatin1Char('\r')))
            line.chop(1);
        if (i > 0 && i == lines.size() - 1 && line.isEmpty())
            break;  // a trailing newline
        add({logLevelRank(normal), normal, i == 0 ? now : QString(), line});
    }
    m_lastLevel = normal;
}

void LogPanel::appendSpdlogLine(const QString& line)
{
    if (const auto parsed = parseSpdlogLine(line)) {
        add({logLevelRank(parsed->level), parsed->level, clockPart(parsed->time), parsed->text});
        m_lastLevel = parsed->level;
        return;
    }
    QString text = line;
    while (text.endsWith(QLatin1Char('\n')) || text.endsWith(QLatin1Char('\r')))
        text.chop(1);
    add({logLevelRank(m_lastLevel), m_lastLevel, QString(), text});
}

void LogPanel::appendSpdlogLines(const QStringList& lines)
{
    for (const QString& line : lines) {
        if (const auto parsed = parseSpdlogLine(line)) {
            store({logLevelRank(parsed->level), parsed->level, clockPart(parsed->time), parsed->text});
            m_lastLevel = parsed->level;
        } else if (!line.isEmpty() || &line != &lines.last()) {
            store({logLevelRank(m_lastLevel), m_lastLevel, QString(), line});
        }
    }
    rebuild();
}

void LogPanel::clear()
{
    m_entries.clear();
    m_view->clear();
    m_shown = 0;
    updateCount();
}

void LogPanel::setMaximumLines(int lines)
{
    m_maximumLines = std::max(1, lines);
    bool dropped = false;
    while (static_cast<int>(m_entries.size()) > m_maximumLines) {
        m_entries.pop_front();
        dropped = true;
    }
    if (dropped)
        rebuild();
}

void LogPanel::setMinimumLevel(const QString& level)
{
    m_level->setCurrentIndex(std::max(0, logLevelRank(level)));
}

QString LogPanel::minimumLevel() const { return m_level->currentData().toString(); }

void LogPanel::setTextFilter(const QString& text) { m_filter->setText(text); }

QString LogPanel::textFilter() const { return m_filter->text(); }

QStringList LogPanel::visibleLines() const
{
    if (m_shown == 0)
        return {};
    return m_view->toPlainText().split(QLatin1Char('\n'));
}

void LogPanel::store(Entry entry)
{
    m_entries.push_back(std::move(entry));
    while (static_cast<int>(m_entries.size()) > m_maximumLines)
        m_entries.pop_front();
}

void LogPanel::add(Entry entry)
{
    m_entries.push_back(std::move(entry));
    while (static_cast<int>(m_entries.size()) > m_maximumLines) {
        if (accepts(m_entries.front()))
            removeFirstShown();
        m_entries.pop_front();
    }
    if (accepts(m_entries.back())) {
        QScrollBar* bar = m_view->verticalScrollBar();
        const bool following = bar->value() >= bar->maximum() - 1;
        insert(m_entries.back());
        if (following)
            bar->setValue(bar->maximum());
    }
    updateCount();
}

bool LogPanel::accepts(const Entry& entry) const
{
    if (entry.rank < m_level->currentIndex())
        return false;
    const QString filter = m_filter->text();
    return filter.isEmpty() || entry.text.contains(filter, Qt::CaseInsensitive);
}

QString LogPanel::display(const Entry& entry) const
{
    // A continuation line (no time of its own) keeps its level's colour, without repeating the word.
    const bool continuation = entry.time.isEmpty();
    const QString level = entry.level == QLatin1String("info") || continuation ? QString()
                                                                               : entry.level.toUpper() + QLatin1Char(' ');
    return entry.time.leftJustified(12) + QLatin1Char(' ') + level + entry.text;
}

QTextCharFormat LogPanel::formatFor(const Entry& entry) const
{
    QTextCharFormat format;
    const bool light = m_view->palette().color(QPalette::Base).lightnessF() > 0.5;
    if (entry.rank >= kErrorRank) {
        format.setForeground(light ? QColor(0xb3, 0x37, 0x00) : QColor(0xff, 0x7a, 0x45));  // vermillion
        format.setFontWeight(entry.rank > kErrorRank ? QFont::Bold : QFont::Normal);
    } else if (entry.rank == kWarningRank) {
        format.setForeground(light ? QColor(0x8f, 0x5a, 0x00) : QColor(0xe6, 0x9f, 0x00));  // orange
    } else if (entry.rank < 2) {
        format.setForeground(m_view->palette().color(QPalette::PlaceholderText));
    }
    return format;
}

void LogPanel::insert(const Entry& entry)
{
    QTextCursor cursor(m_view->document());
    cursor.movePosition(QTextCursor::End);
    if (m_shown > 0)
        cursor.insertBlock(QTextBlockFormat(), QTextCharFormat());
    cursor.insertText(display(entry), formatFor(entry));
    ++m_shown;
}

void LogPanel::removeFirstShown()
{
    if (m_shown <= 0)
        return;
    if (m_shown == 1) {
        m_view->clear();
        m_shown = 0;
        return;
    }
    QTextCursor cursor(m_view->document()->firstBlock());
    cursor.movePosition(QTextCursor::NextBlock, QTextCursor::KeepAnchor);
    cursor.removeSelectedText();
    --m_shown;
}

void LogPanel::rebuild()
{
    m_view->clear();
    m_shown = 0;
    QTextCursor batch(m_view->document());
    batch.beginEditBlock();
    for (const Entry& entry : m_entries)
        if (accepts(entry))
            insert(entry);
    batch.endEditBlock();
    m_view->verticalScrollBar()->setValue(m_view->verticalScrollBar()->maximum());
    updateCount();
}

void LogPanel::updateCount()
{
    const int total = lineCount();
    const QString lines = total == 1 ? tr("1 line") : tr("%1 lines").arg(total);
    m_count->setText(m_shown == total ? lines : tr("%1 of %2 shown").arg(m_shown).arg(lines));
}

}  // namespace widelab
