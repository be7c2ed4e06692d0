#include "MetricChooser.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace widelab {

MetricChooser::MetricChooser(const QStringList& available, const QStringList& charted, QWidget* parent)
    : QDialog(parent), m_charted(charted)
{
    setWindowTitle(tr("Charts"));
    setObjectName(QStringLiteral("metricChooser"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Tick a metric to give it a chart of its own, in every run that writes it. The tags "
                                "are TensorBoard's (docs/tensorboard.md): block_2 is the second block."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    m_filter = new QLineEdit(this);
    m_filter->setPlaceholderText(tr("Filter: routing, experts/block_2, memory, paths, divergence, ..."));
    m_filter->setClearButtonEnabled(true);
    m_filter->setAccessibleName(tr("Filter metrics"));
    layout->addWidget(m_filter);
    m_list = new QListWidget(this);
    m_list->setAccessibleName(tr("Metrics"));
    QStringList tags = available;
    for (const QString& tag : charted)
        if (!tags.contains(tag))
            tags << tag;  // charted, though no run shown writes it now
    tags.sort();
    for (const QString& tag : std::as_const(tags)) {
        auto* item = new QListWidgetItem(tag, m_list);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(charted.contains(tag) ? Qt::Checked : Qt::Unchecked);
    }
    layout->addWidget(m_list, 1);
    m_count = new QLabel(this);
    layout->addWidget(m_count);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_filter, &QLineEdit::textChanged, this, &MetricChooser::setFilter);
    connect(m_list, &QListWidget::itemChanged, this, &MetricChooser::updateCount);
    resize(460, 520);
    updateCount();
}

QStringList MetricChooser::chosen() const
{
    QStringList ticked;
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->checkState() == Qt::Checked)
            ticked << m_list->item(i)->text();
    QStringList order;
    for (const QString& tag : m_charted)
        if (ticked.contains(tag))
            order << tag;
    for (const QString& tag : std::as_const(ticked))
        if (!order.contains(tag))
            order << tag;
    return order;
}

void MetricChooser::setFilter(const QString& text)
{
    const QStringList words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    for (int i = 0; i < m_list->count(); ++i) {
        QListWidgetItem* item = m_list->item(i);
        const bool match = std::all_of(words.begin(), words.end(), [&](const QString& word) {
            return item->text().contains(word, Qt::CaseInsensitive);
        });
        item->setHidden(!match);
    }
    updateCount();
}

void MetricChooser::setTicked(const QString& tag, bool ticked)
{
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->text() == tag)
            m_list->item(i)->setCheckState(ticked ? Qt::Checked : Qt::Unchecked);
}

int MetricChooser::visibleCount() const
{
    int shown = 0;
    for (int i = 0; i < m_list->count(); ++i)
        shown += m_list->item(i)->isHidden() ? 0 : 1;
    return shown;
}

void MetricChooser::updateCount()
{
    int ticked = 0;
    for (int i = 0; i < m_list->count(); ++i)
        ticked += m_list->item(i)->checkState() == Qt::Checked ? 1 : 0;
    m_count->setText(tr("%1 metrics, %2 shown by the filter, %3 charted").arg(m_list->count()).arg(visibleCount()).arg(ticked));
}

}  // namespace widelab
