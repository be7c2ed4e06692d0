// defines: LogPanel, a run's log lines with a minimum-level filter, a text filter,
// colours for warnings and errors, a line cap and auto-scroll that respects the user
#pragma once

#include <QString>
#include <QStringList>
#include <QTextCharFormat>
#include <QWidget>

#include <deque>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace widelab {

class LogPanel : public QWidget {
    Q_OBJECT

public:
    explicit LogPanel(QWidget* parent = nullptr);

    // level: trace, debug, info, warning (or warn), error, critical; any case.
    // A multi-line text becomes several lines of the same level.
    void appendLine(const QString& level, const QString& text);
    // A line of spdlog's default pattern ("[2026-11-22 05:12:03.123] [run] [info] text");
    // a line that does not parse continues the previous line's level.
    void appendSpdlogLine(const QString& line);
    // A whole log.txt at once (one redraw).
    void appendSpdlogLines(const QStringList& lines);
    void clear();

    // The most lines kept; the oldest go first. Default 20,000.
    void setMaximumLines(int lines);
    int maximumLines() const { return m_maximumLines; }
    void setMinimumLevel(const QString& level);
    QString minimumLevel() const;
    void setTextFilter(const QString& text);
    QString textFilter() const;

    int lineCount() const { return static_cast<int>(m_entries.size()); }  // kept, shown or not
    QStringList visibleLines() const;                                       // shown, oldest first

private:
    struct Entry {
        int rank = 2;
        QString level;
        QString time;
        QString text;
    };

    void add(Entry entry);   // stores, drops the oldest over the cap, shows it if it passes the filters
    void store(Entry entry); // stores and drops, without touching the view
    bool accepts(const Entry& entry) const;
    QString display(const Entry& entry) const;
    QTextCharFormat formatFor(const Entry& entry) const;
    void insert(const Entry& entry);
    void removeFirstShown();
    void rebuild();
    void updateCount();

    std::deque<Entry> m_entries;
    int m_maximumLines = 20000;
    int m_shown = 0;
    QString m_lastLevel = QStringLiteral("info");

    QComboBox* m_level = nullptr;
    QLineEdit* m_filter = nullptr;
    QPushButton* m_clear = nullptr;
    QPlainTextEdit* m_view = nullptr;
    QLabel* m_count = nullptr;
};

}  // namespace widelab
