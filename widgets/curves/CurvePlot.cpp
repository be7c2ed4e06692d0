// CurvePlot: construction, colours, runs and series, view settings, events.
// The rest lives beside it: CurvePlotRefresh.cpp (what the graphs are handed),
// CurvePlotLegend.cpp (legend and note), CurvePlotHover.cpp (the read-out),
// CurvePlotExport.cpp (images and CSV).
#include "CurvePlot.h"

#include "CurveMath.h"
#include "CurvePlotParts.h"
#include "common/Palette.h"
#include "SiAxisTicker.h"
#include "ValueAxisTicker.h"

#include <QContextMenuEvent>
#include <QLineF>
#include <QMenu>

#include <algorithm>
#include <array>
#include <cmath>

namespace widelab {
namespace {

using namespace curveplot;
using palette::blend;

constexpr int kRefreshIntervalMs = 40;
constexpr double kMarkerLineWidth = 1.0;  // the thin line joining a Markers series' markers
constexpr int kFaintAlpha = 70;           // the raw line behind a smoothed one

}  // namespace
CurvePlot::CurvePlot(QWidget* parent)
    : QCustomPlot(parent)
{
    setMouseTracking(true);  // hover read-out without a pressed button
    setFocusPolicy(Qt::ClickFocus);
    setMinimumSize(240, kMinChartHeight);
    // setKeepsPlotHeight: the chart asks for its title, legend and axes above
    // kMinPlotHeight of data, however many runs the legend lists.
    connect(this, &QCustomPlot::afterLayout, this, [this] {
        const int plotHeight = axisRect()->rect().height();
        if (!m_keepsPlotHeight || !isVisible() || plotHeight <= 0)
            return;
        const int wanted = std::max(kMinChartHeight, height() - plotHeight + kMinPlotHeight);
        if (minimumHeight() != wanted)
            setMinimumHeight(wanted);
    });
    setAutoAddPlottableToLegend(false);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    setNoAntialiasingOnDrag(true);
    selectionRect()->setPen(QPen(QColor(0, 114, 178), 1, Qt::DashLine));
    selectionRect()->setBrush(QColor(0, 114, 178, 40));

    addLayer(QStringLiteral("faint"), layer(QStringLiteral("main")), limBelow);
    m_faintLayer = layer(QStringLiteral("faint"));
    m_hoverLayer = layer(QStringLiteral("overlay"));
    m_hoverLayer->setMode(QCPLayer::lmBuffered);  // hovering repaints this layer only

    plotLayout()->insertRow(0);
    m_title = new QCPTextElement(this, QString(), chartFont(10, true));
    m_title->setMargins(QMargins(0, 4, 0, 0));
    plotLayout()->addElement(0, 0, m_title);

    for (QCPAxis* axis : {xAxis, yAxis}) {
        axis->setTickLabelFont(chartFont(8));
        axis->setLabelFont(chartFont(8));
        axis->setTickLengthOut(0);
        axis->setSubTickLengthOut(0);
    }
    xAxis->setLabelPadding(2);
    m_valueTicker = QSharedPointer<ValueAxisTicker>::create();
    yAxis->setTicker(m_valueTicker);
    yAxis->setNumberFormat(QStringLiteral("gbd"));  // "3e-4" tick labels are drawn as 3·10^-4

    legend->setVisible(false);
    legend->setFont(chartFont(8));
    legend->setIconSize(22, 11);
    legend->setRowSpacing(-2);
    legend->setColumnSpacing(10);
    legend->setMargins(QMargins(5, 1, 5, 1));
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    // Under the axis rect, never over the data (placed while it has entries: layoutLegend).
    axisRect()->insetLayout()->take(legend);
    axisRect()->insetLayout()->simplify();

    m_noteCentre = new QCPItemText(this);
    m_noteCentre->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_noteCentre->position->setCoords(0.5, 0.5);
    m_noteCentre->setPositionAlignment(Qt::AlignCenter);
    m_noteCentre->setFont(chartFont(9));
    m_noteCentre->setVisible(false);

    m_tracer = new QCPItemTracer(this);
    m_tracer->setLayer(m_hoverLayer);
    m_tracer->setStyle(QCPItemTracer::tsCircle);
    m_tracer->setSize(9);
    m_tracer->setVisible(false);
    m_hoverLabel = new QCPItemText(this);
    m_hoverLabel->setLayer(m_hoverLayer);
    m_hoverLabel->position->setType(QCPItemPosition::ptAbsolute);
    m_hoverLabel->setTextAlignment(Qt::AlignLeft);
    m_hoverLabel->setPadding(QMargins(6, 4, 6, 4));
    m_hoverLabel->setFont(chartFont(8));
    m_hoverLabel->setClipToAxisRect(false);
    m_hoverLabel->setVisible(false);

    m_marker = new QCPItemStraightLine(this);
    m_marker->setLayer(m_hoverLayer);
    m_marker->setVisible(false);
    m_crosshair = new QCPItemStraightLine(this);
    m_crosshair->setLayer(m_hoverLayer);
    m_crosshair->setVisible(false);

    m_refreshTimer.setSingleShot(true);
    m_refreshTimer.setInterval(kRefreshIntervalMs);
    connect(&m_refreshTimer, &QTimer::timeout, this, &CurvePlot::onRefreshTimer);
    connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &CurvePlot::onRangeChanged);
    connect(yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &CurvePlot::onRangeChanged);
    connect(this, &QCustomPlot::beforeReplot, this, &CurvePlot::onBeforeReplot);
    connect(this, &QCustomPlot::legendClick, this,
            [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
                if (const auto* key = dynamic_cast<const curveplot::KeyLegendItem*>(item)) {
                    toggleFromKey(key->kind() == curveplot::KeyLegendItem::Kind::Run, key->id());
                    return;
                }
                auto* entry = qobject_cast<QCPPlottableLegendItem*>(item);
                if (!entry)
                    return;
                for (const auto& s : m_series) {
                    if (s->line == entry->plottable()) {
                        setSeriesVisible(s->run->id, s->name, !s->visible);
                        return;
                    }
                }
            });

    configureXAxis();
    applyPalette();
}

void CurvePlot::applyPalette()
{
    // Light or dark, as the system's palette is: text and background from it,
    // the rest mixed between the two.
    const QPalette pal = palette();
    const QColor background = pal.color(QPalette::Base);
    const QColor text = pal.color(QPalette::Text);
    m_colors.text = blend(text, background, 0.2);
    m_colors.axis = blend(text, background, 0.55);
    m_colors.grid = blend(text, background, 0.9);
    m_colors.hiddenText = blend(text, background, 0.65);
    m_colors.background = background;

    setBackground(background);
    m_title->setTextColor(m_colors.text);
    for (QCPAxis* axis : {xAxis, yAxis}) {
        axis->setBasePen(QPen(m_colors.axis));
        axis->setTickPen(QPen(m_colors.axis));
        axis->setSubTickPen(QPen(m_colors.axis));
        axis->setTickLabelColor(m_colors.text);
        axis->setLabelColor(m_colors.text);
        axis->grid()->setPen(QPen(m_colors.grid, 0));
        axis->grid()->setZeroLinePen(QPen(blend(text, background, 0.8), 0));
    }
    legend->setTextColor(m_colors.text);
    legend->setBrush(Qt::NoBrush);
    m_marker->setPen(QPen(pal.color(QPalette::Highlight), 1.5, Qt::DashLine));
    m_crosshair->setPen(QPen(m_colors.axis, 1, Qt::DotLine));
    legend->setBorderPen(Qt::NoPen);
    m_noteCentre->setColor(m_colors.text);
    if (m_noteLine)
        m_noteLine->setTextColor(m_colors.hiddenText);
    m_hoverLabel->setColor(m_colors.text);
    m_hoverLabel->setBrush(withAlpha(background, 235));
    m_hoverLabel->setPen(QPen(m_colors.hiddenText));
    m_legendDirty = true;
    scheduleRefresh();
}

QFont CurvePlot::chartFont(double points, bool bold) const
{
    if (m_figureFontPoints <= 0)
        return smallFont(font(), points, bold);
    // A figure is laid out in points: a font in pixels of that layout is
    // measured and drawn alike on any device (a point size would follow each
    // device's dpi), and unhinted, so the text drawn scaled fits its measure.
    QFont scaled = font();
    scaled.setPixelSize(std::max(1, static_cast<int>(std::lround(points * m_figureFontPoints / 8.0))));
    scaled.setBold(bold);
    scaled.setHintingPreference(QFont::PreferNoHinting);
    return scaled;
}

void CurvePlot::applyFigureStyle()
{
    m_title->setFont(chartFont(10, true));
    for (QCPAxis* axis : {xAxis, yAxis}) {
        axis->setTickLabelFont(chartFont(8));
        axis->setLabelFont(chartFont(8));
    }
    legend->setFont(chartFont(8));
    const int em = chartFont(8).pixelSize();
    legend->setIconSize(em * 5 / 2, em * 5 / 4);
    m_noteCentre->setFont(chartFont(9));
    // QCustomPlot keeps 15 units round the axes, a fifth of an inch on paper:
    // a figure keeps what its last tick labels need.
    axisRect()->setMinimumMargins(QMargins(2, em / 2, em, 2));
    m_legendDirty = true;  // entries take the legend's font when made
}

void CurvePlot::changeEvent(QEvent* event)
{
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
}

CurvePlot::~CurvePlot()
{
    // Elements out of the layout are not deleted with it.
    if (!legend->layout())
        delete legend;
    if (m_noteLine && !m_noteLine->layout())
        delete m_noteLine;
}

// ---- runs and series ------------------------------------------------------------

void CurvePlot::setTitle(const QString& title)
{
    m_title->setText(title);
    scheduleRefresh();
}

QString CurvePlot::title() const { return m_title->text(); }

void CurvePlot::declareSeries(const QString& series, const QString& displayName, SeriesStyle style)
{
    const qsizetype index = m_declaredSeries.indexOf(series);
    if (index >= 0) {
        m_displayNames[index] = displayName;
        m_seriesStyles[index] = style;
    } else {
        m_declaredSeries.append(series);
        m_displayNames.append(displayName);
        m_seriesStyles.append(style);
    }
    for (const auto& s : m_series) {
        if (s->name == series) {
            styleSeries(*s);
            s->dirty = true;  // smoothed or not
        }
    }
    m_legendDirty = true;
    scheduleRefresh();
}

QStringList CurvePlot::seriesNames() const { return m_declaredSeries; }

CurvePlot::SeriesStyle CurvePlot::seriesStyle(const QString& series) const
{
    const qsizetype index = m_declaredSeries.indexOf(series);
    return index >= 0 ? m_seriesStyles[index] : SeriesStyle::Smoothed;
}

void CurvePlot::addRun(const QString& runId, const QString& label, const QColor& color, double parameterCount)
{
    Run* run = findRun(runId);
    if (!run) {
        m_runs.push_back(std::make_unique<Run>());
        run = m_runs.back().get();
        run->id = runId;
    }
    run->label = label;
    run->color = color;
    run->parameters = parameterCount;
    for (const auto& s : m_series)
        if (s->run == run)
            styleSeries(*s);
    m_legendDirty = true;
    scheduleRefresh();
}

void CurvePlot::removeRun(const QString& runId)
{
    Run* run = findRun(runId);
    if (!run)
        return;
    for (auto it = m_series.begin(); it != m_series.end();) {
        if ((*it)->run == run) {
            removeGraph((*it)->line);
            removeGraph((*it)->faint);
            it = m_series.erase(it);
        } else {
            ++it;
        }
    }
    if (run->markerLabel)
        removeItem(run->markerLabel);
    m_runs.erase(std::find_if(m_runs.begin(), m_runs.end(), [run](const auto& r) { return r.get() == run; }));
    if (m_hover.runId == runId)
        setHover(Readout());
    m_legendDirty = true;
    scheduleRefresh();
}

void CurvePlot::clearRun(const QString& runId)
{
    for (const auto& s : m_series) {
        if (s->run->id == runId) {
            s->points.clear();
            s->dirty = true;
        }
    }
    if (m_hover.runId == runId)
        setHover(Readout());
    m_legendDirty = true;
    scheduleRefresh();
}

QStringList CurvePlot::runs() const
{
    QStringList ids;
    for (const auto& r : m_runs)
        ids.append(r->id);
    return ids;
}

bool CurvePlot::hasRun(const QString& runId) const { return findRun(runId) != nullptr; }

void CurvePlot::appendPoints(const QString& runId, const QString& series, const QVector<CurvePoint>& points)
{
    Run* run = findRun(runId);
    if (!run || points.isEmpty())
        return;
    Series* s = ensureSeries(*run, series);
    if (s->points.isEmpty())
        m_legendDirty = true;  // the series gets its legend entry with its first point
    s->points += points;
    s->dirty = true;
    scheduleRefresh();
}

QVector<CurvePoint> CurvePlot::points(const QString& runId, const QString& series) const
{
    const Series* s = findSeries(runId, series);
    return s ? s->points : QVector<CurvePoint>();
}

CurvePlot::Run* CurvePlot::findRun(const QString& runId) const
{
    for (const auto& r : m_runs)
        if (r->id == runId)
            return r.get();
    return nullptr;
}

CurvePlot::Series* CurvePlot::findSeries(const QString& runId, const QString& series) const
{
    for (const auto& s : m_series)
        if (s->run->id == runId && s->name == series)
            return s.get();
    return nullptr;
}

CurvePlot::Series* CurvePlot::ensureSeries(Run& run, const QString& series)
{
    if (Series* existing = findSeries(run.id, series))
        return existing;
    if (!m_declaredSeries.contains(series))
        declareSeries(series, series);
    auto s = std::make_unique<Series>();
    s->run = &run;
    s->name = series;
    s->faint = addGraph(xAxis, yAxis);
    s->faint->setLayer(m_faintLayer);
    s->faint->setVisible(false);
    s->line = addGraph(xAxis, yAxis);
    styleSeries(*s);
    m_series.push_back(std::move(s));
    return m_series.back().get();
}

int CurvePlot::seriesIndex(const QString& series) const
{
    return static_cast<int>(std::max<qsizetype>(0, m_declaredSeries.indexOf(series)));
}

QString CurvePlot::legendName(const Series& s) const
{
    const qsizetype index = m_declaredSeries.indexOf(s.name);
    const QString display = index >= 0 ? m_displayNames[index] : s.name;
    const QString label = curvemath::elideMiddle(s.run->label);
    return display.isEmpty() ? label : label + QStringLiteral(" · ") + display;
}

void CurvePlot::styleSeries(Series& s)
{
    const int index = seriesIndex(s.name);
    s.style = seriesStyle(s.name);
    const bool markers = s.style == SeriesStyle::Markers;
    QPen pen(s.run->color, markers ? kMarkerLineWidth : kLineWidth,
             kLineStyles[static_cast<std::size_t>(index) % kLineStyles.size()]);
    pen.setCapStyle(Qt::FlatCap);
    s.line->setPen(pen);
    s.line->setName(legendName(s));
    QColor faint = s.run->color;
    faint.setAlpha(kFaintAlpha);
    s.faint->setPen(QPen(faint, 1.0));
}

// ---- view settings ----------------------------------------------------------------

void CurvePlot::setSmoothing(double weight)
{
    weight = curvemath::clampSmoothing(weight);
    if (weight == m_smoothing)
        return;
    m_smoothing = weight;
    for (const auto& s : m_series)
        s->dirty = true;
    scheduleRefresh();
}

double CurvePlot::smoothing() const { return m_smoothing; }

void CurvePlot::setLogScale(bool on)
{
    if (on == m_logScale)
        return;
    m_logScale = on;
    m_settingRange = true;
    yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    m_valueTicker->setLogarithmic(on);
    m_settingRange = false;
    m_refitY = true;  // a linear range rarely suits a log axis and the other way round
    setHover(Readout());
    scheduleRefresh();
    Q_EMIT logScaleChanged(on);
}

bool CurvePlot::logScale() const { return m_logScale; }

void CurvePlot::setXAxisMode(XAxisMode mode)
{
    if (mode == m_xMode)
        return;
    m_xMode = mode;
    for (const auto& s : m_series)
        s->dirty = true;
    configureXAxis();
    m_autoFit = true;  // the old x range means nothing in the new units
    setHover(Readout());
    setStepMarker(m_markerStep);  // shown in Step mode only
    setCrosshair(std::numeric_limits<double>::quiet_NaN());  // its x meant another axis
}

CurvePlot::XAxisMode CurvePlot::xAxisMode() const { return m_xMode; }

void CurvePlot::setRubberBandZoom(bool on)
{
    if (on == m_rubberBand)
        return;
    m_rubberBand = on;
    Q_EMIT rubberBandZoomChanged(on);
}

bool CurvePlot::rubberBandZoom() const { return m_rubberBand; }

void CurvePlot::setSeriesVisible(const QString& runId, const QString& series, bool visible)
{
    Series* s = findSeries(runId, series);
    if (!s || s->visible == visible)
        return;
    s->visible = visible;
    if (!visible && m_hover.runId == runId && m_hover.series == series)
        setHover(Readout());
    m_legendDirty = true;
    scheduleRefresh();
}

bool CurvePlot::isSeriesVisible(const QString& runId, const QString& series) const
{
    const Series* s = findSeries(runId, series);
    return s && s->visible;
}

void CurvePlot::configureXAxis()
{
    switch (m_xMode) {
    case XAxisMode::Step:
        xAxis->setTicker(QSharedPointer<SiAxisTicker>::create());
        xAxis->setLabel(tr("step"));
        break;
    case XAxisMode::Time:
        xAxis->setTicker(QSharedPointer<QCPAxisTickerTime>::create());
        xAxis->setLabel(tr("time"));
        updateTimeTickerFormat();
        break;
    case XAxisMode::Parameters:
        xAxis->setTicker(QSharedPointer<SiAxisTicker>::create());
        xAxis->setLabel(tr("parameters"));
        break;
    }
}

void CurvePlot::updateTimeTickerFormat()
{
    auto ticker = qSharedPointerDynamicCast<QCPAxisTickerTime>(xAxis->ticker());
    if (!ticker)
        return;
    // The largest unit shown is not wrapped, so it needs no leading zero.
    const double upper = std::max(std::abs(xAxis->range().lower), std::abs(xAxis->range().upper));
    if (upper < 3600) {
        ticker->setTimeFormat(QStringLiteral("%m:%s"));
        ticker->setFieldWidth(QCPAxisTickerTime::tuMinutes, 1);
    } else if (upper < 86400) {
        ticker->setTimeFormat(QStringLiteral("%h:%m:%s"));
        ticker->setFieldWidth(QCPAxisTickerTime::tuHours, 1);
    } else {
        ticker->setTimeFormat(QStringLiteral("%d d %h:%m"));
        ticker->setFieldWidth(QCPAxisTickerTime::tuDays, 1);
    }
}

// ---- events ---------------------------------------------------------------------------

void CurvePlot::mousePressEvent(QMouseEvent* event)
{
    Q_EMIT activated();
    setHover(Readout());
    m_pressed = event->button() == Qt::LeftButton;
    m_pressAt = event->position();
    if (event->button() == Qt::LeftButton) {
        const bool band = m_rubberBand || event->modifiers().testFlag(Qt::ShiftModifier);
        setSelectionRectMode(band ? QCP::srmZoom : QCP::srmNone);
    }
    QCustomPlot::mousePressEvent(event);
}

void CurvePlot::mouseMoveEvent(QMouseEvent* event)
{
    QCustomPlot::mouseMoveEvent(event);
    if (event->buttons() == Qt::NoButton)
        setHover(readoutAt(event->position()));
    const bool inside = axisRect()->rect().contains(event->position().toPoint());
    Q_EMIT pointerMoved(inside && m_xMode != XAxisMode::Parameters ? xAxis->pixelToCoord(event->position().x())
                                                                    : std::numeric_limits<double>::quiet_NaN());
}

void CurvePlot::mouseReleaseEvent(QMouseEvent* event)
{
    QCustomPlot::mouseReleaseEvent(event);
    // A click, not the end of a pan or a zoom rectangle: the point hovered there.
    constexpr double kClickSlack = 3;  // pixels the pointer may move between press and release
    const bool click = m_pressed && event->button() == Qt::LeftButton
                       && QLineF(m_pressAt, event->position()).length() <= kClickSlack;
    m_pressed = false;
    if (!click)
        return;
    const Readout hit = readoutAt(event->position());
    if (hit.valid)
        Q_EMIT stepClicked(static_cast<qint64>(std::llround(hit.step)));
}

void CurvePlot::mouseDoubleClickEvent(QMouseEvent* event)
{
    QCustomPlot::mouseDoubleClickEvent(event);
    if (event->button() == Qt::LeftButton)
        resetView();
}

void CurvePlot::resizeEvent(QResizeEvent* event)
{
    QCustomPlot::resizeEvent(event);
    scheduleRefresh();  // the decimation depends on the width
}

void CurvePlot::showEvent(QShowEvent* event)
{
    QCustomPlot::showEvent(event);
    scheduleRefresh();
}

void CurvePlot::leaveEvent(QEvent* event)
{
    QCustomPlot::leaveEvent(event);
    setHover(Readout());
    Q_EMIT pointerMoved(std::numeric_limits<double>::quiet_NaN());
}

void CurvePlot::focusInEvent(QFocusEvent* event)
{
    QCustomPlot::focusInEvent(event);
    Q_EMIT activated();
}

void CurvePlot::contextMenuEvent(QContextMenuEvent* event)
{
    QMenu menu(this);
    menu.addAction(tr("Reset view"), this, &CurvePlot::resetView);
    QAction* log = menu.addAction(tr("Logarithmic y axis"));
    log->setCheckable(true);
    log->setChecked(m_logScale);
    connect(log, &QAction::toggled, this, &CurvePlot::setLogScale);
    QAction* band = menu.addAction(tr("Drag draws a zoom rectangle"));
    band->setCheckable(true);
    band->setChecked(m_rubberBand);
    connect(band, &QAction::toggled, this, &CurvePlot::setRubberBandZoom);
    menu.addSeparator();
    menu.addAction(tr("Export image…"), this, [this] {
        askAndExport({tr("PNG image (*.png)"), tr("PDF document (*.pdf)"), tr("SVG image (*.svg)")});
    });
    menu.addAction(tr("Export CSV…"), this, [this] { askAndExport({tr("CSV table of the raw points (*.csv)")}); });
    Q_EMIT activated();
    menu.exec(event->globalPos());
}

// ---- read-outs for tests ------------------------------------------------------------------

int CurvePlot::displayedPointCount(const QString& runId, const QString& series) const
{
    const Series* s = findSeries(runId, series);
    return s ? s->line->data()->size() : 0;
}

int CurvePlot::displayedRawPointCount(const QString& runId, const QString& series) const
{
    const Series* s = findSeries(runId, series);
    return s && s->faint->visible() ? s->faint->data()->size() : 0;
}

QVector<QPointF> CurvePlot::displayedPoints(const QString& runId, const QString& series) const
{
    QVector<QPointF> out;
    if (const Series* s = findSeries(runId, series)) {
        for (auto it = s->line->data()->constBegin(); it != s->line->data()->constEnd(); ++it)
            out.append(QPointF(it->key, it->value));
    }
    return out;
}

QVector<CurvePlot::ParameterMarker> CurvePlot::parameterMarkers() const
{
    QVector<ParameterMarker> markers;
    if (m_xMode != XAxisMode::Parameters)
        return markers;
    for (const auto& s : m_series) {
        if (s->line->visible() && s->line->data()->size() == 1)
            markers.append({s->run->id, s->name, s->line->data()->begin()->key, s->line->data()->begin()->value});
    }
    return markers;
}

QColor CurvePlot::seriesColor(const QString& runId, const QString& series) const
{
    const Series* s = findSeries(runId, series);
    return s ? s->line->pen().color() : QColor();
}

Qt::PenStyle CurvePlot::seriesPenStyle(const QString& runId, const QString& series) const
{
    const Series* s = findSeries(runId, series);
    return s ? s->line->pen().style() : Qt::NoPen;
}

QCPGraph* CurvePlot::lineGraph(const QString& runId, const QString& series) const
{
    const Series* s = findSeries(runId, series);
    return s ? s->line : nullptr;
}

QCPGraph* CurvePlot::rawGraph(const QString& runId, const QString& series) const
{
    const Series* s = findSeries(runId, series);
    return s ? s->faint : nullptr;
}

// ---- view and export ----------------------------------------------------------------------

void CurvePlot::resetView()
{
    m_autoFit = true;
    refreshNow();
}

void CurvePlot::setStepMarker(double step)
{
    m_markerStep = step;
    const bool shown = std::isfinite(step) && m_xMode == XAxisMode::Step;
    m_marker->setVisible(shown);
    if (shown) {
        m_marker->point1->setCoords(step, 0);
        m_marker->point2->setCoords(step, 1);
    }
    scheduleRefresh();
}

// A collapsed legend's entry clicked: a run's series all, or one series of
// every run; hidden when any was shown, else shown.
void CurvePlot::toggleFromKey(bool run, const QString& id)
{
    QList<Series*> targets;
    for (const auto& s : m_series)
        if ((run ? s->run->id : s->name) == id && !s->points.isEmpty())
            targets.append(s.get());
    bool anyShown = false;
    for (const Series* s : std::as_const(targets))
        anyShown = anyShown || s->visible;
    for (Series* s : std::as_const(targets))
        setSeriesVisible(s->run->id, s->name, !anyShown);
}

void CurvePlot::setCrosshair(double x)
{
    m_crosshairX = x;
    const bool shown = std::isfinite(x) && m_xMode != XAxisMode::Parameters;
    if (shown == m_crosshair->visible() && (!shown || m_crosshair->point1->coords().x() == x))
        return;
    m_crosshair->setVisible(shown);
    if (shown) {
        m_crosshair->point1->setCoords(x, 0);
        m_crosshair->point2->setCoords(x, 1);
    }
    m_hoverLayer->replot();  // the hover layer alone, as the hover read-out does
}

bool CurvePlot::crosshairShown() const { return m_crosshair->visible(); }

QVector<CurvePlot::ValueAt> CurvePlot::valuesAt(double x) const
{
    QVector<ValueAt> values;
    if (!std::isfinite(x) || m_xMode == XAxisMode::Parameters)
        return values;
    for (const auto& run : m_runs)
        for (const QString& name : m_declaredSeries) {
            Series* s = findSeries(run->id, name);
            if (!s || !s->visible)
                continue;
            if (s->dirty)
                rebuildDerived(*s);
            const QVector<double>& keys = s->trace.keys;
            const qsizetype at = std::upper_bound(keys.cbegin(), keys.cend(), x) - keys.cbegin() - 1;
            if (at < 0)
                continue;
            const double value = isSmoothed(*s) ? s->trace.smooth[at] : s->trace.raw[at];
            if (std::isfinite(value))
                values.push_back({run->id, name, keys[at], value});
        }
    return values;
}

void CurvePlot::setCursorStep(qint64 step)
{
    setStepMarker(step < 0 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(step));
}

qint64 CurvePlot::cursorStep() const
{
    return std::isfinite(m_markerStep) ? static_cast<qint64>(std::llround(m_markerStep)) : -1;
}

bool CurvePlot::cursorShown() const { return m_marker->visible(); }

}  // namespace widelab
