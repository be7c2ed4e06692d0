#include "ShortcutSheet.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLineEdit>
#include <QTableWidget>
#include <QVBoxLayout>

namespace widelab {

ShortcutSheet::ShortcutSheet(const QList<Row>& rows, QWidget* parent)
    : QDialog(parent)
{
    setObjectName(QStringLiteral("shortcutSheet"));
    setWindowTitle(tr("Keyboard Shortcuts"));

    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("shortcutFilter"));
    m_filter->setPlaceholderText(tr("Filter: an action, a key or a word"));
    m_filter->setAccessibleName(tr("Filter the shortcuts"));
    m_filter->setClearButtonEnabled(true);

    m_table = new QTableWidget(static_cast<int>(rows.size()), 3, this);
    m_table->setObjectName(QStringLiteral("shortcutTable"));
    m_table->setAccessibleName(tr("Keyboard shortcuts"));
    m_table->setHorizontalHeaderLabels({tr("Action"), tr("Key"), tr("What it does")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setWordWrap(true);
    for (int r = 0; r < rows.size(); ++r) {
        const Row& row = rows[r];
        const QStringList cells{row.action, row.key, row.description};
        for (int c = 0; c < cells.size(); ++c)
            m_table->setItem(r, c, new QTableWidgetItem(cells[c]));
    }
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_filter, &QLineEdit::textChanged, this, &ShortcutSheet::setFilter);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_filter);
    layout->addWidget(m_table, 1);
    layout->addWidget(buttons);
    resize(760, 560);
}

void ShortcutSheet::setFilter(const QString& text)
{
    if (m_filter->text() != text) {
        m_filter->setText(text);  // comes back here through textChanged
        return;
    }
    const QString needle = text.trimmed();
    for (int r = 0; r < m_table->rowCount(); ++r) {
        bool shown = needle.isEmpty();
        for (int c = 0; c < m_table->columnCount() && !shown; ++c)
            shown = m_table->item(r, c)->text().contains(needle, Qt::CaseInsensitive);
        m_table->setRowHidden(r, !shown);
    }
}

int ShortcutSheet::visibleRows() const
{
    int shown = 0;
    for (int r = 0; r < m_table->rowCount(); ++r)
        shown += m_table->isRowHidden(r) ? 0 : 1;
    return shown;
}

}  // namespace widelab
