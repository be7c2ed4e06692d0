#include "RunsTable.h"

#include "curves/CurveMath.h"

#include <QAbstractTableModel>
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStyle>
#include <QTableView>
#include <QVBoxLayout>

#include <limits>

namespace widelab {
namespace {

constexpr int kSortRole = Qt::UserRole + 1;
constexpr int kIdRole = Qt::UserRole + 2;
constexpr int kSearchRole = Qt::UserRole + 3;

QString columnTitle(int column)
{
    switch (column) {
    case RunsTable::Shown: return QObject::tr("Shown");
    case RunsTable::Name: return QObject::tr("Name");
    case RunsTable::Family: return QObject::tr("Family");
    case RunsTable::Model: return QObject::tr("Model");
    case RunsTable::State: return QObject::tr("State");
    case RunsTable::Steps: return QObject::tr("Steps");
    case RunsTable::BestLoss: return QObject::tr("Val. loss");
    case RunsTable::BestScore: return QObject::tr("Val. score");
    case RunsTable::Speed: return QObject::tr("Tokens/s");
    case RunsTable::Updated: return QObject::tr("Updated");
    case RunsTable::Tags: return QObject::tr("Tags");
    default: return {};
    }
}

QString columnTip(int column)
{
    switch (column) {
    case RunsTable::Shown: return QObject::tr("Ticked: the run is in the Runs panel and drawn in the charts, followed live");
    case RunsTable::Name: return QObject::tr("Your name for the run (F2 renames it), else its folder's; stored in the run's notes.json");
    case RunsTable::Model: return QObject::tr("Blocks x heads, experts, paths, attention");
    case RunsTable::BestLoss: return QObject::tr("The lowest validation loss");
    case RunsTable::BestScore: return QObject::tr("The highest validation accuracy, or BLEU for translation");
    case RunsTable::Updated: return QObject::tr("When the run last wrote its metrics or status");
    case RunsTable::Tags: return QObject::tr("Comma-separated (F2 on the column edits them); stored in the run's notes.json");
    default: return {};
    }
}

QString groupedInteger(qint64 value) { return QLocale(QLocale::English).toString(value); }

QString stepsText(const RunRow& row)
{
    return row.totalSteps > 0 ? QObject::tr("%1 / %2").arg(groupedInteger(row.step), groupedInteger(row.totalSteps))
                              : groupedInteger(row.step);
}

QString scoreText(const RunRow& row)
{
    if (!row.bestScore)
        return {};
    return row.scoreIsBleu ? QObject::tr("%1 BLEU").arg(*row.bestScore, 0, 'f', 2)
                           : QObject::tr("%1 %").arg(*row.bestScore * 100.0, 0, 'f', 1);
}

// What the filter looks in: every word of a row a user may type.
QString searchText(const RunRow& row)
{
    return QStringList{row.name, QDir(row.id).dirName(), row.family, row.model, row.state, row.tags.join(QLatin1Char(' ')),
                       row.note}
        .join(QLatin1Char('\n'));
}

}  // namespace

// The rows as Qt's views read them; edits come out as the table's signals.
class RunsTableModel : public QAbstractTableModel {
public:
    RunsTableModel(RunsTable* table) : QAbstractTableModel(table), m_table(table) {}

    void setRows(const QList<RunRow>& rows)
    {
        // Same runs in the same order: the cells change, the selection and the editor stay.
        const bool sameRuns = rows.size() == m_rows.size()
                              && std::equal(rows.begin(), rows.end(), m_rows.begin(),
                                            [](const RunRow& a, const RunRow& b) { return a.id == b.id; });
        if (sameRuns) {
            for (int i = 0; i < rows.size(); ++i) {
                if (rows[i] == m_rows[i])
                    continue;
                m_rows[i] = rows[i];
                Q_EMIT dataChanged(index(i, 0), index(i, RunsTable::ColumnCount - 1));
            }
            return;
        }
        beginResetModel();
        m_rows = rows;
        endResetModel();
    }
    const QList<RunRow>& rows() const { return m_rows; }

    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : m_rows.size(); }
    int columnCount(const QModelIndex& parent = {}) const override
    {
        return parent.isValid() ? 0 : RunsTable::ColumnCount;
    }

    QVariant headerData(int section, Qt::Orientation orientation, int role) const override
    {
        if (orientation != Qt::Horizontal)
            return {};
        if (role == Qt::DisplayRole)
            return columnTitle(section);
        if (role == Qt::ToolTipRole)
            return columnTip(section);
        return {};
    }

    Qt::ItemFlags flags(const QModelIndex& index) const override
    {
        Qt::ItemFlags flags = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
        if (index.column() == RunsTable::Shown)
            flags |= Qt::ItemIsUserCheckable;
        if (index.column() == RunsTable::Name || index.column() == RunsTable::Tags)
            flags |= Qt::ItemIsEditable;
        return flags;
    }

    QVariant data(const QModelIndex& index, int role) const override
    {
        if (!index.isValid() || index.row() >= m_rows.size())
            return {};
        const RunRow& row = m_rows[index.row()];
        switch (role) {
        case Qt::DisplayRole: return display(row, index.column());
        case Qt::EditRole:
            return index.column() == RunsTable::Tags ? row.tags.join(QStringLiteral(", ")) : display(row, index.column());
        case Qt::CheckStateRole:
            return index.column() == RunsTable::Shown ? QVariant(row.shown ? Qt::Checked : Qt::Unchecked) : QVariant();
        case Qt::ToolTipRole: return tip(row, index.column());
        case Qt::TextAlignmentRole:
            return index.column() >= RunsTable::Steps && index.column() <= RunsTable::Speed
                       ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                       : QVariant();
        case Qt::DecorationRole:
            return index.column() == RunsTable::Name && row.problem
                       ? QVariant(m_table->style()->standardIcon(QStyle::SP_MessageBoxWarning))
                       : QVariant();
        case kSortRole: return sortKey(row, index.column());
        case kIdRole: return row.id;
        case kSearchRole: return searchText(row);
        default: return {};
        }
    }

    bool setData(const QModelIndex& index, const QVariant& value, int role) override
    {
        if (!index.isValid() || index.row() >= m_rows.size())
            return false;
        const QString id = m_rows[index.row()].id;
        // The app writes the run and hands the rows back: nothing changes here.
        if (role == Qt::CheckStateRole && index.column() == RunsTable::Shown)
            Q_EMIT m_table->shownChanged(id, value.toInt() == Qt::Checked);
        else if (role == Qt::EditRole && index.column() == RunsTable::Name)
            Q_EMIT m_table->renameRequested(id, value.toString().trimmed());
        else if (role == Qt::EditRole && index.column() == RunsTable::Tags)
            Q_EMIT m_table->tagsRequested(id, value.toString());
        else
            return false;
        return true;
    }

private:
    static QString display(const RunRow& row, int column)
    {
        switch (column) {
        case RunsTable::Name: return row.note.isEmpty() ? row.name : row.name + QStringLiteral(" \u270e");
        case RunsTable::Family: return row.family;
        case RunsTable::Model: return row.model;
        case RunsTable::State: return row.state.isEmpty() ? QStringLiteral("\u2014") : row.state;
        case RunsTable::Steps: return stepsText(row);
        case RunsTable::BestLoss: return row.bestLoss ? QString::number(*row.bestLoss, 'f', 3) : QString();
        case RunsTable::BestScore: return scoreText(row);
        case RunsTable::Speed: return row.tokensPerSecond ? curvemath::formatCount(*row.tokensPerSecond) : QString();
        case RunsTable::Updated:
            return row.updated.isValid() ? QLocale().toString(row.updated, QLocale::ShortFormat) : QString();
        case RunsTable::Tags: return row.tags.join(QStringLiteral(", "));
        default: return {};
        }
    }

    static QString tip(const RunRow& row, int column)
    {
        if (column == RunsTable::Name) {
            QStringList lines{QDir::toNativeSeparators(row.id)};
            if (!row.note.isEmpty())
                lines << row.note;
            if (row.problem)
                lines << row.details;
            return lines.join(QLatin1Char('\n'));
        }
        if (column == RunsTable::State)
            return row.details;
        return {};
    }

    // Missing values sort after every value, in either order's first pass.
    static QVariant sortKey(const RunRow& row, int column)
    {
        const auto number = [](std::optional<double> v, double missing) { return v.value_or(missing); };
        switch (column) {
        case RunsTable::Shown: return row.shown ? 1 : 0;
        case RunsTable::Steps: return row.step;
        case RunsTable::BestLoss: return number(row.bestLoss, std::numeric_limits<double>::infinity());
        case RunsTable::BestScore: return number(row.bestScore, -1.0);
        case RunsTable::Speed: return number(row.tokensPerSecond, -1.0);
        case RunsTable::Updated: return row.updated.isValid() ? row.updated.toSecsSinceEpoch() : 0;
        default: return display(row, column).toLower();
        }
    }

    RunsTable* m_table;
    QList<RunRow> m_rows;
};

namespace {

// Every word of the filter, anywhere in the row (case aside).
class RunsFilter : public QSortFilterProxyModel {
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;

    void setWords(const QString& text)
    {
        m_words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
        invalidateFilter();
    }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& parent) const override
    {
        const QString text = sourceModel()->index(sourceRow, 0, parent).data(kSearchRole).toString();
        return std::all_of(m_words.begin(), m_words.end(),
                           [&](const QString& word) { return text.contains(word, Qt::CaseInsensitive); });
    }

private:
    QStringList m_words;
};

}  // namespace

RunsTable::RunsTable(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* top = new QHBoxLayout;
    m_filter = new QLineEdit(this);
    m_filter->setPlaceholderText(tr("Filter: words in a name, family, model, state, tag or note"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setAccessibleName(tr("Filter runs"));
    top->addWidget(m_filter, 1);
    m_open = new QPushButton(tr("&Open"), this);
    m_open->setToolTip(tr("Open the run: its configuration, log and insights (Return)"));
    m_note = new QPushButton(tr("&Note..."), this);
    m_note->setToolTip(tr("Write a note about the run, kept in its folder"));
    m_delete = new QPushButton(tr("&Delete..."), this);
    m_delete->setToolTip(tr("Move the selected runs to the trash, after asking (Delete)"));
    auto* refresh = new QPushButton(tr("&Refresh"), this);
    refresh->setToolTip(tr("Read the folder again now (it is read every few seconds while shown)"));
    for (QPushButton* button : {m_open, m_note, m_delete, refresh})
        top->addWidget(button);
    layout->addLayout(top);
    m_summary = new QLabel(this);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);

    m_model = new RunsTableModel(this);
    auto* proxy = new RunsFilter(this);
    m_proxy = proxy;
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(kSortRole);
    m_view = new QTableView(this);
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(Updated, Qt::DescendingOrder);  // the latest first
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setEditTriggers(QAbstractItemView::EditKeyPressed);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    m_view->setWordWrap(false);
    m_view->setTextElideMode(Qt::ElideRight);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 8);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setAccessibleName(tr("Runs in the workspace folder"));
    layout->addWidget(m_view, 1);

    connect(m_filter, &QLineEdit::textChanged, this, [this, proxy](const QString& text) {
        proxy->setWords(text);
        updateSummary();
    });
    connect(m_view, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        if (index.column() != Shown)
            Q_EMIT openRequested(index.data(kIdRole).toString());
    });
    connect(m_view, &QWidget::customContextMenuRequested, this, &RunsTable::showMenu);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunsTable::updateButtons);
    connect(m_open, &QPushButton::clicked, this, [this] {
        if (const QStringList ids = selectedRunIds(); !ids.isEmpty())
            Q_EMIT openRequested(ids.first());
    });
    connect(m_note, &QPushButton::clicked, this, [this] {
        if (const QStringList ids = selectedRunIds(); !ids.isEmpty())
            editNote(ids.first());
    });
    connect(m_delete, &QPushButton::clicked, this, [this] {
        if (const QStringList ids = selectedRunIds(); !ids.isEmpty())
            Q_EMIT deleteRequested(ids);
    });
    connect(refresh, &QPushButton::clicked, this, &RunsTable::refreshRequested);
    // Return opens, Delete deletes (after the app asks), on the table.
    // Named as the app's shortcut sheet lists them.
    auto* openKey = new QAction(tr("Open Run"), this);
    openKey->setObjectName(QStringLiteral("workspaceOpen"));
    openKey->setShortcuts({QKeySequence(Qt::Key_Return), QKeySequence(Qt::Key_Enter)});
    openKey->setShortcutContext(Qt::WidgetShortcut);
    connect(openKey, &QAction::triggered, m_open, &QPushButton::click);
    auto* deleteKey = new QAction(tr("Delete Runs"), this);
    deleteKey->setObjectName(QStringLiteral("workspaceDelete"));
    deleteKey->setShortcut(QKeySequence::Delete);
    deleteKey->setShortcutContext(Qt::WidgetShortcut);
    connect(deleteKey, &QAction::triggered, m_delete, &QPushButton::click);
    m_view->addActions({openKey, deleteKey});
    updateSummary();
    updateButtons();
}

void RunsTable::setRows(const QList<RunRow>& rows)
{
    const QStringList selected = selectedRunIds();
    const bool newRuns = rows.size() != m_model->rows().size()
                         || !std::equal(rows.begin(), rows.end(), m_model->rows().begin(),
                                        [](const RunRow& a, const RunRow& b) { return a.id == b.id; });
    m_model->setRows(rows);
    if (newRuns)
        fitColumns();
    if (selectedRunIds() != selected) {  // a reset dropped it
        for (const QString& id : selected)
            selectRun(id);
    }
    updateSummary();
    updateButtons();
}

const QList<RunRow>& RunsTable::rows() const { return m_model->rows(); }

// Each column as wide as its heading and cells, a long name or model cut at a
// width that leaves the rest in view (the tooltip and the filter have it whole).
// Only when runs come or go, so that a column the user widened stays so.
void RunsTable::fitColumns()
{
    m_view->resizeColumnsToContents();
    const int em = fontMetrics().horizontalAdvance(QLatin1Char('M'));
    for (const auto& [column, widest] : {std::pair{Name, 18}, {Model, 20}, {Family, 10}})
        m_view->setColumnWidth(column, std::min(m_view->columnWidth(column), widest * em));
}

void RunsTable::setFolder(const QString& folder)
{
    m_folder = folder;
    updateSummary();
}

void RunsTable::setFilter(const QString& text) { m_filter->setText(text); }

int RunsTable::visibleRowCount() const { return m_proxy->rowCount(); }

QString RunsTable::visibleCell(int row, Column column) const
{
    return m_proxy->index(row, column).data(Qt::DisplayRole).toString();
}

QString RunsTable::visibleRunId(int row) const { return m_proxy->index(row, 0).data(kIdRole).toString(); }

QString RunsTable::summaryText() const { return m_summary->text(); }

QStringList RunsTable::selectedRunIds() const
{
    QStringList ids;
    for (const QModelIndex& index : m_view->selectionModel()->selectedRows())
        ids << index.data(kIdRole).toString();
    return ids;
}

void RunsTable::selectRun(const QString& runId)
{
    for (int row = 0; row < m_proxy->rowCount(); ++row) {
        if (visibleRunId(row) == runId) {
            m_view->selectionModel()->select(m_proxy->index(row, 0),
                                             QItemSelectionModel::Select | QItemSelectionModel::Rows);
            m_view->scrollTo(m_proxy->index(row, 0));
            return;
        }
    }
}

void RunsTable::showMenu(const QPoint& position)
{
    const QModelIndex index = m_view->indexAt(position);
    if (!index.isValid())
        return;
    if (!m_view->selectionModel()->isRowSelected(index.row(), QModelIndex())) {
        m_view->clearSelection();
        m_view->selectionModel()->select(index, QItemSelectionModel::Select | QItemSelectionModel::Rows);
    }
    const QString id = index.data(kIdRole).toString();
    const bool shown = m_proxy->index(index.row(), Shown).data(Qt::CheckStateRole).toInt() == Qt::Checked;
    QMenu menu(this);
    menu.addAction(tr("Open"), this, [this, id] { Q_EMIT openRequested(id); });
    menu.addAction(shown ? tr("Remove from the Charts") : tr("Show in the Charts"), this,
                   [this, id, shown] { Q_EMIT shownChanged(id, !shown); });
    menu.addSeparator();
    menu.addAction(tr("Rename"), this, [this, id] { editCell(id, Name); });
    menu.addAction(tr("Edit Tags"), this, [this, id] { editCell(id, Tags); });
    menu.addAction(tr("Note..."), this, [this, id] { editNote(id); });
    menu.addAction(tr("Copy Path"), this, [id] { QApplication::clipboard()->setText(QDir::toNativeSeparators(id)); });
    menu.addSeparator();
    menu.addAction(tr("Delete..."), this, [this] { Q_EMIT deleteRequested(selectedRunIds()); });
    menu.exec(m_view->viewport()->mapToGlobal(position));
}

void RunsTable::editCell(const QString& runId, Column column)
{
    for (int row = 0; row < m_proxy->rowCount(); ++row)
        if (visibleRunId(row) == runId)
            m_view->edit(m_proxy->index(row, column));
}

void RunsTable::editNote(const QString& runId)
{
    const auto it = std::find_if(rows().begin(), rows().end(), [&](const RunRow& r) { return r.id == runId; });
    if (it == rows().end())
        return;
    bool ok = false;
    const QString note = QInputDialog::getMultiLineText(this, tr("Note on %1").arg(it->name),
                                                        tr("A note about the run, kept in its folder (notes.json):"),
                                                        it->note, &ok);
    if (ok && note != it->note)
        Q_EMIT noteRequested(runId, note);
}

void RunsTable::updateSummary()
{
    const int total = m_model->rowCount();
    const int shown = static_cast<int>(std::count_if(rows().begin(), rows().end(), [](const RunRow& r) { return r.shown; }));
    const QString folder = QDir::toNativeSeparators(m_folder);
    QString text = total == 1 ? tr("1 run in %1").arg(folder) : tr("%1 runs in %2").arg(total).arg(folder);
    if (shown > 0)
        text += tr(", %1 shown in the charts").arg(shown);
    if (visibleRowCount() != total)
        text += tr("; %1 match the filter").arg(visibleRowCount());
    if (total == 0)
        text += tr(". Runs you train go here (File > Folder for New Runs changes it).");
    m_summary->setText(text);
}

void RunsTable::updateButtons()
{
    const bool any = !selectedRunIds().isEmpty();
    for (QPushButton* button : {m_open, m_note, m_delete})
        button->setEnabled(any);
}

}  // namespace widelab
