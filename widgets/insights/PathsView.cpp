#include "PathsView.h"

#include "AlarmList.h"
#include "curves/CurvePlot.h"
#include "common/Elements.h"
#include "common/Palette.h"
#include "common/ViewExport.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSet>
#include <QSplitter>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

QString sublayerName(const QString& sublayer)
{
    return sublayer == QLatin1String("attention")         ? QObject::tr("attention")
           : sublayer == QLatin1String("cross_attention") ? QObject::tr("cross-attention")
                                                           : QObject::tr("FFN");
}

// The sublayers a block's weights are listed under, in a block's order.
const QStringList& sublayerOrder()
{
    static const QStringList order = {QStringLiteral("attention"), QStringLiteral("cross_attention"), QStringLiteral("ffn")};
    return order;
}

// The encoder's blocks of a translation model, from its configuration; 0 for
// any other model (or one not known), whose blocks are all one stack's.
int encoderBlocks(const InsightSource& source)
{
    if (!source.valid() || !source.history->architecture())
        return 0;
    const ArchitectureSketch& sketch = *source.history->architecture();
    return sketch.headKind == QLatin1String("translation") ? sketch.layers : 0;
}

// "block 2"; in a translation model "encoder block 2" or "decoder block 1"
// (a decoder's blocks are numbered on from the encoder's: Snapshot.h). Short: "2", "E2", "D1".
QString blockName(int block, int encoder, bool shortForm)
{
    if (encoder <= 0)
        return shortForm ? QString::number(block + 1) : QObject::tr("block %1").arg(block + 1);
    const bool decoder = block >= encoder;
    const int number = decoder ? block - encoder + 1 : block + 1;
    if (shortForm)
        return (decoder ? QStringLiteral("D") : QStringLiteral("E")) + QString::number(number);
    return decoder ? QObject::tr("decoder block %1").arg(number) : QObject::tr("encoder block %1").arg(number);
}

}  // namespace

PathsView::PathsView(QWidget* parent) : InsightPage(parent)
{
    m_empty = new QLabel(this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_block = new QComboBox(this);
    m_block->setAccessibleName(tr("Block"));
    m_sublayer = new QComboBox(this);
    m_sublayer->addItem(tr("attention"), QStringLiteral("attention"));
    m_sublayer->addItem(tr("FFN"), QStringLiteral("ffn"));
    m_sublayer->setAccessibleName(tr("Sublayer"));

    m_alpha = new CurvePlot;
    // One colour per path: its own weight solid, that of the mean of the others dashed.
    m_alpha->declareSeries(QStringLiteral("alpha"), QString());
    m_alpha->declareSeries(QStringLiteral("feature"), tr("mean of the others"));
    m_beta = new CurvePlot;
    m_beta->setTitle(tr("β: the weight of each sublayer's input (its residual)"));
    m_beta->declareSeries(QStringLiteral("beta"), QString());
    m_diversity = new QCustomPlot;
    m_diversity->setAccessibleName(tr("Path diversity against depth"));
    m_diversity->setMinimumHeight(160);

    m_alarms = new AlarmList;
    m_alarms->setKinds({QStringLiteral("path weight")});
    m_alarms->setEmptyText(tr("No path-weight alarm so far: the trainer raises one when a path's weight collapses "
                              "towards zero or dominates the others."));

    m_body = new QWidget(this);
    auto* curves = new QSplitter(Qt::Horizontal);
    curves->addWidget(m_alpha);
    curves->addWidget(m_beta);
    curves->setSizes({1000, 1000});  // halves, whatever the contents ask for
    auto* lower = new QSplitter(Qt::Horizontal);
    lower->addWidget(m_diversity);
    lower->addWidget(m_alarms);
    lower->setSizes({1400, 600});
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(curves);
    split->addWidget(lower);
    auto* bodyLayout = new QVBoxLayout(m_body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    bodyLayout->addWidget(split);

    m_controls = new QWidget(this);
    auto* controls = new QHBoxLayout(m_controls);
    controls->setContentsMargins(0, 0, 0, 0);
    auto* blockLabel = new QLabel(tr("α of &block"), m_controls);
    blockLabel->setBuddy(m_block);
    controls->addWidget(blockLabel);
    controls->addWidget(m_block);
    auto* sublayerLabel = new QLabel(tr("&sublayer"), m_controls);
    sublayerLabel->setBuddy(m_sublayer);
    controls->addWidget(sublayerLabel);
    controls->addWidget(m_sublayer);
    controls->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_controls);
    layout->addWidget(m_empty);
    layout->addWidget(m_body, 1);
    connect(m_block, &QComboBox::currentIndexChanged, this, &PathsView::refresh);
    connect(m_sublayer, &QComboBox::currentIndexChanged, this, &PathsView::refresh);
    // A click on an alarm shows its block's weights.
    connect(m_alarms, &AlarmList::alarmActivated, this, [this](const HealthEvent& alarm) {
        if (alarm.block >= 0 && alarm.block < m_block->count())
            setBlock(static_cast<int>(alarm.block));
    });
}

bool PathsView::concerns(const HealthEvent& alarm, int block, const QString& sublayer)
{
    if (alarm.block != block)
        return false;
    if (!alarm.sublayer.empty())
        return QString::fromStdString(alarm.sublayer) == sublayer;
    const QString text = QString::fromStdString(alarm.text);
    const bool attention = text.contains(QLatin1String("attention"), Qt::CaseInsensitive);
    const bool ffn = text.contains(QLatin1String("ffn"), Qt::CaseInsensitive);
    if (attention == ffn)
        return true;  // names neither (or both): it may be this one
    return sublayer == QLatin1String("attention") ? attention : ffn;
}

void PathsView::setBlock(int block) { m_block->setCurrentIndex(m_block->findData(block)); }
void PathsView::setSublayer(const QString& sublayer) { m_sublayer->setCurrentIndex(m_sublayer->findData(sublayer)); }

void PathsView::refresh()
{
    // What the model has comes from its configuration; the newest step that
    // measured path weights is the one shown (a stop between log steps measures none).
    const TrainingSnapshot* last = m_primary.valid() ? m_primary.history->pathStateAt(-1) : nullptr;
    const bool multiPath = m_primary.valid() && m_primary.history->hasPathWeights();
    const bool paths = last != nullptr;
    m_empty->setVisible(!paths);
    m_body->setVisible(paths);
    m_controls->setVisible(paths);
    if (!paths) {
        m_empty->setText(multiPath
                             ? tr("No measurement yet: path weights appear with the first training snapshot.")
                             : tr("This model has one path per sublayer: there are no path weights to show. The "
                                  "multi-path presets (e.g. multipath-3x4) have them."));
        return;
    }
    // Blocks as the data name them, within bounds a model can have (a damaged
    // number must not fill the list with millions of entries).
    constexpr int kMostBlocks = 4096;
    int blocks = 0;
    for (const PathWeights& p : last->paths)
        if (p.block >= 0 && p.block < kMostBlocks)
            blocks = std::max(blocks, static_cast<int>(p.block) + 1);
    const int encoder = encoderBlocks(m_primary);
    if (m_block->count() != blocks || m_blockNaming != encoder) {
        const QSignalBlocker block(m_block);
        const int current = m_block->currentIndex();
        m_block->clear();
        for (int b = 0; b < blocks; ++b)
            m_block->addItem(blockName(b, encoder, encoder > 0), b);
        m_block->setCurrentIndex(std::min(std::max(current, 0), blocks - 1));
        m_blockNaming = encoder;
    }
    // The chosen block's sublayers (a decoder's have cross-attention), the chosen one kept when it has it.
    QStringList present;
    for (const PathWeights& p : last->paths)
        if (p.block == m_block->currentData().toInt())
            present << QString::fromStdString(p.sublayer);
    QStringList listed;
    for (const QString& sublayer : sublayerOrder())
        if (present.contains(sublayer))
            listed << sublayer;
    QStringList shownSublayers;
    for (int i = 0; i < m_sublayer->count(); ++i)
        shownSublayers << m_sublayer->itemData(i).toString();
    if (!listed.isEmpty() && listed != shownSublayers) {
        const QSignalBlocker block(m_sublayer);
        const QString current = m_sublayer->currentData().toString();
        m_sublayer->clear();
        for (const QString& sublayer : std::as_const(listed))
            m_sublayer->addItem(sublayerName(sublayer), sublayer);
        m_sublayer->setCurrentIndex(std::max(0, m_sublayer->findData(current)));
    }
    m_alarms->setHistory(m_primary.history.get(), m_step);
    showCurves();
    showDiversity();
    const TrainingSnapshot* shown = m_step >= 0 ? m_primary.history->stateAt(m_step) : nullptr;
    for (CurvePlot* plot : {m_alpha, m_beta})
        plot->setStepMarker(shown ? double(shown->step) : std::numeric_limits<double>::quiet_NaN());
}

void PathsView::showCurves()
{
    const int block = m_block->currentData().toInt();
    const QString sublayer = m_sublayer->currentData().toString();
    // The path features an alarm in force names, in this block and sublayer.
    QHash<qint64, QStringList> alarmed;  // feature index -> alarm texts
    for (const HealthEvent& alarm : m_alarms->active())
        if (alarm.index >= 0 && concerns(alarm, block, sublayer))
            alarmed[alarm.index] << QString::fromStdString(alarm.text);
    QStringList alarmTexts;
    for (const QStringList& texts : std::as_const(alarmed))
        alarmTexts += texts;
    const QString key = m_primary.runId + QLatin1Char(':') + QString::number(m_primary.history->revision())
                        + QLatin1Char('/') + QString::number(block) + sublayer + QLatin1Char('/')
                        + alarmTexts.join(QLatin1Char('|'));
    if (key == m_curvesKey)
        return;
    m_curvesKey = key;
    for (CurvePlot* plot : {m_alpha, m_beta})
        for (const QString& run : plot->runs())
            plot->removeRun(run);
    const int encoder = encoderBlocks(m_primary);
    m_alpha->setTitle(tr("α of %1's %2 paths").arg(blockName(block, encoder, false), sublayerName(sublayer))
                      + (alarmTexts.isEmpty() ? QString() : QStringLiteral("  ⚠ ") + alarmTexts.join(QStringLiteral("; "))));
    QHash<QString, QVector<CurvePoint>> alpha, beta;
    QStringList alphaOrder, betaOrder;
    QSet<QString> markedPaths;  // "path 2": its weight, or the feature without it, is alarmed
    for (const TrainingSnapshot& state : m_primary.history->states())
        for (const PathWeights& p : state.paths) {
            const QString pathSublayer = QString::fromStdString(p.sublayer);
            const QString sub = QStringLiteral("%1 %2").arg(p.block).arg(pathSublayer);
            if (!beta.contains(sub))
                betaOrder << sub;
            beta[sub].push_back({double(state.step), 0.0, p.beta});
            if (p.block != block || pathSublayer != sublayer)
                continue;
            // A weight per path, then one per "mean without path i": nothing beyond.
            const qsizetype features = p.paths > 0 ? std::min<qsizetype>(sizeOf(p.alpha), 2 * qsizetype(p.paths)) : 0;
            for (int f = 0; f < features; ++f) {
                // Feature f >= paths is the mean of every path but f - paths.
                const QString path = QString::fromStdString(p.featureName(f < p.paths ? f : f - p.paths));
                const QString series = f < p.paths ? QStringLiteral("alpha") : QStringLiteral("feature");
                if (!alphaOrder.contains(path))
                    alphaOrder << path;
                if (alarmed.contains(f))
                    markedPaths.insert(path);
                alpha[path + QLatin1Char('/') + series].push_back({double(state.step), 0.0, p.alpha[static_cast<std::size_t>(f)]});
            }
        }
    for (int i = 0; i < alphaOrder.size(); ++i) {
        m_alpha->addRun(alphaOrder[i],
                        markedPaths.contains(alphaOrder[i]) ? alphaOrder[i] + QStringLiteral(" ⚠") : alphaOrder[i],
                        palette::seriesColor(i));
        for (const QString& series : {QStringLiteral("alpha"), QStringLiteral("feature")})
            if (const auto points = alpha.value(alphaOrder[i] + QLatin1Char('/') + series); !points.isEmpty())
                m_alpha->appendPoints(alphaOrder[i], series, points);
    }
    for (int i = 0; i < betaOrder.size(); ++i) {
        const QStringList parts = betaOrder[i].split(QLatin1Char(' '));
        const QString label = QStringLiteral("%1 %2").arg(blockName(parts[0].toInt(), encoder, false), sublayerName(parts[1]));
        m_beta->addRun(betaOrder[i], label, palette::seriesColor(i));
        m_beta->appendPoints(betaOrder[i], QStringLiteral("beta"), beta[betaOrder[i]]);
    }
}

void PathsView::showDiversity()
{
    QCustomPlot* plot = m_diversity;
    plot->clearGraphs();
    plot->clearItems();
    palette::followTheme(plot, palette());
    palette::legendBelowPlot(plot);
    plot->xAxis->setLabel(tr("block"));
    plot->yAxis->setLabel(tr("path diversity |d|"));
    plot->legend->setVisible(true);
    const InsightSource* sources[2] = {&m_primary, &m_comparison};
    double top = 0;
    qint64 shownStep = -1;
    for (int i = 0; i < 2; ++i) {
        const InsightSource& source = *sources[i];
        const TrainingSnapshot* state = source.valid() ? source.history->pathStateAt(m_step) : nullptr;
        if (state == nullptr)
            continue;
        if (i == 0)
            shownStep = state->step;
        for (const QString& sublayer : sublayerOrder()) {
            const bool measured = std::any_of(state->paths.begin(), state->paths.end(), [&](const PathWeights& p) {
                return QString::fromStdString(p.sublayer) == sublayer;
            });
            if (!measured)
                continue;  // a model without a decoder has no cross-attention
            QCPGraph* graph = plot->addGraph();
            // The shown run is named in the bar above; only the compared one needs its name here.
            graph->setName(i == 0 ? sublayerName(sublayer)
                                  : QStringLiteral("%1 · %2").arg(source.label, sublayerName(sublayer)));
            QPen pen(palette::seriesColor(i), 2);
            pen.setStyle(sublayer == QLatin1String("attention")         ? Qt::SolidLine
                         : sublayer == QLatin1String("cross_attention") ? Qt::DotLine
                                                                         : Qt::DashLine);
            graph->setPen(pen);
            graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
            // Only finite values at a block the axis shows: NaN, infinities and
            // block numbers no model has (damaged data) are left out.
            for (const PathWeights& p : state->paths)
                if (QString::fromStdString(p.sublayer) == sublayer && std::isfinite(p.diversity) && p.block >= 0 && p.block < m_block->count()) {
                    graph->addData(double(p.block + 1), p.diversity);
                    top = std::max(top, p.diversity);
                }
        }
    }
    plot->xAxis->setRange(0.5, std::max<double>(1.5, m_block->count() + 0.5));
    plot->yAxis->setRange(0, top > 0 ? top * 1.15 : 1);
    // A translation model's blocks: E1, E2, ... then D1, D2, ... (encoder against decoder).
    const int encoder = encoderBlocks(m_primary);
    if (encoder > 0) {
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        for (int b = 0; b < m_block->count(); ++b)
            ticker->addTick(b + 1, blockName(b, encoder, true));
        plot->xAxis->setTicker(ticker);
        plot->xAxis->setLabel(tr("block (E: encoder, D: decoder)"));
    } else {
        if (plot->xAxis->ticker().dynamicCast<QCPAxisTickerText>())
            plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        plot->xAxis->ticker()->setTickCount(std::max(2, m_block->count()));
    }
    plot->setToolTip(shownStep >= 0 ? tr("Path diversity per block at step %1").arg(shownStep) : QString());
    plot->replot();
}

QString PathsView::exportTitle() const { return tr("paths %1").arg(m_primary.label); }

QByteArray PathsView::csv() const
{
    QByteArray out = "run,step,block,sublayer,weight,value\n";
    const InsightSource* sources[2] = {&m_primary, &m_comparison};
    for (const InsightSource* source : sources) {
        if (!source->valid())
            continue;
        for (const TrainingSnapshot& state : source->history->states())
            for (const PathWeights& p : state.paths) {
                const QByteArray prefix = csvField(source->label) + ',' + QByteArray::number(state.step) + ','
                                          + QByteArray::number(p.block + 1) + ',' + QByteArray::fromStdString(p.sublayer) + ',';
                for (std::size_t f = 0; f < p.alpha.size(); ++f)
                    out += prefix + csvField(QStringLiteral("alpha ") + QString::fromStdString(p.featureName(static_cast<std::int64_t>(f))))
                           + ',' + csvNumber(p.alpha[f]) + '\n';
                out += prefix + "beta," + csvNumber(p.beta) + '\n';
                out += prefix + "diversity," + csvNumber(p.diversity) + '\n';
            }
    }
    return out;
}

}  // namespace widelab
