#include "CurvesView.h"

#include "MetricChooser.h"

#include "CurveMath.h"
#include "common/Palette.h"
#include "vocab/Curves.h"

#include <QCheckBox>
#include <QEvent>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QResizeEvent>
#include <QScrollArea>
#include <QHeaderView>
#include <QLocale>
#include <QSlider>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <cmath>

namespace widelab {
namespace {

constexpr int kSliderSteps = 1000;  // smoothing = slider value / 1000, so 0.999 at most
constexpr double kDefaultSmoothing = 0.6;
constexpr int kThreeColumnsWidth = 1100;
constexpr int kTwoColumnsWidth = 560;

}  // namespace

CurvesView::CurvesView(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("curvesView"));
    setAccessibleName(tr("Training curves"));

    // Controls.
    auto* smoothingLabel = new QLabel(tr("Smoothing"), this);
    m_smoothingSlider = new QSlider(Qt::Horizontal, this);
    m_smoothingSlider->setObjectName(QStringLiteral("smoothingSlider"));
    m_smoothingSlider->setAccessibleName(tr("Smoothing"));
    m_smoothingSlider->setAccessibleDescription(
        tr("Weight of the exponential moving average drawn over each noisy curve, from 0 (raw) to 0.999"));
    m_smoothingSlider->setToolTip(tr("Smooths loss, accuracy, balance loss, gradient norm and tokens/s; their raw "
                                     "values stay drawn faintly behind. The learning rate and the validation "
                                     "points are always drawn as logged."));
    m_smoothingSlider->setRange(0, static_cast<int>(std::lround(curvemath::kMaxSmoothing * kSliderSteps)));
    m_smoothingSlider->setPageStep(50);
    m_smoothingSlider->setMinimumWidth(80);
    m_smoothingSlider->setMaximumWidth(220);
    smoothingLabel->setBuddy(m_smoothingSlider);
    m_smoothingValue = new QLabel(this);
    m_smoothingValue->setObjectName(QStringLiteral("smoothingValue"));
    m_smoothingValue->setAccessibleName(tr("Smoothing value"));
    m_smoothingValue->setMinimumWidth(m_smoothingValue->fontMetrics().horizontalAdvance(QStringLiteral("0.000")) + 4);

    m_logScale = new QCheckBox(tr("Log scale"), this);
    m_logScale->setObjectName(QStringLiteral("logScaleCheck"));
    m_logScale->setAccessibleName(tr("Logarithmic y axis"));
    m_logScale->setToolTip(tr("Logarithmic y axis in every chart (values at or below zero are not drawn)"));

    auto* xLabel = new QLabel(tr("X axis"), this);
    m_xAxis = new QComboBox(this);
    m_xAxis->setObjectName(QStringLiteral("xAxisCombo"));
    m_xAxis->setAccessibleName(tr("X axis"));
    m_xAxis->addItem(tr("Step"), static_cast<int>(CurvePlot::XAxisMode::Step));
    m_xAxis->addItem(tr("Time"), static_cast<int>(CurvePlot::XAxisMode::Time));
    m_xAxis->addItem(tr("Parameters"), static_cast<int>(CurvePlot::XAxisMode::Parameters));
    m_xAxis->setToolTip(tr("Step or wall-clock time; Parameters draws each run's last smoothed value "
                           "at its parameter count"));
    xLabel->setBuddy(m_xAxis);

    m_reset = new QPushButton(tr("Reset view"), this);
    m_reset->setObjectName(QStringLiteral("resetViewButton"));
    m_reset->setAccessibleName(tr("Reset view"));
    m_reset->setToolTip(tr("Fit every chart to all its data (double-click a chart for that chart alone)"));

    m_export = new QToolButton(this);
    m_export->setObjectName(QStringLiteral("exportButton"));
    m_export->setText(tr("Export…"));
    m_export->setAccessibleName(tr("Export chart"));
    m_export->setPopupMode(QToolButton::MenuButtonPopup);
    m_export->setToolButtonStyle(Qt::ToolButtonTextOnly);
    auto* exportMenu = new QMenu(m_export);
    m_export->setMenu(exportMenu);

    auto* controls = new QHBoxLayout;
    controls->setContentsMargins(0, 0, 0, 0);
    controls->addWidget(smoothingLabel);
    controls->addWidget(m_smoothingSlider);
    controls->addWidget(m_smoothingValue);
    controls->addSpacing(6);
    controls->addWidget(m_logScale);
    controls->addSpacing(6);
    controls->addWidget(xLabel);
    controls->addWidget(m_xAxis);
    controls->addStretch(1);
    m_valuesButton = new QToolButton(this);
    m_valuesButton->setObjectName(QStringLiteral("valuesButton"));
    m_valuesButton->setText(tr("Values"));
    m_valuesButton->setCheckable(true);
    m_valuesButton->setAccessibleName(tr("Values at the pointer"));
    m_valuesButton->setToolTip(tr("A table under the charts of every shown run's values at the step under the "
                                  "pointer (a line marks it on every chart)"));
    controls->addWidget(m_valuesButton);
    m_chooseCharts = new QToolButton(this);
    m_chooseCharts->setText(tr("Charts…"));
    m_chooseCharts->setObjectName(QStringLiteral("chooseChartsButton"));
    m_chooseCharts->setAccessibleName(tr("Choose charts"));
    m_chooseCharts->setToolTip(tr("Chart any other metric the runs write: routing and expert load per block, "
                                  "LayerNorm divergence, path weights, memory, step time, perplexity, ..."));
    controls->addWidget(m_chooseCharts);
    controls->addWidget(m_reset);
    controls->addWidget(m_export);

    // Charts, in a scroll area so a narrow window scrolls instead of squashing them.
    m_chartArea = new QWidget;
    m_grid = new QGridLayout(m_chartArea);
    m_grid->setContentsMargins(0, 0, 0, 0);
    m_grid->setSpacing(6);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("chartScrollArea"));
    scroll->setAccessibleName(tr("Charts"));
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(m_chartArea);

    m_emptyHint = new QLabel(this);
    m_emptyHint->setObjectName(QStringLiteral("curvesEmptyHint"));
    m_emptyHint->setAlignment(Qt::AlignCenter);
    m_emptyHint->setWordWrap(true);
    m_emptyHint->setStyleSheet(QStringLiteral("color: palette(link); padding: 6px;"));
    m_emptyHint->hide();

    m_valuesPanel = new QWidget(this);
    m_valuesPanel->setObjectName(QStringLiteral("valuesPanel"));
    auto* valuesLayout = new QVBoxLayout(m_valuesPanel);
    valuesLayout->setContentsMargins(0, 4, 0, 0);
    valuesLayout->setSpacing(2);
    m_valuesTitle = new QLabel(tr("Point at a chart"), m_valuesPanel);
    m_valuesTitle->setObjectName(QStringLiteral("valuesTitle"));
    m_values = new QTableWidget(m_valuesPanel);
    m_values->setObjectName(QStringLiteral("valuesTable"));
    m_values->setAccessibleName(tr("Values at the pointer's step"));
    m_values->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_values->verticalHeader()->hide();
    m_values->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_values->verticalHeader()->setDefaultSectionSize(m_values->fontMetrics().height() + 6);  // compact rows
    m_values->setMaximumHeight(120);
    valuesLayout->addWidget(m_valuesTitle);
    valuesLayout->addWidget(m_values);
    m_valuesPanel->hide();

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addLayout(controls);
    layout->addWidget(m_emptyHint);
    layout->addWidget(scroll, 1);
    layout->addWidget(m_valuesPanel);

    using Style = CurvePlot::SeriesStyle;
    addChart(QLatin1String(curve::kLoss), tr("Loss"), {QLatin1String(curve::kLoss), QLatin1String(curve::kValidationLoss)},
             {tr("train"), tr("validation")}, {Style::Smoothed, Style::Markers});
    addChart(QLatin1String(curve::kAccuracy), tr("Accuracy"),
             {QLatin1String(curve::kAccuracy), QLatin1String(curve::kValidationAccuracy)}, {tr("train"), tr("validation")},
             {Style::Smoothed, Style::Markers});
    addChart(QLatin1String(curve::kBalanceLoss), tr("Balance loss"), {QLatin1String(curve::kBalanceLoss)}, {QString()},
             {Style::Smoothed});
    addChart(QLatin1String(curve::kLearningRate), tr("Learning rate"), {QLatin1String(curve::kLearningRate)}, {QString()},
             {Style::Exact});
    addChart(QLatin1String(curve::kGradientNorm), tr("Gradient norm"), {QLatin1String(curve::kGradientNorm)}, {QString()},
             {Style::Smoothed});
    addChart(QLatin1String(curve::kTokensPerSecond), tr("Tokens per second"), {QLatin1String(curve::kTokensPerSecond)},
             {QString()}, {Style::Smoothed});
    // Shown once a run has translations scored (a translation run's validations).
    addChart(QStringLiteral("bleu"), tr("BLEU and chrF"),
             {QLatin1String(curve::kValidationBleu), QLatin1String(curve::kValidationChrf)},
             {tr("validation BLEU"), tr("validation chrF")}, {Style::Markers, Style::Markers}, /*optional=*/true);
    m_fixedCharts = static_cast<int>(m_charts.size());
    setCurrentChart(m_charts.front());
    relayout();

    connect(m_smoothingSlider, &QSlider::valueChanged, this, &CurvesView::applySmoothingFromSlider);
    connect(m_logScale, &QCheckBox::toggled, this, &CurvesView::setLogScale);
    connect(m_xAxis, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int index) {
        setXAxisMode(static_cast<CurvePlot::XAxisMode>(m_xAxis->itemData(index).toInt()));
    });
    connect(m_reset, &QPushButton::clicked, this, &CurvesView::resetViews);
    connect(m_valuesButton, &QToolButton::toggled, this, &CurvesView::setValuesShown);
    connect(m_export, &QToolButton::clicked, this, &CurvesView::exportCurrentChart);
    connect(m_chooseCharts, &QToolButton::clicked, this, &CurvesView::chooseCharts);

    m_smoothingSlider->setValue(static_cast<int>(std::lround(kDefaultSmoothing * kSliderSteps)));
    applySmoothingFromSlider(m_smoothingSlider->value());
}

CurvesView::~CurvesView() = default;

void CurvesView::addChart(const QString& key, const QString& title, const QStringList& metrics,
                          const QStringList& displayNames, const QVector<CurvePlot::SeriesStyle>& styles, bool optional)
{
    m_optional.append(optional);
    auto* plot = new CurvePlot(m_chartArea);
    plot->setKeepsPlotHeight(true);  // the chart area scrolls
    plot->setObjectName(key + QStringLiteral("Chart"));
    plot->setAccessibleName(tr("%1 chart").arg(title));
    plot->setTitle(title);
    for (qsizetype i = 0; i < metrics.size(); ++i) {
        plot->declareSeries(metrics[i], displayNames.value(i), styles.value(i, CurvePlot::SeriesStyle::Smoothed));
        m_metrics.append(metrics[i]);
        m_metricHeaders.append(displayNames.value(i).isEmpty() ? title : title + QStringLiteral(" · ") + displayNames[i]);
        m_metricCharts.append(static_cast<int>(m_charts.size()));
    }
    connect(plot, &CurvePlot::activated, this, [this, plot] { setCurrentChart(plot); });
    connect(plot, &CurvePlot::pointerMoved, this, &CurvesView::showValuesAt);
    connect(plot, &CurvePlot::stepClicked, this, &CurvesView::stepClicked);
    m_chartKeys.append(key);
    m_charts.append(plot);
    m_exportActions.append(m_export->menu()->addAction(tr("Export %1…").arg(title), this, [this, key] { exportChart(key); }));
}

// ---- metric charts -----------------------------------------------------------------------------

void CurvesView::setMetricTags(std::function<QStringList()> tags) { m_metricTags = std::move(tags); }

bool CurvesView::addMetricChart(const QString& tag)
{
    if (tag.isEmpty() || m_chartKeys.contains(tag) || m_metrics.contains(tag))
        return false;
    // A split's measurements are points now and then; the rest are logged as training goes.
    const bool measured = tag.startsWith(QLatin1String("validation/")) || tag.startsWith(QLatin1String("test/"));
    addChart(tag, tag, {tag}, {QString()},
             {measured ? CurvePlot::SeriesStyle::Markers : CurvePlot::SeriesStyle::Smoothed});
    CurvePlot* plot = m_charts.back();
    // As the other charts are: their runs, colours and settings.
    for (const RunEntry& run : std::as_const(m_runs))
        plot->addRun(run.id, run.label, palette::seriesColor(run.colorIndex, palette()), run.parameters);
    plot->setSmoothing(smoothing());
    plot->setLogScale(logScale());
    plot->setXAxisMode(xAxisMode());
    plot->setCursorStep(cursorStep());
    relayout();
    Q_EMIT metricChartAdded(tag);
    Q_EMIT metricChartsChanged(metricCharts());
    return true;
}

void CurvesView::removeMetricChart(const QString& tag)
{
    const int index = static_cast<int>(m_chartKeys.indexOf(tag));
    if (index < m_fixedCharts)
        return;  // not an added chart (or none)
    CurvePlot* plot = m_charts[index];
    for (qsizetype m = m_metrics.size() - 1; m >= 0; --m) {
        if (m_metricCharts[m] == index) {
            m_metrics.removeAt(m);
            m_metricHeaders.removeAt(m);
            m_metricCharts.removeAt(m);
        } else if (m_metricCharts[m] > index) {
            --m_metricCharts[m];
        }
    }
    m_chartKeys.removeAt(index);
    m_charts.removeAt(index);
    m_optional.removeAt(index);
    delete m_exportActions.takeAt(index);
    m_laidOut.removeAll(plot);
    m_grid->removeWidget(plot);
    if (m_current == plot)
        setCurrentChart(m_charts.front());
    delete plot;
    m_columns = 0;  // lay out again
    relayout();
    Q_EMIT metricChartsChanged(metricCharts());
}

QStringList CurvesView::metricCharts() const { return m_chartKeys.mid(m_fixedCharts); }

void CurvesView::setMetricCharts(const QStringList& tags)
{
    for (const QString& tag : metricCharts())
        if (!tags.contains(tag))
            removeMetricChart(tag);
    for (const QString& tag : tags)
        addMetricChart(tag);
}

void CurvesView::chooseCharts()
{
    MetricChooser chooser(m_metricTags ? m_metricTags() : QStringList(), metricCharts(), this);
    if (chooser.exec() != QDialog::Accepted)
        return;
    setMetricCharts(chooser.chosen());
}

// ---- runs and points -----------------------------------------------------------------------

void CurvesView::addRun(const QString& runId, const QString& label, double parameterCount)
{
    auto known = std::find_if(m_runs.begin(), m_runs.end(), [&](const RunEntry& r) { return r.id == runId; });
    if (known == m_runs.end()) {
        // The colour fewest current runs use; the lowest index among those.
        QVector<int> uses(palette::seriesCount(), 0);
        for (const RunEntry& r : std::as_const(m_runs))
            ++uses[r.colorIndex];
        RunEntry entry;
        entry.id = runId;
        entry.colorIndex = static_cast<int>(std::min_element(uses.cbegin(), uses.cend()) - uses.cbegin());
        m_runs.append(entry);
        known = m_runs.end() - 1;
    }
    known->label = label;
    known->parameters = parameterCount;
    for (CurvePlot* plot : std::as_const(m_charts))
        if (drawsRun(plot, *known))
            plot->addRun(runId, label, palette::seriesColor(known->colorIndex, palette()), parameterCount);
    updateBalanceNote();
    updateEmptyHint();
}

void CurvesView::setRunTraits(const QString& runId, const RunTraits& traits)
{
    auto run = std::find_if(m_runs.begin(), m_runs.end(), [&](const RunEntry& r) { return r.id == runId; });
    if (run == m_runs.end())
        return;
    run->traits = traits;
    CurvePlot* balance = chart(QLatin1String(curve::kBalanceLoss));
    if (!drawsRun(balance, *run))
        balance->removeRun(runId);
    else if (!balance->hasRun(runId))
        balance->addRun(runId, run->label, palette::seriesColor(run->colorIndex, palette()), run->parameters);
    updateBalanceNote();
}

CurvesView::RunTraits CurvesView::runTraits(const QString& runId) const
{
    for (const RunEntry& r : m_runs)
        if (r.id == runId)
            return r.traits;
    return RunTraits();
}

bool CurvesView::drawsRun(const CurvePlot* chart, const RunEntry& run) const
{
    return run.traits.hasExperts || chart != this->chart(QLatin1String(curve::kBalanceLoss));
}

void CurvesView::updateBalanceNote()
{
    QStringList without;
    for (const RunEntry& r : std::as_const(m_runs))
        if (!r.traits.hasExperts)
            without.append(r.label);
    QString note;
    if (!without.isEmpty() && without.size() == m_runs.size())
        note = m_runs.size() == 1 ? tr("No experts in this model: no balance loss")
                                  : tr("No run here has experts: no balance loss");
    else if (!without.isEmpty())
        note = tr("No experts, no balance loss: %1").arg(without.join(QStringLiteral(", ")));
    chart(QLatin1String(curve::kBalanceLoss))->setNote(note);
}

void CurvesView::removeRun(const QString& runId)
{
    m_runs.removeIf([&](const RunEntry& r) { return r.id == runId; });
    for (CurvePlot* plot : std::as_const(m_charts))
        plot->removeRun(runId);
    updateBalanceNote();
    updateEmptyHint();
    relayout();
}

void CurvesView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() != QEvent::PaletteChange)
        return;
    // Light to dark or back: each run's colour as readable on the new base.
    for (const RunEntry& run : std::as_const(m_runs))
        for (CurvePlot* plot : std::as_const(m_charts))
            if (plot->hasRun(run.id))
                plot->addRun(run.id, run.label, palette::seriesColor(run.colorIndex, palette()), run.parameters);
    Q_EMIT runColorsChanged();
}

void CurvesView::setEmptyHint(const QString& text)
{
    m_emptyHint->setText(text);
    updateEmptyHint();
}

bool CurvesView::emptyHintShown() const { return !m_emptyHint->isHidden(); }

void CurvesView::updateEmptyHint() { m_emptyHint->setVisible(m_runs.isEmpty() && !m_emptyHint->text().isEmpty()); }

void CurvesView::appendPoints(const QString& runId, const QString& metric, const QVector<CurvePoint>& points)
{
    const qsizetype index = m_metrics.indexOf(metric);
    if (index < 0)
        return;
    const int chart = m_metricCharts[index];
    m_charts[chart]->appendPoints(runId, metric, points);
    if (m_optional[chart] && !m_laidOut.contains(m_charts[chart]))
        relayout();  // its first points: the chart joins the grid
}

void CurvesView::clearRun(const QString& runId)
{
    for (CurvePlot* plot : std::as_const(m_charts))
        plot->clearRun(runId);
    relayout();
}

bool CurvesView::chartShown(int chart) const
{
    if (!m_optional[chart])
        return true;
    const CurvePlot* plot = m_charts[chart];
    for (const QString& run : plot->runs())
        for (const QString& series : plot->seriesNames())
            if (!plot->points(run, series).isEmpty())
                return true;
    return false;
}

QStringList CurvesView::runs() const
{
    QStringList ids;
    for (const RunEntry& r : m_runs)
        ids.append(r.id);
    return ids;
}

QColor CurvesView::runColor(const QString& runId) const
{
    for (const RunEntry& r : m_runs)
        if (r.id == runId)
            return palette::seriesColor(r.colorIndex, palette());
    return QColor();
}

// ---- charts ----------------------------------------------------------------------------------

CurvePlot* CurvesView::chart(const QString& chartKey) const
{
    const qsizetype index = m_chartKeys.indexOf(chartKey);
    return index >= 0 ? m_charts[index] : nullptr;
}

QStringList CurvesView::chartKeys() const { return m_chartKeys; }

QString CurvesView::chartKeyForMetric(const QString& metric) const
{
    const qsizetype index = m_metrics.indexOf(metric);
    return index >= 0 ? m_chartKeys[m_metricCharts[index]] : QString();
}

CurvePlot* CurvesView::currentChart() const { return m_current; }

void CurvesView::setCurrentChart(CurvePlot* chart)
{
    m_current = chart;
    m_export->setToolTip(tr("Export the %1 chart (the last one clicked) as PNG, PDF, SVG or CSV; "
                            "the arrow offers every chart")
                             .arg(chart->title()));
}

void CurvesView::relayout()
{
    const int w = width();
    const int columns = w >= kThreeColumnsWidth ? 3 : (w >= kTwoColumnsWidth ? 2 : 1);
    QVector<CurvePlot*> shown;  // an optional chart only once it has points
    for (int i = 0; i < m_charts.size(); ++i)
        if (chartShown(i))
            shown.append(m_charts[i]);
    if (columns == m_columns && shown == m_laidOut)
        return;
    m_columns = columns;
    m_laidOut = shown;
    for (int i = 0; i < m_charts.size(); ++i) {
        m_grid->removeWidget(m_charts[i]);
        m_charts[i]->setVisible(shown.contains(m_charts[i]));
        m_exportActions[i]->setVisible(shown.contains(m_charts[i]));  // a chart not shown is not offered
    }
    for (int i = 0; i < shown.size(); ++i)
        m_grid->addWidget(shown[i], i / columns, i % columns);
    for (int c = 0; c < 3; ++c)
        m_grid->setColumnStretch(c, c < columns ? 1 : 0);
}

void CurvesView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    relayout();
}

// ---- view settings ---------------------------------------------------------------------------

void CurvesView::setSmoothing(double weight)
{
    m_smoothingSlider->setValue(static_cast<int>(std::lround(curvemath::clampSmoothing(weight) * kSliderSteps)));
}

double CurvesView::smoothing() const { return m_charts.front()->smoothing(); }

void CurvesView::applySmoothingFromSlider(int value)
{
    const double weight = curvemath::clampSmoothing(static_cast<double>(value) / kSliderSteps);
    m_smoothingValue->setText(QString::number(weight, 'f', 3));
    for (CurvePlot* plot : std::as_const(m_charts))
        plot->setSmoothing(weight);
}

void CurvesView::setLogScale(bool on)
{
    if (m_logScale->isChecked() != on)
        m_logScale->setChecked(on);  // comes back here through toggled
    for (CurvePlot* plot : std::as_const(m_charts))
        plot->setLogScale(on);
}

bool CurvesView::logScale() const { return m_logScale->isChecked(); }

void CurvesView::setXAxisMode(CurvePlot::XAxisMode mode)
{
    const int index = m_xAxis->findData(static_cast<int>(mode));
    if (m_xAxis->currentIndex() != index)
        m_xAxis->setCurrentIndex(index);  // comes back here through currentIndexChanged
    for (CurvePlot* plot : std::as_const(m_charts))
        plot->setXAxisMode(mode);
    m_valuesX = std::numeric_limits<double>::quiet_NaN();  // a step is not a time
}

CurvePlot::XAxisMode CurvesView::xAxisMode() const
{
    return static_cast<CurvePlot::XAxisMode>(m_xAxis->currentData().toInt());
}

void CurvesView::setCursorStep(qint64 step)
{
    for (CurvePlot* plot : std::as_const(m_charts))
        plot->setCursorStep(step);
}

qint64 CurvesView::cursorStep() const { return m_charts.front()->cursorStep(); }

// ---- crosshair and values ------------------------------------------------------------------

void CurvesView::showValuesAt(double x)
{
    if (std::isfinite(x) && xAxisMode() == CurvePlot::XAxisMode::Step)
        x = std::round(x);  // steps are whole
    for (CurvePlot* plot : std::as_const(m_charts))
        plot->setCrosshair(x);
    if (!std::isfinite(x) || !valuesShown())
        return;  // the table keeps the last step pointed at, to be read
    m_valuesX = x;
    const bool time = xAxisMode() == CurvePlot::XAxisMode::Time;
    m_valuesTitle->setText(time ? tr("At %1 since the start").arg(curvemath::formatDuration(x))
                                : tr("At step %1").arg(QLocale().toString(static_cast<qint64>(std::floor(x)))));
    // A column a metric that some run has a value for at x.
    QVector<QVector<CurvePlot::ValueAt>> perChart;
    for (CurvePlot* plot : std::as_const(m_charts))
        perChart.append(plot->valuesAt(x));
    QList<int> columns;  // indices into m_metrics
    for (int m = 0; m < m_metrics.size(); ++m)
        for (const CurvePlot::ValueAt& v : std::as_const(perChart[m_metricCharts[m]]))
            if (v.series == m_metrics[m]) {
                columns.append(m);
                break;
            }
    m_values->clear();
    m_values->setColumnCount(static_cast<int>(columns.size()) + 1);
    m_values->setRowCount(static_cast<int>(m_runs.size()));
    QStringList headers{tr("Run")};
    for (int m : std::as_const(columns))
        headers << m_metricHeaders[m];
    m_values->setHorizontalHeaderLabels(headers);
    for (int r = 0; r < m_runs.size(); ++r) {
        const RunEntry& run = m_runs[r];
        auto* name = new QTableWidgetItem(run.label);
        name->setForeground(palette::seriesColor(run.colorIndex, palette()));
        m_values->setItem(r, 0, name);
        for (int c = 0; c < columns.size(); ++c) {
            const int m = columns[c];
            for (const CurvePlot::ValueAt& v : std::as_const(perChart[m_metricCharts[m]])) {
                if (v.runId != run.id || v.series != m_metrics[m])
                    continue;
                auto* cell = new QTableWidgetItem(QString::number(v.value, 'g', 5));
                cell->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                cell->setToolTip(time ? tr("logged at %1").arg(curvemath::formatDuration(v.key))
                                      : tr("logged at step %1").arg(QLocale().toString(static_cast<qint64>(v.key))));
                m_values->setItem(r, c + 1, cell);
            }
        }
    }
}

void CurvesView::setValuesShown(bool on)
{
    if (m_valuesButton->isChecked() != on)
        m_valuesButton->setChecked(on);  // comes back here through toggled
    m_valuesPanel->setVisible(on);
    if (on && std::isfinite(m_valuesX))
        showValuesAt(m_valuesX);
}

bool CurvesView::valuesShown() const { return m_valuesButton->isChecked(); }

int CurvesView::valuesRowCount() const { return m_values->rowCount(); }

QString CurvesView::valuesTitle() const { return m_valuesTitle->text(); }

QString CurvesView::valuesCell(int row, const QString& columnHeader) const
{
    for (int c = 0; c < m_values->columnCount(); ++c)
        if (m_values->horizontalHeaderItem(c) && m_values->horizontalHeaderItem(c)->text() == columnHeader) {
            const QTableWidgetItem* item = m_values->item(row, c);
            return item ? item->text() : QString();
        }
    return {};
}

void CurvesView::resetViews()
{
    for (CurvePlot* plot : std::as_const(m_charts))
        plot->resetView();
}

void CurvesView::exportChart(const QString& chartKey)
{
    if (CurvePlot* plot = chart(chartKey)) {
        setCurrentChart(plot);
        plot->exportWithDialog();
    }
}

void CurvesView::exportCurrentChart()
{
    if (m_current)
        m_current->exportWithDialog();
}

}  // namespace widelab
