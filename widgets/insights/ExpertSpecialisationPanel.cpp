#include "ExpertSpecialisationPanel.h"

#include "AlarmList.h"
#include "ColorScale.h"
#include "common/Elements.h"
#include "common/Palette.h"
#include "common/ViewExport.h"
#include "vocab/ByteText.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QStackedWidget>
#include <QStyledItemDelegate>
#include <QTableWidget>
#include <QVBoxLayout>

namespace widelab {

using viewexport::csvField;

namespace {

constexpr int kSharesRole = Qt::UserRole + 1;

// Draws a cell's class shares (kSharesRole) as one bar, a segment per class.
class ClassMixDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override
    {
        QStyledItemDelegate::paint(painter, option, index);
        const QVariantList shares = index.data(kSharesRole).toList();
        if (shares.isEmpty())
            return;
        const QRectF bar = QRectF(option.rect).adjusted(4, 4, -4, -4);
        double x = bar.left();
        painter->save();
        for (int c = 0; c < shares.size(); ++c) {
            const double w = bar.width() * shares[c].toDouble();
            painter->fillRect(QRectF(x, bar.top(), w, bar.height()), colorscale::categorical(c));
            x += w;
        }
        painter->setPen(option.palette.color(QPalette::Mid));
        painter->drawRect(bar);
        painter->restore();
    }
};

// A token as the table shows it: its bytes made legible (ByteText.h), then visible.
QString tokenText(const std::string& token) { return visibleToken(QString::fromStdString(legibleBytes(token))); }

QString countsText(const std::vector<std::pair<std::string, std::int64_t>>& tokens, int limit)
{
    QStringList parts;
    for (std::size_t i = 0; i < tokens.size() && (limit < 0 || static_cast<int>(i) < limit); ++i)
        parts << QStringLiteral("%1 ×%2").arg(tokenText(tokens[i].first)).arg(tokens[i].second);
    return parts.join(QStringLiteral("   "));
}

// The name of class `c` of a validation (its number when the run did not name it).
QString className(const ValidationInsights& insight, std::int64_t c)
{
    return c >= 0 && c < static_cast<std::int64_t>(insight.classNames.size())
               ? QString::fromStdString(insight.classNames[static_cast<std::size_t>(c)])
               : QString::number(c);
}

}  // namespace

ExpertSpecialisationPanel::ExpertSpecialisationPanel(QWidget* parent) : QWidget(parent)
{
    m_block = new QComboBox(this);
    m_block->setAccessibleName(tr("Routing block whose experts are shown"));
    m_title = new QLabel(this);
    m_title->setWordWrap(true);
    m_legend = new QLabel(this);
    m_legend->setWordWrap(true);
    m_legend->setTextFormat(Qt::RichText);
    m_empty = new QLabel(this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_table = new QTableWidget(this);
    m_table->setAccessibleName(tr("What each expert receives"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->setItemDelegateForColumn(2, new ClassMixDelegate(m_table));
    m_table->setWordWrap(false);

    auto* body = new QWidget;
    auto* bodyLayout = new QVBoxLayout(body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    auto* controls = new QHBoxLayout;
    auto* label = new QLabel(tr("Experts of &block:"));
    label->setBuddy(m_block);
    controls->addWidget(label);
    controls->addWidget(m_block);
    controls->addWidget(m_title, 1);
    bodyLayout->addLayout(controls);
    bodyLayout->addWidget(m_legend);
    bodyLayout->addWidget(m_table, 1);
    m_stack = new QStackedWidget(this);
    m_stack->addWidget(m_empty);
    m_stack->addWidget(body);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_stack);
    connect(m_block, &QComboBox::currentIndexChanged, this, [this] {
        showBlock();
        Q_EMIT blockChanged();
    });
}

void ExpertSpecialisationPanel::setBlock(int block) { m_block->setCurrentIndex(m_block->findData(block)); }
int ExpertSpecialisationPanel::block() const { return m_block->currentData().toInt(); }

const ExpertIntake* ExpertSpecialisationPanel::chosen() const
{
    if (!m_insight)
        return nullptr;
    for (const ExpertIntake& s : m_insight->experts)
        if (s.block == block())
            return &s;
    return nullptr;
}

void ExpertSpecialisationPanel::show(const ValidationInsights* insight, const QVector<HealthEvent>& active,
                                     const QString& why)
{
    m_active = active;
    if (insight == nullptr || insight->experts.empty()) {
        m_insight.reset();
        m_empty->setText(why);
        m_stack->setCurrentWidget(m_empty);
        return;
    }
    m_insight = *insight;
    QVector<int> blocks;
    for (const ExpertIntake& s : insight->experts)
        blocks << static_cast<int>(s.block);
    QVector<int> held;
    for (int i = 0; i < m_block->count(); ++i)
        held << m_block->itemData(i).toInt();
    if (held != blocks) {
        const int current = block();
        const QSignalBlocker blocker(m_block);
        m_block->clear();
        for (int b : blocks)
            m_block->addItem(QString::number(b + 1), b);
        m_block->setCurrentIndex(std::max(0, m_block->findData(current)));
    }
    m_stack->setCurrentIndex(1);
    showBlock();
}

void ExpertSpecialisationPanel::showBlock()
{
    const ExpertIntake* s = chosen();
    m_table->clearContents();
    m_table->setRowCount(0);
    if (s == nullptr)
        return;
    // Classes are drawn where the block counted them (a classifier's validation).
    const bool classes = !s->classCounts.empty() && !m_insight->classNames.empty();
    m_title->setText(tr("Validation at step %1: the tokens each expert of block %2 received over the validation sample")
                         .arg(m_insight->step)
                         .arg(s->block + 1));
    QStringList keys;
    for (int c = 0; classes && c < static_cast<int>(m_insight->classNames.size()); ++c)
        keys << QStringLiteral("<span style=\"color:%1\">■</span>&nbsp;%2")
                    .arg(colorscale::categorical(c).name(), className(*m_insight, c).toHtmlEscaped());
    m_legend->setText(classes ? tr("Class mix: ") + keys.join(QStringLiteral(" &nbsp; ")) : QString());
    m_legend->setVisible(classes);

    QStringList headers{tr("Expert"), tr("Tokens"), tr("Class mix"), tr("Most frequent tokens (count)")};
    m_table->setColumnCount(static_cast<int>(headers.size()));
    m_table->setHorizontalHeaderLabels(headers);
    m_table->horizontalHeaderItem(1)->setToolTip(tr("Tokens the expert received over the validation sample"));
    m_table->horizontalHeaderItem(2)->setToolTip(tr("The classes of the examples its tokens come from"));
    m_table->setColumnHidden(2, !classes);
    const int experts = static_cast<int>(std::max(s->topTokens.size(), s->classCounts.size()));
    m_table->setRowCount(experts);
    const QColor flagged = palette::blend(palette().color(QPalette::Base), palette::seriesColor(5), 0.3);
    for (int e = 0; e < experts; ++e) {
        const std::vector<std::int64_t> counts = valueAt(s->classCounts, e);
        qint64 total = 0;
        for (const std::int64_t n : counts)
            total += n;
        const bool alarmed = hasAlarm(m_active, QStringLiteral("dead expert"), s->block, e)
                             || hasAlarm(m_active, QStringLiteral("collapse"), s->block, e);
        auto* expert = new QTableWidgetItem((alarmed ? QStringLiteral("⚠ ") : QString()) + QString::number(e + 1));
        expert->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        if (alarmed) {
            expert->setBackground(flagged);
            expert->setToolTip(tr("An alarm about this expert is in force"));
        }
        m_table->setItem(e, 0, expert);
        auto* tokens = new QTableWidgetItem(classes ? QString::number(total) : QString());
        tokens->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(e, 1, tokens);
        auto* mix = new QTableWidgetItem;
        if (classes && total > 0) {
            QVariantList shares;
            QStringList lines;
            for (std::size_t c = 0; c < counts.size(); ++c) {
                const double share = double(counts[c]) / double(total);
                shares << share;
                lines << tr("%1: %2 tokens (%3%)")
                             .arg(className(*m_insight, static_cast<std::int64_t>(c)))
                             .arg(counts[c])
                             .arg(QString::number(100.0 * share, 'f', 1));
            }
            mix->setData(kSharesRole, shares);
            mix->setToolTip(tr("Expert %1 of block %2:\n").arg(e + 1).arg(s->block + 1) + lines.join(QLatin1Char('\n')));
        } else if (classes) {
            mix->setText(tr("no tokens"));
        }
        m_table->setItem(e, 2, mix);
        const std::vector<std::pair<std::string, std::int64_t>> top = valueAt(s->topTokens, e);
        auto* text = new QTableWidgetItem(top.empty() ? tr("no tokens") : countsText(top, kTokensInCell));
        text->setToolTip(countsText(top, -1));
        m_table->setItem(e, 3, text);
    }
    m_table->resizeColumnsToContents();
    m_table->setColumnWidth(2, std::max(240, m_table->columnWidth(2)));
    m_table->horizontalHeader()->setStretchLastSection(true);
}

QVector<double> ExpertSpecialisationPanel::classShares(int expert) const
{
    QVector<double> out;
    if (QTableWidgetItem* item = m_table->item(expert, 2))
        for (const QVariant& v : item->data(kSharesRole).toList())
            out << v.toDouble();
    return out;
}

QByteArray ExpertSpecialisationPanel::csv(const QString& runLabel) const
{
    QByteArray out = "run,step,block,expert,what,name,count\n";
    const ExpertIntake* s = chosen();
    if (s == nullptr)
        return out;
    const QByteArray prefix = csvField(runLabel) + ',' + QByteArray::number(m_insight->step) + ','
                              + QByteArray::number(s->block + 1) + ',';
    for (std::size_t e = 0; e < s->topTokens.size(); ++e)
        for (const auto& [token, count] : s->topTokens[e])
            out += prefix + QByteArray::number(e + 1) + ",token," + csvField(QString::fromStdString(legibleBytes(token))) + ','
                   + QByteArray::number(count) + '\n';
    for (std::size_t e = 0; e < s->classCounts.size(); ++e)
        for (std::size_t c = 0; c < s->classCounts[e].size(); ++c)
            out += prefix + QByteArray::number(e + 1) + ",class,"
                   + csvField(className(*m_insight, static_cast<std::int64_t>(c))) + ','
                   + QByteArray::number(s->classCounts[e][c]) + '\n';
    return out;
}

}  // namespace widelab
