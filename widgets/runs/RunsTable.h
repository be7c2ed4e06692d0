// defines: widelab::RunRow, widelab::RunsTable: every run of the workspace folder in
// one sortable, filterable table (name, family, model, state, steps, best
// validation, speed, when last written, tags), with the actions a user takes on a
// run: show it in the charts, open it, rename, tag and note it, delete it. The table
// draws the rows it is handed and asks for every change by a signal: the app reads
// and writes the runs.
#pragma once

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <optional>

class QLabel;
class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace widelab {

class RunsTableModel;

struct RunRow {
    QString id;          // the run's directory, absolute: what every signal names
    QString name;        // the user's name for it, else the directory's
    QString family;      // "WideNet", "Wide Attention", ...
    QString model;       // key settings: "6 x 8 · 4 experts · 2 paths · linear"
    QString state;       // "training", "finished", "stale", ...; empty when unknown
    QString details;     // the state in a sentence, and any file that could not be read
    qint64 step = 0;
    qint64 totalSteps = 0;
    std::optional<double> bestLoss;   // the lowest validation loss
    std::optional<double> bestScore;  // the highest validation accuracy (0..1) or BLEU (0..100)
    bool scoreIsBleu = false;
    std::optional<double> tokensPerSecond;
    QDateTime updated;
    QStringList tags;
    QString note;
    bool shown = false;  // in the window's Runs panel and charts
    bool problem = false;  // a file of the run could not be read (details says which)

    bool operator==(const RunRow&) const = default;
};

class RunsTable : public QWidget {
    Q_OBJECT

public:
    enum Column { Shown, Name, Family, Model, State, Steps, BestLoss, BestScore, Speed, Updated, Tags, ColumnCount };

    explicit RunsTable(QWidget* parent = nullptr);

    // Replaces the rows, keeping the selection, the sort and the filter.
    void setRows(const QList<RunRow>& rows);
    const QList<RunRow>& rows() const;
    // The folder the rows come from, named above the table.
    void setFolder(const QString& folder);
    void setFilter(const QString& text);

    // What the table shows: rows after filtering and sorting, cell text as drawn.
    int visibleRowCount() const;
    QString visibleCell(int row, Column column) const;
    QString visibleRunId(int row) const;
    QString summaryText() const;  // "12 runs in ~/WideLab/runs, 3 shown"
    QStringList selectedRunIds() const;
    void selectRun(const QString& runId);
    QTableView* view() const { return m_view; }

Q_SIGNALS:
    void shownChanged(const QString& runId, bool shown);
    void openRequested(const QString& runId);
    void renameRequested(const QString& runId, const QString& name);
    void tagsRequested(const QString& runId, const QString& tags);  // as typed: comma-separated
    void noteRequested(const QString& runId, const QString& note);
    void deleteRequested(const QStringList& runIds);
    void refreshRequested();

private:
    void showMenu(const QPoint& position);
    void editNote(const QString& runId);
    void editCell(const QString& runId, Column column);
    void updateSummary();
    void fitColumns();
    void updateButtons();

    RunsTableModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QTableView* m_view = nullptr;
    QLineEdit* m_filter = nullptr;
    QLabel* m_summary = nullptr;
    QPushButton* m_open = nullptr;
    QPushButton* m_note = nullptr;
    QPushButton* m_delete = nullptr;
    QString m_folder;
};

}  // namespace widelab
