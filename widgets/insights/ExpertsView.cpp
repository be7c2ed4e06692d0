#include "ExpertsView.h"

#include "AlarmList.h"
#include "ColorScale.h"
#include "ExpertSpecialisationPanel.h"
#include "MatrixView.h"
#include "common/Elements.h"
#include "common/Palette.h"
#include "PatchExpertGrid.h"
#include "RouterHealthPanel.h"
#include "common/ViewExport.h"

#include <QComboBox>
#include <QEvent>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

constexpr int kMaxTimeColumns = 300;

QString percent(double share) { return QString::number(100.0 * share, 'f', 1) + QLatin1Char('%'); }

// The largest finite value, 0 when there is none.
double largest(const QVector<double>& values)
{
    double top = 0;
    bool any = false;
    for (double v : values)
        if (std::isfinite(v)) {
            top = any ? std::max(top, v) : v;
            any = true;
        }
    return top;
}

double busiest(const RoutingStats& load) { return largest(QVector<double>(load.loadVsFair.begin(), load.loadVsFair.end())); }

// The most experts any block reports (blocks of a model agree; a damaged line need not).
int expertCount(const TrainingSnapshot& state)
{
    int experts = 0;
    for (const RoutingStats& load : state.routing)
        experts = std::max(experts, sizeOf(load.tokensPerExpert));
    return experts;
}

// The page's body: it fills the height it is given instead of telling the
// scroll area the height its word-wrapped labels would like beside the maps'
// preferred sizes (which made the page scroll at 720 pixels); the page scrolls
// only below its minimum size.
class FillingBody : public QWidget {
public:
    using QWidget::QWidget;
    bool hasHeightForWidth() const override { return false; }
};

}  // namespace

ExpertsView::ExpertsView(QWidget* parent) : InsightPage(parent)
{
    m_empty = new QLabel(tr("This model has no experts: every block has one dense FFN, so nothing is routed."), this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_body = new FillingBody(this);

    m_share = new MatrixView;
    m_share->setAccessibleName(tr("Share of tokens per block and expert"));
    m_overTime = new MatrixView;
    m_overTime->setAccessibleName(tr("Share of tokens over training"));
    m_routing = new MatrixView;
    m_routing->setAccessibleName(tr("Expert of each probe token in each block"));
    m_patches = new PatchExpertGrid;
    m_patches->setAccessibleName(tr("Expert of each patch of the probe image in each block"));
    m_patchLegend = new QLabel;
    m_patchLegend->setWordWrap(true);
    m_patchLegend->setTextFormat(Qt::RichText);
    m_patchArea = new QScrollArea;
    m_patchArea->setWidget(m_patches);
    m_patchArea->setWidgetResizable(true);
    m_patchArea->setFrameShape(QFrame::NoFrame);
    m_patchArea->viewport()->installEventFilter(this);
    m_patchBox = new QWidget;
    auto* patchLayout = new QVBoxLayout(m_patchBox);
    patchLayout->setContentsMargins(0, 0, 0, 0);
    patchLayout->addWidget(m_patchLegend);
    patchLayout->addWidget(m_patchArea, 1);
    m_routingStack = new QStackedWidget;
    m_routingStack->addWidget(m_routing);
    m_routingStack->addWidget(m_patchBox);
    m_table = new QTableWidget;
    m_table->setAccessibleName(tr("Dropped tokens, unused experts and balance per block"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_flags = new QLabel;
    m_flags->setWordWrap(true);
    m_flags->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_timeBlock = new QComboBox;
    m_timeBlock->setAccessibleName(tr("Block shown over time"));
    m_timeBlock->setSizeAdjustPolicy(QComboBox::AdjustToContents);

    auto* timeBox = new QWidget;
    auto* timeLayout = new QVBoxLayout(timeBox);
    timeLayout->setContentsMargins(0, 0, 0, 0);
    auto* timeControls = new QHBoxLayout;
    auto* timeLabel = new QLabel(tr("Over time, &block:"));
    timeLabel->setBuddy(m_timeBlock);
    timeControls->addWidget(timeLabel);
    timeControls->addWidget(m_timeBlock);
    timeControls->addStretch(1);
    timeLayout->addLayout(timeControls);
    timeLayout->addWidget(m_overTime, 1);

    auto* tableBox = new QWidget;
    auto* tableLayout = new QVBoxLayout(tableBox);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tableLayout->addWidget(m_flags);
    tableLayout->addWidget(m_table, 1);

    auto* top = new QSplitter(Qt::Horizontal);
    top->addWidget(m_share);
    top->addWidget(timeBox);
    auto* bottom = new QSplitter(Qt::Horizontal);
    bottom->addWidget(tableBox);
    bottom->addWidget(m_routingStack);
    bottom->setSizes({1000, 1000});  // halves, whatever the contents ask for
    top->setSizes({1000, 1000});  // halves, whatever the contents ask for
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(top);
    split->addWidget(bottom);

    m_health = new RouterHealthPanel;
    m_specialisation = new ExpertSpecialisationPanel;
    m_alarmBadge = new QLabel;
    m_alarmBadge->setWordWrap(true);
    m_alarmBadge->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_alarmBadge->setAccessibleName(tr("Routing alarms in force"));
    m_alarmBadge->setStyleSheet(QStringLiteral("QLabel { background: %1; padding: 3px; border-radius: 3px; }")
                                    .arg(palette::blend(palette().color(QPalette::Base), palette::seriesColor(5), 0.3)
                                             .name()));
    m_alarmBadge->hide();
    m_sections = new QTabWidget;
    m_sections->setDocumentMode(true);
    m_sections->addTab(split, tr("Load"));
    m_sections->addTab(m_health, tr("Router health"));
    m_sections->addTab(m_specialisation, tr("Specialisation"));
    m_sections->setTabToolTip(1, tr("Balance, entropy, z-loss, dead experts and consistency per routing block, and "
                                    "the trainer's routing alarms"));
    m_sections->setTabToolTip(2, tr("The tokens and classes each expert receives, measured at each validation"));
    auto* bodyLayout = new QVBoxLayout(m_body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    bodyLayout->addWidget(m_alarmBadge);
    bodyLayout->addWidget(m_sections, 1);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_empty);
    layout->addWidget(m_body, 1);
    connect(m_timeBlock, &QComboBox::currentIndexChanged, this, &ExpertsView::refresh);
    connect(m_health, &RouterHealthPanel::measureChanged, this, &ExpertsView::refresh);
    // A click on an alarm shows its block's experts.
    connect(m_health->alarms(), &AlarmList::alarmActivated, this,
            [this](const HealthEvent& alarm) { m_specialisation->setBlock(alarm.block); });
}

void ExpertsView::setTimeBlock(int block) { m_timeBlock->setCurrentIndex(m_timeBlock->findData(block)); }
void ExpertsView::setSection(Section section) { m_sections->setCurrentIndex(int(section)); }
ExpertsView::Section ExpertsView::section() const { return Section(m_sections->currentIndex()); }
QVector<HealthEvent> ExpertsView::activeAlarms() const { return m_health->alarms()->active(); }

void ExpertsView::refresh()
{
    // Whether the model routes comes from its configuration; the newest step
    // that measured routing is the one shown (a stop between log steps measures none).
    const TrainingSnapshot* state = m_primary.valid() ? m_primary.history->routedStateAt(m_step) : nullptr;
    if (state != nullptr)
        m_state = *state;
    else
        m_state.reset();
    const bool routed = m_state.has_value();
    const bool experts = m_primary.valid() && m_primary.history->hasExperts();
    m_empty->setVisible(!routed);
    m_body->setVisible(routed);
    m_warnings.clear();
    if (!routed) {
        m_empty->setText(!experts ? tr("This model has no experts: every block has one dense FFN, so nothing is routed.")
                         : m_step >= 0 && m_primary.history->routedStateAt(-1) != nullptr
                             ? tr("No routing was measured at or before step %1.").arg(m_step)
                             : tr("No measurement yet: expert load appears with the first training snapshot."));
        return;
    }
    const int blocks = static_cast<int>(m_state->routing.size());
    if (m_timeBlock->count() != blocks + 1) {
        const QSignalBlocker block(m_timeBlock);
        m_timeBlock->clear();
        m_timeBlock->addItem(tr("mean of all"), -1);
        for (const RoutingStats& load : m_state->routing)
            m_timeBlock->addItem(tr("block %1").arg(load.block + 1), static_cast<int>(load.block));
    }
    // Alarms up to the step asked for (live: all of them), so that scrubbing
    // back hides those raised later.
    m_health->show(m_primary.runId, *m_primary.history, *m_state, m_step);
    const QVector<HealthEvent> active = activeAlarms();
    m_alarmBadge->setText(m_health->alarms()->badgeText());
    m_alarmBadge->setVisible(!active.isEmpty());
    m_sections->setTabText(1, active.isEmpty() ? tr("Router health") : tr("Router health ⚠ %1").arg(active.size()));
    const ValidationInsights* insight = m_primary.history->validationInsightAt(m_step);
    m_specialisation->show(insight, active,
                           insight == nullptr && m_primary.history->validationInsightAt(-1) != nullptr
                               ? tr("No validation at or before step %1: what each expert receives is measured at "
                                    "each validation.").arg(m_step)
                               : tr("No validation yet: what each expert receives (its tokens, and for a "
                                    "classifier their classes) is measured at each validation."));
    showShare(*m_state, active);
    showOverTime(*m_primary.history, m_state->step);
    showTable(*m_state);
    const ProbeResult* capture = m_primary.history->captureAt(probeText(), m_step);
    showRouting(capture, expertCount(*m_state));
}

void ExpertsView::showShare(const TrainingSnapshot& state, const QVector<HealthEvent>& active)
{
    MatrixView::Matrix m;
    m.rows = static_cast<int>(state.routing.size());
    m.cols = expertCount(state);
    if (m.cols == 0) {
        m_share->setTitle(tr("Share of tokens routed, step %1").arg(state.step));
        m_share->clear(tr("The measurement at step %1 names no experts.").arg(state.step));
        return;
    }
    m.rowTitle = tr("block");
    m.columnTitle = tr("expert");
    for (int e = 0; e < m.cols; ++e)
        m.columnLabels.push_back(QString::number(e + 1));
    for (const RoutingStats& load : state.routing) {
        m.rowLabels.push_back(QString::number(load.block + 1));
        const std::vector<double> shares = load.shares();
        for (int e = 0; e < m.cols; ++e) {
            m.values.push_back(static_cast<float>(valueAt(shares, e)));
            m.cellTexts.push_back(percent(valueAt(shares, e)));
        }
    }
    double low = 0, high = 0;
    colorscale::finiteRange(m.values.constData(), m.values.size(), &low, &high);
    m.low = 0;
    m.high = std::max(1e-6, high);
    m.valueName = tr("share");
    m.valueScale = 100;
    m.valueSuffix = QStringLiteral("%");
    m.decimals = 1;
    // The experts an alarm in force names are outlined, and their read-out says why.
    QHash<QPair<int, int>, QString> alarmed;
    for (int row = 0; row < sizeOf(state.routing); ++row)
        for (const HealthEvent& alarm : active)
            if (alarm.block == state.routing[row].block && alarm.index >= 0 && alarm.index < m.cols) {
                const int expert = static_cast<int>(alarm.index);
                m.marked.push_back(QPoint(expert, row));
                alarmed[{row, expert}] += QStringLiteral("\n⚠ ") + QString::fromStdString(alarm.text);
            }
    const std::vector<RoutingStats> routing = state.routing;
    m_share->setReadout([routing, alarmed](int row, int col) {
        const RoutingStats& load = routing[static_cast<std::size_t>(row)];
        return tr("block %1, expert %2: %3 of the tokens (%4 tokens, %5× a fair share)")
                   .arg(load.block + 1)
                   .arg(col + 1)
                   .arg(percent(load.share(col)))
                   .arg(valueAt(load.tokensPerExpert, col))
                   .arg(QString::number(valueAt(load.loadVsFair, col), 'f', 2))
               + alarmed.value({row, col});
    });
    m_share->setTitle(tr("Share of tokens routed, step %1").arg(state.step)
                      + (m.marked.isEmpty() ? QString() : tr(" (outlined: an alarm in force)")));
    m_share->setMatrix(std::move(m));
}

void ExpertsView::showOverTime(const InsightHistory& history, qint64 upTo)
{
    const int block = m_timeBlock->currentData().toInt();
    QVector<const TrainingSnapshot*> states;
    for (const TrainingSnapshot& state : history.states())
        if (state.step <= upTo && !state.routing.empty())
            states.push_back(&state);
    // At most kMaxTimeColumns columns, spread evenly over the run, the newest last.
    if (states.size() > kMaxTimeColumns) {
        QVector<const TrainingSnapshot*> sampled;
        for (int i = 0; i < kMaxTimeColumns; ++i)
            sampled.push_back(states[qsizetype(double(i) * (states.size() - 1) / (kMaxTimeColumns - 1))]);
        states = sampled;
    }
    if (states.isEmpty()) {
        m_overTime->clear();
        return;
    }
    const int experts = expertCount(*states.back());
    if (experts == 0) {
        m_overTime->clear(tr("The measurements name no experts."));
        return;
    }
    MatrixView::Matrix m;
    m.rows = experts;
    m.cols = static_cast<int>(states.size());
    m.rowTitle = tr("expert");
    m.columnTitle = tr("step");
    for (int e = 0; e < experts; ++e)
        m.rowLabels.push_back(QString::number(e + 1));
    for (const TrainingSnapshot* state : states)
        m.columnLabels.push_back(QString::number(state->step));
    m.values.resize(qsizetype(m.rows) * m.cols);
    for (int c = 0; c < m.cols; ++c) {
        // The mean over the chosen blocks of each expert's share.
        QVector<double> sum(experts, 0.0);
        int counted = 0;
        for (const RoutingStats& load : states[c]->routing) {
            if (block >= 0 && load.block != block)
                continue;
            const std::vector<double> shares = load.shares();
            for (int e = 0; e < experts; ++e)
                sum[e] += valueAt(shares, e);
            ++counted;
        }
        for (int e = 0; e < experts; ++e)
            m.values[qsizetype(e) * m.cols + c] = counted > 0 ? float(sum[e] / counted) : 0.0f;
    }
    double low = 0, high = 0;
    colorscale::finiteRange(m.values.constData(), m.values.size(), &low, &high);
    m.low = 0;
    m.high = std::max(1e-6, high);
    m.valueName = tr("share");
    m.valueScale = 100;
    m.valueSuffix = QStringLiteral("%");
    m.decimals = 1;
    m_overTime->setReadout({});
    m_overTime->setTitle(block < 0 ? tr("Share of tokens over training, mean of all blocks")
                                   : tr("Share of tokens over training, block %1").arg(block + 1));
    m_overTime->setMatrix(std::move(m));
}

void ExpertsView::showTable(const TrainingSnapshot& state)
{
    int choices = 0;
    for (const RoutingStats& load : state.routing)
        choices = std::max(choices, static_cast<int>(load.droppedPercentPerChoice.size()));
    QStringList headers{tr("Block")}, tips{QString()};
    for (int k = 0; k < choices; ++k) {
        headers << tr("Dropped %1").arg(k + 1);
        tips << tr("Tokens whose choice %1 was dropped for lack of capacity").arg(k + 1);
    }
    headers << tr("Unused") << tr("Entropy") << tr("Busiest");
    tips << tr("Experts that received no token") << tr("Mean entropy of the router's distribution, in nats")
         << tr("The busiest expert's tokens over a fair share (S·K/E)");
    m_table->setColumnCount(static_cast<int>(headers.size()));
    m_table->setHorizontalHeaderLabels(headers);
    for (int col = 0; col < tips.size(); ++col)
        m_table->horizontalHeaderItem(col)->setToolTip(tips[col]);
    m_table->setRowCount(static_cast<int>(state.routing.size()));
    const QColor flagged = palette::blend(palette().color(QPalette::Base), palette::seriesColor(0), 0.25);
    for (int row = 0; row < sizeOf(state.routing); ++row) {
        const RoutingStats& load = state.routing[static_cast<std::size_t>(row)];
        QStringList problems;
        if (load.unusedExperts > 0) {
            QStringList idle;
            for (int e = 0; e < sizeOf(load.tokensPerExpert); ++e)
                if (load.tokensPerExpert[static_cast<std::size_t>(e)] == 0)
                    idle << QString::number(e + 1);
            problems << tr("block %1: expert %2 received no tokens").arg(load.block + 1).arg(idle.join(QStringLiteral(", ")));
        }
        if (busiest(load) > kImbalance)
            problems << tr("block %1: the busiest expert has %2× its fair share")
                            .arg(load.block + 1)
                            .arg(QString::number(busiest(load), 'f', 1));
        m_warnings << problems;
        QStringList cells{(problems.isEmpty() ? QString() : QStringLiteral("⚠ ")) + QString::number(load.block + 1)};
        for (int k = 0; k < choices; ++k)
            cells << QString::number(valueAt(load.droppedPercentPerChoice, k), 'f', 1) + QLatin1Char('%');
        cells << QString::number(load.unusedExperts) << QString::number(load.routerEntropy, 'f', 3)
              << QString::number(busiest(load), 'f', 2) + QStringLiteral("×");
        for (int col = 0; col < cells.size(); ++col) {
            auto* item = new QTableWidgetItem(cells[col]);
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (!problems.isEmpty()) {
                item->setBackground(flagged);
                item->setToolTip(problems.join(QLatin1Char('\n')));
            }
            m_table->setItem(row, col, item);
        }
    }
    m_flags->setText(m_warnings.isEmpty()
                         ? tr("Step %1: every expert receives tokens; no block is out of balance.").arg(state.step)
                         : QStringLiteral("⚠ ") + tr("Step %1: ").arg(state.step) + m_warnings.join(QStringLiteral("; ")));
}

void ExpertsView::fitPatches()
{
    constexpr int kMinTile = 64, kMaxTile = 360;
    const int cell = std::min(kMaxTile, m_patches->fittingCellSize(m_patchArea->viewport()->size(), kMinTile));
    if (cell != m_patches->cellSize())
        m_patches->setCellSize(cell);
}

bool ExpertsView::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::Resize && watched == m_patchArea->viewport() && showsPatches())
        fitPatches();
    return InsightPage::eventFilter(watched, event);
}

bool ExpertsView::showsPatches() const { return m_routingStack->currentWidget() == m_patchBox; }

void ExpertsView::showRouting(const ProbeResult* capture, int experts)
{
    m_patches->setCapture(capture);
    if (capture != nullptr && probeHasImage(*capture) && m_patches->blocks() > 0) {
        // Swatches of every expert, and the mark of a dropped patch.
        QStringList keys;
        for (int e = 0; e < experts; ++e)
            keys << QStringLiteral("<span style=\"color:%1\">■</span>&nbsp;%2")
                        .arg(colorscale::categorical(e).name(), tr("expert %1").arg(e + 1));
        keys << tr("▨&nbsp;✕ dropped (no expert had room)");
        m_patchLegend->setText(tr("<b>First-choice expert of each patch, step %1</b> (of %2 experts)<br>%3")
                                   .arg(capture->step)
                                   .arg(experts)
                                   .arg(keys.join(QStringLiteral(" &nbsp; "))));
        m_routingStack->setCurrentWidget(m_patchBox);
        fitPatches();
        return;
    }
    m_routingStack->setCurrentWidget(m_routing);
    if (capture == nullptr || capture->experts.empty()) {
        m_routing->clear(tr("No probe captured yet: the route of each probe token appears with the first capture."));
        return;
    }
    if (probeTokenCount(*capture) == 0) {
        m_routing->setTitle(QString());
        m_routing->clear(tr("The probe at step %1 has no tokens: there is no route to show.").arg(capture->step));
        return;
    }
    MatrixView::Matrix m;
    m.scale = MatrixView::Scale::Categorical;
    m.rows = static_cast<int>(capture->experts.size());
    m.cols = probeTokenCount(*capture);
    m.rowTitle = tr("block");
    m.columnTitle = tr("token");
    const QStringList tokens = probeTokens(*capture);
    for (const QString& token : tokens)
        m.columnLabels.push_back(visibleToken(token));
    // The choices of a token of a block; none outside the routing (a damaged line).
    using Choices = std::vector<std::vector<std::vector<std::int64_t>>>;  // [block][token][choice]
    auto chosenOf = [](const Choices& choices, int block, int token) -> const std::vector<std::int64_t>* {
        if (block < 0 || token < 0 || static_cast<std::size_t>(block) >= choices.size()
            || static_cast<std::size_t>(token) >= choices[static_cast<std::size_t>(block)].size())
            return nullptr;
        return &choices[static_cast<std::size_t>(block)][static_cast<std::size_t>(token)];
    };
    for (int b = 0; b < m.rows; ++b) {
        m.rowLabels.push_back(QString::number(b + 1));
        for (int t = 0; t < m.cols; ++t) {
            const std::vector<std::int64_t>* chosen = chosenOf(capture->experts, b, t);
            const int first = chosen == nullptr || chosen->empty() ? -1 : static_cast<int>(chosen->front());
            m.categories.push_back(first);
            m.cellTexts.push_back(first < 0 ? QStringLiteral("–") : QString::number(first + 1));
        }
    }
    m_routing->setReadout([choices = capture->experts, tokens, chosenOf](int row, int col) {
        QStringList picked;
        if (const std::vector<std::int64_t>* chosen = chosenOf(choices, row, col))
            for (std::size_t k = 0; k < chosen->size(); ++k)
                picked << ((*chosen)[k] < 0 ? tr("choice %1 dropped").arg(k + 1)
                                            : tr("choice %1: expert %2").arg(k + 1).arg((*chosen)[k] + 1));
        return tr("block %1, token %2 \"%3\": %4")
            .arg(row + 1)
            .arg(col)
            .arg(visibleToken(tokens.value(col)))
            .arg(picked.join(QStringLiteral(", ")));
    });
    m_routing->setTitle(tr("First-choice expert of each probe token, step %1 (of %2 experts)").arg(capture->step).arg(experts));
    m_routing->setMatrix(std::move(m));
}

QString ExpertsView::exportTitle() const { return tr("experts %1 step %2").arg(m_primary.label).arg(m_state ? m_state->step : 0); }

QByteArray ExpertsView::csv() const
{
    // The numbers of the part shown: router health, specialisation, or the load below.
    if (m_state && section() == Section::Health)
        return m_health->csv(m_primary.label);
    if (m_state && section() == Section::Specialisation)
        return m_specialisation->csv(m_primary.label);
    QByteArray out = "run,step,block,expert,tokens,share,load_vs_fair,router_entropy,unused_experts,dropped_percent_per_choice\n";
    if (!m_state)
        return out;
    for (const RoutingStats& load : m_state->routing) {
        QStringList dropped;
        for (double d : load.droppedPercentPerChoice)
            dropped << QString::fromLatin1(csvNumber(d));
        const std::vector<double> shares = load.shares();
        for (std::size_t e = 0; e < load.tokensPerExpert.size(); ++e)
            out += csvField(m_primary.label) + ',' + QByteArray::number(m_state->step) + ','
                   + QByteArray::number(load.block + 1) + ',' + QByteArray::number(e + 1) + ','
                   + QByteArray::number(load.tokensPerExpert[e]) + ',' + csvNumber(shares[e]) + ','
                   + csvNumber(valueAt(load.loadVsFair, static_cast<qsizetype>(e))) + ',' + csvNumber(load.routerEntropy) + ','
                   + QByteArray::number(load.unusedExperts) + ',' + csvField(dropped.join(QLatin1Char(' '))) + '\n';
    }
    return out;
}

}  // namespace widelab
