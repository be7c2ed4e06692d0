#include "ConfigDiffDialog.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace widelab {

ConfigDiffDialog::ConfigDiffDialog(const QList<Row>& rows, const QString& titleA, const QString& titleB, QWidget* parent)
    : QDialog(parent)
{
    setObjectName(QStringLiteral("configDiff"));
    setWindowTitle(tr("Configurations compared"));

    auto* summary = new QLabel(this);
    summary->setObjectName(QStringLiteral("configDiffSummary"));
    summary->setWordWrap(true);
    summary->setText(rows.isEmpty()    ? tr("No key differs between %1 and %2, defaults and derived keys included.")
                                                 .arg(titleA, titleB)
                     : rows.size() == 1 ? tr("1 key differs between %1 and %2, defaults and derived keys included:")
                                              .arg(titleA, titleB)
                                        : tr("%1 keys differ between %2 and %3, defaults and derived keys included:")
                                              .arg(rows.size())
                                              .arg(titleA, titleB));

    m_table = new QTableWidget(static_cast<int>(rows.size()), 3, this);
    m_table->setObjectName(QStringLiteral("configDiffTable"));
    m_table->setAccessibleName(tr("Keys that differ"));
    m_table->setHorizontalHeaderLabels({tr("Key"), titleA, titleB});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setWordWrap(false);
    const QString none = tr("(not set)");
    for (int r = 0; r < rows.size(); ++r) {
        const QStringList cells{rows[r].key, rows[r].a.isEmpty() ? none : rows[r].a, rows[r].b.isEmpty() ? none : rows[r].b};
        for (int c = 0; c < 3; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setToolTip(cells[c]);  // a long value (a description) whole
            m_table->setItem(r, c, item);
        }
    }
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(0, Qt::AscendingOrder);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    QPushButton* copy = buttons->addButton(tr("&Copy"), QDialogButtonBox::ActionRole);
    copy->setToolTip(tr("The table as tab-separated text, for a spreadsheet or a note"));
    connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(tableText()); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(summary);
    layout->addWidget(m_table, 1);
    layout->addWidget(buttons);
    resize(820, 480);
}

int ConfigDiffDialog::rowCount() const { return m_table->rowCount(); }

QString ConfigDiffDialog::cell(int row, int column) const
{
    const QTableWidgetItem* item = m_table->item(row, column);
    return item ? item->text() : QString();
}

QString ConfigDiffDialog::tableText() const
{
    QStringList lines;
    QStringList header;
    for (int c = 0; c < m_table->columnCount(); ++c)
        header << m_table->horizontalHeaderItem(c)->text();
    lines << header.join(QLatin1Char('\t'));
    for (int r = 0; r < m_table->rowCount(); ++r)
        lines << QStringList{cell(r, 0), cell(r, 1), cell(r, 2)}.join(QLatin1Char('\t'));
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

}  // namespace widelab
