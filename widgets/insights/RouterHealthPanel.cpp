#include "RouterHealthPanel.h"

#include "AlarmList.h"
#include "curves/CurvePlot.h"
#include "common/Palette.h"
#include "common/ViewExport.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

constexpr RouterHealthPanel::Measure kMeasures[] = {
    RouterHealthPanel::Measure::MaxViolation, RouterHealthPanel::Measure::EffectiveExperts,
    RouterHealthPanel::Measure::ZLoss, RouterHealthPanel::Measure::DeadFraction,
    RouterHealthPanel::Measure::Consistency};

bool isShare(RouterHealthPanel::Measure m)
{
    return m == RouterHealthPanel::Measure::DeadFraction || m == RouterHealthPanel::Measure::Consistency;
}

enum class Verdict { Neutral, Good, Bad };

// Whether a value is healthy. z-loss has no scale of its own: it is bad where
// the trainer raised its alarm, or where the router's log-sum-exp exceeds that
// of uniform logits, ln E, by more than 6 (softmax saturating), good within 2.
Verdict verdict(const RoutingStats& load, RouterHealthPanel::Measure m, bool zAlarm)
{
    using M = RouterHealthPanel::Measure;
    const double v = RouterHealthPanel::value(load, m);
    if (!std::isfinite(v))
        return Verdict::Neutral;
    switch (m) {
    case M::MaxViolation:
        return v > RouterHealthPanel::kBadViolation    ? Verdict::Bad
               : v <= RouterHealthPanel::kGoodViolation ? Verdict::Good
                                                        : Verdict::Neutral;
    case M::EffectiveExperts:
        return v < RouterHealthPanel::kBadEffective     ? Verdict::Bad
               : v >= RouterHealthPanel::kGoodEffective ? Verdict::Good
                                                        : Verdict::Neutral;
    case M::ZLoss: {
        const double uniform = std::log(std::max<double>(1, load.tokensPerExpert.size()));
        const double lse = std::sqrt(std::max(0.0, v));
        return zAlarm || lse > uniform + 6 ? Verdict::Bad : lse <= uniform + 2 ? Verdict::Good : Verdict::Neutral;
    }
    case M::DeadFraction:
        return v > 0 ? Verdict::Bad : Verdict::Good;
    case M::Consistency:
        return Verdict::Neutral;  // neither high nor low is a fault: it describes the routing
    }
    return Verdict::Neutral;
}

}  // namespace

QStringList RouterHealthPanel::alarmKinds()
{
    return {QStringLiteral("collapse"), QStringLiteral("dead expert"), QStringLiteral("z-loss")};
}

QString RouterHealthPanel::measureName(Measure measure)
{
    switch (measure) {
    case Measure::MaxViolation: return tr("MaxVio");
    case Measure::EffectiveExperts: return tr("exp(H)/E");
    case Measure::ZLoss: return tr("z-loss");
    case Measure::DeadFraction: return tr("dead");
    case Measure::Consistency: return tr("consistency");
    }
    return QString();
}

QString RouterHealthPanel::measureTip(Measure measure)
{
    switch (measure) {
    case Measure::MaxViolation:
        return tr("Load-balance violation: E times the largest mean router probability, minus 1; 0 is perfectly "
                  "balanced, 1 means one expert gets twice its fair share.");
    case Measure::EffectiveExperts:
        return tr("Effective experts: exp(entropy of the mean router probabilities) over E; 1 when every expert is "
                  "equally likely, 1/E when the router has collapsed onto one.");
    case Measure::ZLoss:
        return tr("Router z-loss: the mean over tokens of the squared log-sum-exp of the router logits; it grows "
                  "when the logits grow, which makes routing brittle.");
    case Measure::DeadFraction:
        return tr("Dead experts: the share of experts that received no token in the measured batch.");
    case Measure::Consistency:
        return tr("Consistency: the share of tokens whose top-1 expert equals the one they had in the previous "
                  "routing block (– for the first routing block).");
    }
    return QString();
}

double RouterHealthPanel::value(const RoutingStats& load, Measure measure)
{
    switch (measure) {
    case Measure::MaxViolation: return load.maxViolation;
    case Measure::EffectiveExperts: return load.effectiveExperts;
    case Measure::ZLoss: return load.zLoss;
    case Measure::DeadFraction: return load.deadFraction;
    case Measure::Consistency:
        return load.consistency < 0 ? std::numeric_limits<double>::quiet_NaN() : load.consistency;
    }
    return std::numeric_limits<double>::quiet_NaN();
}

QString RouterHealthPanel::format(const RoutingStats& load, Measure measure)
{
    const double v = value(load, measure);
    if (!std::isfinite(v))
        return QStringLiteral("–");
    return isShare(measure) ? QString::number(100.0 * v, 'f', 1) + QLatin1Char('%') : QString::number(v, 'f', 3);
}

RouterHealthPanel::RouterHealthPanel(QWidget* parent) : QWidget(parent)
{
    m_table = new QTableWidget(this);
    m_table->setAccessibleName(tr("Router health per routing block"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    QStringList headers{tr("Block")};
    for (Measure m : kMeasures)
        headers << measureName(m);
    m_table->setColumnCount(static_cast<int>(headers.size()));
    m_table->setHorizontalHeaderLabels(headers);
    m_table->horizontalHeaderItem(0)->setToolTip(tr("The routing block (1-based); ⚠: an alarm is in force"));
    for (int c = 0; c < static_cast<int>(std::size(kMeasures)); ++c)
        m_table->horizontalHeaderItem(c + 1)->setToolTip(measureTip(kMeasures[c]));

    m_measure = new QComboBox(this);
    m_measure->setAccessibleName(tr("Health measure over training"));
    for (Measure m : kMeasures) {
        m_measure->addItem(measureName(m), int(m));
        m_measure->setItemData(m_measure->count() - 1, measureTip(m), Qt::ToolTipRole);
    }
    m_plot = new CurvePlot(this);
    m_plot->declareSeries(QStringLiteral("health"), QString(), CurvePlot::SeriesStyle::Exact);
    m_plot->setMinimumHeight(150);
    m_alarms = new AlarmList(this);
    m_alarms->setKinds(alarmKinds());
    m_alarms->setEmptyText(tr("No routing alarm so far: the trainer raises one on collapse, a dead expert or a "
                              "growing z-loss."));

    auto* plotBox = new QWidget;
    auto* plotLayout = new QVBoxLayout(plotBox);
    plotLayout->setContentsMargins(0, 0, 0, 0);
    auto* controls = new QHBoxLayout;
    auto* label = new QLabel(tr("Over training, &measure:"));
    label->setBuddy(m_measure);
    controls->addWidget(label);
    controls->addWidget(m_measure);
    controls->addStretch(1);
    plotLayout->addLayout(controls);
    plotLayout->addWidget(m_plot, 1);

    auto* top = new QSplitter(Qt::Horizontal);
    top->addWidget(m_table);
    top->addWidget(m_alarms);
    top->setSizes({1000, 1000});
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(top);
    split->addWidget(plotBox);
    split->setSizes({800, 1200});  // the chart gets the larger part: the table holds a few rows
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);
    connect(m_measure, &QComboBox::currentIndexChanged, this, &RouterHealthPanel::measureChanged);
}

void RouterHealthPanel::setMeasure(Measure measure) { m_measure->setCurrentIndex(m_measure->findData(int(measure))); }
RouterHealthPanel::Measure RouterHealthPanel::measure() const { return Measure(m_measure->currentData().toInt()); }

void RouterHealthPanel::show(const QString& runId, const InsightHistory& history, const TrainingSnapshot& state, qint64 upTo)
{
    m_state = state;
    m_alarms->setHistory(&history, upTo);
    showTable(state, m_alarms->active());
    const QString key = runId + QLatin1Char(':') + QString::number(history.revision()) + QLatin1Char('/')
                        + QString::number(int(measure()));
    if (key != m_plotKey) {
        m_plotKey = key;
        showPlot(history);
    }
    m_plot->setStepMarker(double(state.step));
}

void RouterHealthPanel::showTable(const TrainingSnapshot& state, const QVector<HealthEvent>& active)
{
    const QColor base = palette().color(QPalette::Base);
    const QColor good = palette::blend(base, palette::seriesColor(2), 0.25);  // bluish green
    const QColor bad = palette::blend(base, palette::seriesColor(5), 0.35);   // vermillion
    m_table->setRowCount(static_cast<int>(state.routing.size()));
    for (int row = 0; row < static_cast<int>(state.routing.size()); ++row) {
        const RoutingStats& load = state.routing[static_cast<std::size_t>(row)];
        QStringList alarmTexts;
        for (const HealthEvent& alarm : active)
            if (alarm.block == load.block)
                alarmTexts << QString::fromStdString(alarm.text);
        auto* blockItem = new QTableWidgetItem((alarmTexts.isEmpty() ? QString() : QStringLiteral("⚠ "))
                                               + QString::number(load.block + 1));
        blockItem->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        if (!alarmTexts.isEmpty()) {
            blockItem->setBackground(bad);
            blockItem->setToolTip(alarmTexts.join(QLatin1Char('\n')));
        }
        m_table->setItem(row, 0, blockItem);
        const bool zAlarm = hasAlarm(active, QStringLiteral("z-loss"), load.block);
        for (int c = 0; c < static_cast<int>(std::size(kMeasures)); ++c) {
            const Measure m = kMeasures[c];
            auto* item = new QTableWidgetItem(format(load, m));
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            const Verdict v = verdict(load, m, zAlarm);
            if (v != Verdict::Neutral)
                item->setBackground(v == Verdict::Good ? good : bad);
            item->setToolTip(tr("Block %1, step %2: %3 = %4\n%5")
                                 .arg(load.block + 1)
                                 .arg(state.step)
                                 .arg(measureName(m), format(load, m), measureTip(m)));
            m_table->setItem(row, c + 1, item);
        }
    }
}

void RouterHealthPanel::showPlot(const InsightHistory& history)
{
    const Measure m = measure();
    for (const QString& run : m_plot->runs())
        m_plot->removeRun(run);
    const double scale = isShare(m) ? 100.0 : 1.0;
    m_plot->setTitle(tr("%1 over training, per routing block%2").arg(measureName(m), isShare(m) ? tr(" (%)") : QString()));
    QHash<qint64, QVector<CurvePoint>> curves;
    QVector<qint64> blocks;
    for (const TrainingSnapshot& state : history.states())
        for (const RoutingStats& load : state.routing) {
            const double v = value(load, m);
            if (!std::isfinite(v))
                continue;  // the first block's consistency: there is none
            if (!curves.contains(load.block))
                blocks << load.block;
            curves[load.block].push_back({double(state.step), 0.0, v * scale});
        }
    std::sort(blocks.begin(), blocks.end());
    for (int i = 0; i < blocks.size(); ++i) {
        const QString run = QString::number(blocks[i]);
        m_plot->addRun(run, tr("block %1").arg(blocks[i] + 1), palette::seriesColor(i));
        m_plot->appendPoints(run, QStringLiteral("health"), curves[blocks[i]]);
    }
    m_plot->setNote(blocks.isEmpty() ? tr("No routing measured yet.") : QString());
}

QByteArray RouterHealthPanel::csv(const QString& runLabel) const
{
    QByteArray out = "run,step,block,max_violation,effective_experts,z_loss,dead_fraction,consistency\n";
    for (const RoutingStats& load : m_state.routing)
        out += csvField(runLabel) + ',' + QByteArray::number(m_state.step) + ',' + QByteArray::number(load.block + 1)
               + ',' + csvNumber(load.maxViolation) + ',' + csvNumber(load.effectiveExperts) + ','
               + csvNumber(load.zLoss) + ',' + csvNumber(load.deadFraction) + ','
               + (load.consistency < 0 ? QByteArray() : csvNumber(load.consistency)) + '\n';
    return out;
}

}  // namespace widelab
