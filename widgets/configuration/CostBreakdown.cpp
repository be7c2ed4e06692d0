#include "CostBreakdown.h"

#include "vocab/Format.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace widelab {
namespace {

enum Column { Part, Stored, Active, Applied, Flops, Share, ColumnCount };

QTableWidgetItem* cell(const QString& text, bool number, bool bold)
{
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    item->setTextAlignment(number ? Qt::AlignRight | Qt::AlignVCenter : Qt::AlignLeft | Qt::AlignVCenter);
    if (bold) {
        QFont font = item->font();
        font.setBold(true);
        item->setFont(font);
    }
    return item;
}

}  // namespace

CostBreakdown::CostBreakdown(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_note = new QLabel(this);
    m_note->setWordWrap(true);
    m_note->setVisible(false);
    layout->addWidget(m_note);

    m_table = new QTableWidget(0, ColumnCount, this);
    m_table->setAccessibleName(tr("Parameters and FLOPs by part"));
    m_table->setHorizontalHeaderLabels({tr("Part"), tr("Stored"), tr("Active"), tr("Applied"), tr("FLOPs/token"),
                                        tr("FLOPs share")});
    const QStringList tips = {
        tr("A part of the model"),
        tr("Trainable parameters that exist; a shared module counts once"),
        tr("Stored, with only top_k of the experts: what one token can touch"),
        tr("What one token passes through on its way up, a shared module once for every block that uses it"),
        tr("Forward FLOPs per token (matrix products; a multiply-add is 2) at a sequence of max_len tokens"),
        tr("The part's share of the forward FLOPs per token")};
    for (int column = 0; column < ColumnCount; ++column)
        m_table->horizontalHeaderItem(column)->setToolTip(tips.value(column));
    m_table->verticalHeader()->setVisible(false);
    // Rows as tall as a line of text: the table shares the room above the form
    // with the diagram, and every row should show.
    m_table->verticalHeader()->setMinimumSectionSize(fontMetrics().height() + 4);
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    m_table->setContextMenuPolicy(Qt::ActionsContextMenu);
    auto* copyAction = new QAction(tr("&Copy Table"), m_table);
    copyAction->setObjectName(QStringLiteral("copyBreakdown"));  // its key is listed in the app's shortcut sheet
    copyAction->setShortcut(QKeySequence::Copy);
    copyAction->setShortcutContext(Qt::WidgetShortcut);
    connect(copyAction, &QAction::triggered, this, &CostBreakdown::copy);
    m_table->addAction(copyAction);
    layout->addWidget(m_table, 1);
    setParts({}, CostPart{});
}

void CostBreakdown::setParts(const QList<CostPart>& parts, const CostPart& total)
{
    m_table->setRowCount(0);
    if (parts.isEmpty()) {
        m_note->setText(tr("Not computed yet: the breakdown appears once the configuration is valid."));
        m_note->setVisible(true);
        return;
    }
    const QLocale locale;
    auto addRow = [&](const CostPart& part, bool bold) {
        const int row = m_table->rowCount();
        m_table->insertRow(row);
        const double share = total.flopsPerToken > 0 ? 100.0 * part.flopsPerToken / total.flopsPerToken : 0.0;
        m_table->setItem(row, Part, cell(part.part, false, bold));
        m_table->setItem(row, Stored, cell(locale.toString(part.stored), true, bold));
        m_table->setItem(row, Active, cell(locale.toString(part.active), true, bold));
        m_table->setItem(row, Applied, cell(locale.toString(part.applied), true, bold));
        m_table->setItem(row, Flops, cell(QString::fromStdString(shortCount(part.flopsPerToken)), true, bold));
        m_table->setItem(row, Share, cell(QString::number(share, 'f', 1) + QLatin1Char('%'), true, bold));
    };
    for (const CostPart& part : parts)
        if (part.stored != 0 || part.applied != 0)
            addRow(part, false);
    addRow(total, true);
    setStale(m_stale);
}

void CostBreakdown::setCost(const CostSummary& cost)
{
    setParts(cost.parts, CostPart{tr("total"), cost.stored, cost.active, cost.applied, cost.flopsPerToken});
}

void CostBreakdown::setStale(bool stale)
{
    m_stale = stale;
    if (m_table->rowCount() == 0)
        return;
    m_note->setText(tr("The last valid model: the form has problems."));
    m_note->setVisible(stale);
    m_table->setEnabled(!stale);
}

QString CostBreakdown::toTsv() const
{
    QStringList lines;
    QStringList header;
    for (int column = 0; column < ColumnCount; ++column)
        header << m_table->horizontalHeaderItem(column)->text();
    lines << header.join(QLatin1Char('\t'));
    for (int row = 0; row < m_table->rowCount(); ++row) {
        QStringList cells;
        for (int column = 0; column < ColumnCount; ++column)
            cells << m_table->item(row, column)->text();
        lines << cells.join(QLatin1Char('\t'));
    }
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

void CostBreakdown::copy() const { QApplication::clipboard()->setText(toTsv()); }

}  // namespace widelab
