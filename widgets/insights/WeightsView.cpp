#include "WeightsView.h"

#include "common/ComboWidth.h"
#include "common/Palette.h"
#include "common/ViewExport.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

const std::vector<ValueHistogram>& histogramsOf(const TrainingSnapshot& state, bool gradients)
{
    return gradients ? state.gradientHistograms : state.weightHistograms;
}

const ValueHistogram* groupIn(const std::vector<ValueHistogram>& histograms, const QString& group)
{
    const std::string name = group.toStdString();
    for (const ValueHistogram& h : histograms)
        if (h.group == name)
            return &h;
    return nullptr;
}

QStringList itemsOf(const QComboBox& box)
{
    QStringList items;
    for (int i = 0; i < box.count(); ++i)
        items << box.itemText(i);
    return items;
}

QCustomPlot* newPlot(QWidget* parent, const QString& name)
{
    auto* plot = new QCustomPlot(parent);
    plot->setAccessibleName(name);
    plot->setMinimumHeight(150);
    plot->yAxis->setNumberFormat("g");
    return plot;
}

}  // namespace

const std::vector<double>& WeightsView::bandFractions()
{
    static const std::vector<double> fractions{0.0, 0.0668, 0.1587, 0.3085, 0.5, 0.6915, 0.8413, 0.9332, 1.0};
    return fractions;
}

WeightsView::WeightsView(QWidget* parent) : InsightPage(parent)
{
    m_empty = new QLabel(this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    auto* note = new QLabel(tr("Each part of the model: a block's attention, its FFN or experts, a LayerNorm, the "
                               "embedding, the head. Left, how its values spread over training: bands from the "
                               "smallest to the largest, 7-93%, 16-84% and 31-69%, the median a line. Right, the "
                               "histogram at the shown step."),
                            this);
    note->setWordWrap(true);
    note->setToolTip(tr("Measured on the first logged step, at each validation and at the end of training. "
                        "Gradients are the step's, before clipping."));
    m_group = new QComboBox(this);
    m_group->setAccessibleName(tr("Parameter group"));
    m_group->setToolTip(tr("Named as the checkpoint and TensorBoard name them, counting from 0: attention.3 is block "
                           "4's attention; a shared sublayer is one group (index 0) for every block"));
    m_kind = new QComboBox(this);
    m_kind->addItems({tr("Weights"), tr("Gradients")});
    m_kind->setItemData(1, tr("The gradients of the measured step, before clipping"), Qt::ToolTipRole);
    letShrink({m_group, m_kind}, 16);
    auto* groupLabel = new QLabel(tr("Parame&ters"), this);
    groupLabel->setBuddy(m_group);
    auto* kindLabel = new QLabel(tr("Sh&ow"), this);
    kindLabel->setBuddy(m_kind);
    auto* bar = new QHBoxLayout;
    bar->addWidget(groupLabel);
    bar->addWidget(m_group);
    bar->addSpacing(8);
    bar->addWidget(kindLabel);
    bar->addWidget(m_kind);
    bar->addStretch(1);

    m_charts = new QWidget(this);
    m_spread = newPlot(m_charts, tr("Spread over training"));
    m_histogram = newPlot(m_charts, tr("Histogram at the shown step"));
    auto* row = new QHBoxLayout(m_charts);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(m_spread, 3);
    row->addWidget(m_histogram, 2);
    // The bands' lines, outermost first so that each inner band is drawn over
    // the one around it, the median last, over them all.
    const std::vector<double>& fractions = bandFractions();
    m_lines.assign(fractions.size(), nullptr);
    const std::size_t middle = fractions.size() / 2;
    for (std::size_t b = 0; b < middle; ++b)
        for (const std::size_t i : {b, fractions.size() - 1 - b}) {
            m_lines[i] = m_spread->addGraph();
            m_lines[i]->setName(tr("%1%").arg(fractions[i] * 100, 0, 'g', 3));
        }
    m_lines[middle] = m_spread->addGraph();
    m_lines[middle]->setName(tr("median"));
    for (std::size_t b = 0; b < middle; ++b)
        m_lines[fractions.size() - 1 - b]->setChannelFillGraph(m_lines[b]);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(note);
    layout->addLayout(bar);
    layout->addWidget(m_empty);
    layout->addWidget(m_charts, 1);
    connect(m_group, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(m_kind, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
}

QCPGraph* WeightsView::spreadLine(std::size_t index) const { return index < m_lines.size() ? m_lines[index] : nullptr; }

bool WeightsView::showsGradients() const { return m_kind->currentIndex() == 1; }

const TrainingSnapshot* WeightsView::measuredAt(const InsightHistory& history, qint64 step)
{
    return history.lastStateWith(step, [](const TrainingSnapshot& state) {
        return !state.weightHistograms.empty() || !state.gradientHistograms.empty();
    });
}

void WeightsView::refresh()
{
    const TrainingSnapshot* shown = m_primary.valid() ? measuredAt(*m_primary.history, m_step) : nullptr;
    m_empty->setVisible(shown == nullptr);
    m_charts->setVisible(shown != nullptr);
    m_group->setEnabled(shown != nullptr);
    m_kind->setEnabled(shown != nullptr);
    if (shown == nullptr) {
        m_empty->setText(m_primary.valid()
                             ? tr("No histograms yet: weights and gradients are measured on the first logged step, "
                                  "at each validation and at the end (runs recorded before this view have none).")
                             : tr("No run to show."));
        return;
    }
    // The groups the shown step measured, the one chosen kept by name.
    QStringList names;
    for (const ValueHistogram& h : shown->weightHistograms.empty() ? shown->gradientHistograms : shown->weightHistograms)
        names << QString::fromStdString(h.group);
    if (names != itemsOf(*m_group)) {
        const QString chosen = m_group->currentText();
        const QSignalBlocker quiet(m_group);
        m_group->clear();
        m_group->addItems(names);
        m_group->setCurrentIndex(std::max(0, static_cast<int>(names.indexOf(chosen))));
    }
    const QString group = m_group->currentText();
    const TrainingSnapshot* compared = m_comparison.valid() ? measuredAt(*m_comparison.history, m_step) : nullptr;
    drawSpread(group, shown->step);
    drawHistogram(group, *shown, compared);
}

void WeightsView::drawSpread(const QString& group, qint64 shownStep)
{
    QCustomPlot* plot = m_spread;
    plot->clearItems();
    palette::followTheme(plot, palette());
    const bool gradients = showsGradients();
    plot->xAxis->setLabel(tr("step"));
    plot->yAxis->setLabel(gradients ? tr("gradient") : tr("weight"));
    const std::vector<double>& fractions = bandFractions();
    const std::size_t middle = fractions.size() / 2;
    const QColor colour = palette::seriesColor(0, palette());
    const QColor base = palette().color(QPalette::Base);
    for (std::size_t i = 0; i < fractions.size(); ++i) {
        m_lines[i]->data()->clear();
        m_lines[i]->setPen(i == middle ? QPen(colour, 2) : QPen(Qt::NoPen));
    }
    for (std::size_t b = 0; b < middle; ++b)  // darker inwards
        m_lines[fractions.size() - 1 - b]->setBrush(palette::blend(base, colour, 0.15 + 0.15 * static_cast<double>(b)));
    double low = 0, high = 0, first = 0, last = 0;
    bool any = false;
    for (const TrainingSnapshot& state : m_primary.history->states()) {
        const ValueHistogram* h = groupIn(histogramsOf(state, gradients), group);
        if (h == nullptr || h->total() <= 0)
            continue;
        const double step = static_cast<double>(state.step);
        for (std::size_t i = 0; i < fractions.size(); ++i)
            m_lines[i]->addData(step, h->quantile(fractions[i]));
        low = any ? std::min(low, h->low) : h->low;
        high = any ? std::max(high, h->high) : h->high;
        first = any ? first : step;
        last = step;
        any = true;
    }
    const double margin = high > low ? (high - low) * 0.05 : std::max(std::abs(low) * 0.05, 1e-6);
    plot->yAxis->setRange(low - margin, high + margin);
    plot->xAxis->setRange(first, last > first ? last : first + 1);
    auto* now = new QCPItemStraightLine(plot);
    now->setPen(QPen(palette::blend(base, palette().color(QPalette::Text), 0.6), 1, Qt::DotLine));
    now->point1->setCoords(static_cast<double>(shownStep), 0);
    now->point2->setCoords(static_cast<double>(shownStep), 1);
    plot->replot();
}

void WeightsView::drawHistogram(const QString& group, const TrainingSnapshot& shown, const TrainingSnapshot* compared)
{
    QCustomPlot* plot = m_histogram;
    plot->clearPlottables();
    palette::followTheme(plot, palette());
    const bool gradients = showsGradients();
    plot->xAxis->setLabel(gradients ? tr("gradient at step %1").arg(shown.step) : tr("weight at step %1").arg(shown.step));
    plot->yAxis->setLabel(tr("values"));
    plot->legend->setVisible(false);
    double low = 0, high = 0, top = 0;
    bool any = false;
    auto draw = [&](const ValueHistogram& h, const QColor& colour, bool outline, const QString& name) {
        const auto n = static_cast<double>(h.counts.size());
        const double width = h.high > h.low ? (h.high - h.low) / n : std::max(std::abs(h.low) * 0.02, 1e-6);
        auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
        bars->setName(name);
        bars->setWidth(width);
        bars->setPen(QPen(colour, outline ? 1.5 : 1));
        bars->setBrush(outline ? QBrush(Qt::NoBrush) : QBrush(palette::blend(palette().color(QPalette::Base), colour, 0.6)));
        for (std::size_t b = 0; b < h.counts.size(); ++b) {
            const double centre = h.high > h.low ? h.low + width * (static_cast<double>(b) + 0.5) : h.low;
            bars->addData(centre, static_cast<double>(h.counts[b]));
            top = std::max(top, static_cast<double>(h.counts[b]));
            if (h.high <= h.low)
                break;  // equal values: one bar
        }
        low = any ? std::min(low, h.low - width / 2) : h.low - width / 2;
        high = any ? std::max(high, h.high + width / 2) : h.high + width / 2;
        any = true;
    };
    if (const ValueHistogram* h = groupIn(histogramsOf(shown, gradients), group))
        draw(*h, palette::seriesColor(0, palette()), false, tr("step %1").arg(shown.step));
    if (compared != nullptr)
        if (const ValueHistogram* h = groupIn(histogramsOf(*compared, gradients), group)) {
            draw(*h, palette::seriesColor(1, palette()), true, tr("%1 · step %2").arg(m_comparison.label).arg(compared->step));
            plot->legend->setVisible(true);
            palette::legendBelowPlot(plot);
        }
    plot->xAxis->setRange(low, high > low ? high : low + 1);
    plot->yAxis->setRange(0, top > 0 ? top * 1.1 : 1);
    plot->replot();
}

QString WeightsView::exportTitle() const
{
    return tr("%1 %2 %3").arg(showsGradients() ? tr("gradients") : tr("weights"), m_group->currentText(), m_primary.label);
}

QWidget* WeightsView::exportArea() { return m_charts; }

QByteArray WeightsView::csv() const
{
    QByteArray out = "run,step,kind,group,low,high,bucket,count\n";
    for (const InsightSource* source : {&m_primary, &m_comparison}) {
        if (!source->valid())
            continue;
        for (const TrainingSnapshot& state : source->history->states())
            for (const bool gradients : {false, true})
                for (const ValueHistogram& h : histogramsOf(state, gradients))
                    for (std::size_t b = 0; b < h.counts.size(); ++b)
                        out += csvField(source->label) + ',' + QByteArray::number(state.step) + ','
                               + (gradients ? "gradients," : "weights,") + csvField(QString::fromStdString(h.group))
                               + ',' + csvNumber(h.low) + ',' + csvNumber(h.high) + ','
                               + QByteArray::number(qulonglong(b + 1)) + ',' + QByteArray::number(qlonglong(h.counts[b]))
                               + '\n';
    }
    return out;
}

}  // namespace widelab
