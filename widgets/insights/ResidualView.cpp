#include "ResidualView.h"

#include "common/Palette.h"
#include "common/ViewExport.h"

#include <QLabel>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

ResidualView::ResidualView(QWidget* parent) : InsightPage(parent)
{
    m_empty = new QLabel(this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_note = new QLabel(tr("The size of the residual stream after each block: the mean, over a training batch's real "
                           "tokens, of each token's L2 norm over the width. With LayerNorm before each sublayer the "
                           "stream grows as blocks add to it; a block whose step up stands out writes much more than "
                           "its neighbours. Dashed: the run's first measured step."),
                        this);
    m_note->setWordWrap(true);
    m_plot = new QCustomPlot(this);
    m_plot->setAccessibleName(tr("Residual-stream norm against depth"));
    m_plot->setMinimumHeight(160);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_note);
    layout->addWidget(m_empty);
    layout->addWidget(m_plot, 1);
}

const TrainingSnapshot* ResidualView::measuredAt(const InsightHistory& history, qint64 step)
{
    return history.lastStateWith(step, [](const TrainingSnapshot& state) { return !state.residualNorms.empty(); });
}

void ResidualView::refresh()
{
    const TrainingSnapshot* shown = m_primary.valid() ? measuredAt(*m_primary.history, m_step) : nullptr;
    m_empty->setVisible(shown == nullptr);
    m_plot->setVisible(shown != nullptr);
    if (shown == nullptr) {
        m_empty->setText(m_primary.valid() ? tr("No measurement yet: the residual stream is measured with each training "
                                                "snapshot (runs recorded before this view have none).")
                                           : tr("No run to show."));
        return;
    }
    const TrainingSnapshot* first = shown;
    for (const TrainingSnapshot& state : m_primary.history->states())
        if (!state.residualNorms.empty()) {
            first = &state;
            break;
        }
    const TrainingSnapshot* compared = m_comparison.valid() ? measuredAt(*m_comparison.history, m_step) : nullptr;

    QCustomPlot* plot = m_plot;
    plot->clearGraphs();
    palette::followTheme(plot, palette());
    const QColor base = palette().color(QPalette::Base);
    plot->xAxis->setLabel(tr("after block"));
    plot->yAxis->setLabel(tr("mean token L2 norm"));
    plot->legend->setVisible(true);
    palette::legendBelowPlot(plot);

    double top = 0;
    std::size_t blocks = 0;
    auto draw = [&](const InsightSource& source, const TrainingSnapshot& state, const QColor& colour, Qt::PenStyle style) {
        QCPGraph* graph = plot->addGraph();
        // The shown run is named in the bar above; only the compared one needs its name here.
        graph->setName(&source == &m_comparison ? tr("%1 · step %2").arg(source.label).arg(state.step)
                                                : tr("step %1").arg(state.step));
        graph->setPen(QPen(colour, 2, style));
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
        for (std::size_t b = 0; b < state.residualNorms.size(); ++b) {
            const double norm = state.residualNorms[b];
            if (!std::isfinite(norm))
                continue;  // a damaged or overflowed measurement is left out, not drawn at 0
            graph->addData(double(b + 1), norm);
            top = std::max(top, norm);
        }
        blocks = std::max(blocks, state.residualNorms.size());
    };
    if (first != shown)
        draw(m_primary, *first, palette::blend(palette::seriesColor(0), base, 0.45), Qt::DashLine);
    draw(m_primary, *shown, palette::seriesColor(0), Qt::SolidLine);
    if (compared != nullptr)
        draw(m_comparison, *compared, palette::seriesColor(1), Qt::SolidLine);

    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // 48 blocks: every 5th or 10th
    plot->xAxis->setTicker(ticker);
    plot->xAxis->setRange(0.5, double(std::max<std::size_t>(blocks, 1)) + 0.5);
    plot->yAxis->setRange(0, top > 0 ? top * 1.15 : 1);
    plot->replot();
}

QString ResidualView::exportTitle() const { return tr("residual stream %1").arg(m_primary.label); }

QWidget* ResidualView::exportArea() { return m_plot; }

QByteArray ResidualView::csv() const
{
    QByteArray out = "run,step,block,residual_norm\n";
    for (const InsightSource* source : {&m_primary, &m_comparison}) {
        if (!source->valid())
            continue;
        for (const TrainingSnapshot& state : source->history->states())
            for (std::size_t b = 0; b < state.residualNorms.size(); ++b)
                out += csvField(source->label) + ',' + QByteArray::number(state.step) + ','
                       + QByteArray::number(qulonglong(b + 1)) + ',' + csvNumber(state.residualNorms[b]) + '\n';
    }
    return out;
}

}  // namespace widelab
