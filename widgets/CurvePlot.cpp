#include "CurvePlot.h"

#include "CurveMath.h"
#include "CurveTrace.h"
#include "Palette.h"
#include "SiAxisTicker.h"
#include "ValueAxisTicker.h"
#include "ViewExport.h"

#include <QContextMenuEvent>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontMetrics>
#include <QMenu>
#include <QMessageBox>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStandardPaths>
#include <QSvgGenerator>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

namespace widelab {
namespace {

constexpr int kRefreshIntervalMs = 40;
constexpr double kHoverRadiusPx = 12;          // points this close in x are hover candidates
constexpr qsizetype kHoverMaxCandidates = 4096;  // per series; denser windows are sampled
constexpr double kLineWidth = 1.6;             // sparse lines; dense ones are drawn 1 px wide (updateDisplay)
constexpr double kMarkerLineWidth = 1.0;       // the thin line joining a Markers series' markers
constexpr double kMarkerSize = 6;
constexpr int kFaintAlpha = 70;                 // the raw line behind a smoothed one
constexpr double kYHeadroom = 0.05;             // of the y span, above and below
constexpr double kMarkerHeadroom = 0.15;        // Parameters mode: room for the run labels

constexpr std::array<Qt::PenStyle, 4> kLineStyles = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};
constexpr std::array<QCPScatterStyle::ScatterShape, 4> kMarkerShapes = {
    QCPScatterStyle::ssDisc, QCPScatterStyle::ssCircle, QCPScatterStyle::ssSquare, QCPScatterStyle::ssTriangle};

using palette::blend;
using viewexport::csvField;
using viewexport::csvNumber;

QColor withAlpha(QColor color, int alpha)
{
    color.setAlpha(alpha);
    return color;
}

QString formatValue(double value) { return QString::number(value, 'g', 5); }

QFont smallFont(const QFont& base, double pointSize, bool bold = false)
{
    QFont font = base;
    font.setPointSizeF(pointSize);
    font.setBold(bold);
    return font;
}

}  // namespace

struct CurvePlot::Run {
    QString id;
    QString label;
    QColor color;
    double parameters = 0;
    QCPItemText* markerLabel = nullptr;  // Parameters mode: the run's name next to its marker
};

struct CurvePlot::Series {
    Run* run = nullptr;  // the run owns no series; removeRun drops them together
    QString name;
    QVector<CurvePoint> points;  // as appended: what CSV export writes
    bool visible = true;
    bool dirty = true;  // points, x mode or smoothing changed since the arrays below were built

    SeriesStyle style = SeriesStyle::Smoothed;
    CurveTrace trace;  // for the current x mode (Parameters: by step); export keeps every stored point

    QCPGraph* line = nullptr;   // smoothed line (raw when smoothing is 0), or the marker
    QCPGraph* faint = nullptr;  // raw line behind the smoothed one
};

CurvePlot::CurvePlot(QWidget* parent)
    : QCustomPlot(parent)
{
    setMouseTracking(true);  // hover read-out without a pressed button
    setFocusPolicy(Qt::ClickFocus);
    setMinimumSize(240, 170);
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
    m_title = new QCPTextElement(this, QString(), smallFont(font(), 10, true));
    m_title->setMargins(QMargins(0, 4, 0, 0));
    plotLayout()->addElement(0, 0, m_title);

    for (QCPAxis* axis : {xAxis, yAxis}) {
        axis->setTickLabelFont(smallFont(font(), 8));
        axis->setLabelFont(smallFont(font(), 8));
        axis->setTickLengthOut(0);
        axis->setSubTickLengthOut(0);
    }
    xAxis->setLabelPadding(2);
    m_valueTicker = QSharedPointer<ValueAxisTicker>::create();
    yAxis->setTicker(m_valueTicker);
    yAxis->setNumberFormat(QStringLiteral("gbd"));  // "3e-4" tick labels are drawn as 3·10^-4

    legend->setVisible(false);
    legend->setFont(smallFont(font(), 8));
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
    m_noteCentre->setFont(smallFont(font(), 9));
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
    m_hoverLabel->setFont(smallFont(font(), 8));
    m_hoverLabel->setClipToAxisRect(false);
    m_hoverLabel->setVisible(false);

    m_marker = new QCPItemStraightLine(this);
    m_marker->setLayer(m_hoverLayer);
    m_marker->setVisible(false);

    m_refreshTimer.setSingleShot(true);
    m_refreshTimer.setInterval(kRefreshIntervalMs);
    connect(&m_refreshTimer, &QTimer::timeout, this, &CurvePlot::onRefreshTimer);
    connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &CurvePlot::onRangeChanged);
    connect(yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &CurvePlot::onRangeChanged);
    connect(this, &QCustomPlot::legendClick, this,
            [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
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

void CurvePlot::setNote(const QString& note)
{
    m_note = note;
    scheduleRefresh();
}

QString CurvePlot::note() const { return m_note; }

bool CurvePlot::noteCentred() const { return m_noteCentre->visible(); }

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
    return display.isEmpty() ? s.run->label : s.run->label + QStringLiteral(" · ") + display;
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

void CurvePlot::rebuildLegend()
{
    m_legendDirty = false;
    legend->clearItems();
    for (const auto& run : m_runs) {
        for (const QString& name : std::as_const(m_declaredSeries)) {
            const Series* s = findSeries(run->id, name);
            if (!s || s->points.isEmpty())
                continue;
            s->line->addToLegend();
            if (auto* item = legend->itemWithPlottable(s->line))
                item->setTextColor(s->visible ? m_colors.text : m_colors.hiddenText);
        }
    }
    legend->setVisible(legend->itemCount() > 0);
}

// Puts `element` into the plot layout just above or below the axis rect, or
// takes it out, so a hidden legend or note leaves no empty band.
static void placeBesideAxisRect(QCPLayoutGrid* layout, QCPAxisRect* rect, QCPLayoutElement* element, bool shown,
                                bool above)
{
    const bool placed = element->layout() != nullptr;
    if (shown == placed)
        return;
    if (!shown) {
        layout->take(element);
        layout->simplify();
        return;
    }
    int row = 0;
    while (row < layout->rowCount() && layout->element(row, 0) != rect)
        ++row;
    const int at = above ? row : row + 1;
    layout->insertRow(at);
    layout->addElement(at, 0, element);
    layout->setRowStretchFactor(at, 0.001);  // only as tall as its content
}

void CurvePlot::layoutLegend()
{
    placeBesideAxisRect(plotLayout(), axisRect(), legend, legend->itemCount() > 0, false);
    if (legend->itemCount() == 0)
        return;
    QVector<int> widths;
    for (int i = 0; i < legend->itemCount(); ++i)
        widths.append(legend->item(i)->minimumOuterSizeHint().width());
    const QMargins margins = legend->margins();
    const int available = width() - margins.left() - margins.right() - 8;
    const int columns = curvemath::legendColumns(widths, available, legend->columnSpacing());
    if (columns != legend->wrap()) {
        legend->setWrap(columns);
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
    }
}

int CurvePlot::legendColumns() const { return legend->itemCount() > 0 ? legend->columnCount() : 0; }

void CurvePlot::updateNote()
{
    bool hasData = false;
    for (const auto& s : m_series)
        hasData = hasData || isShown(*s);
    const bool centred = !m_note.isEmpty() && !hasData;
    const bool line = !m_note.isEmpty() && hasData;
    m_noteCentre->setVisible(centred);
    m_noteCentre->setText(m_note);
    if (line && !m_noteLine) {
        m_noteLine = new QCPTextElement(this, QString(), smallFont(font(), 8));
        m_noteLine->setMargins(QMargins(4, 0, 4, 2));
        m_noteLine->setTextColor(m_colors.hiddenText);
    }
    if (m_noteLine) {
        // Elided to the chart's width, so a long list of runs cannot widen the chart.
        m_noteLine->setText(QFontMetrics(m_noteLine->font()).elidedText(m_note, Qt::ElideRight, std::max(40, width() - 16)));
        placeBesideAxisRect(plotLayout(), axisRect(), m_noteLine, line, true);
    }
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

// ---- refresh: derived arrays, ranges, decimation -------------------------------------------

void CurvePlot::scheduleRefresh()
{
    if (!m_refreshTimer.isActive())
        m_refreshTimer.start();  // not restarted: a steady stream of appends still refreshes every 40 ms
}

void CurvePlot::onRefreshTimer()
{
    if (isVisible())
        refreshNow();  // a hidden chart catches up in showEvent
}

void CurvePlot::onRangeChanged()
{
    if (m_settingRange)
        return;  // this class fitted the view and decimates right after
    m_autoFit = false;  // the user panned or zoomed: stop following the data
    scheduleRefresh();   // decimate for the new range
}

void CurvePlot::refreshNow()
{
    m_refreshTimer.stop();
    for (const auto& s : m_series)
        if (s->dirty)
            rebuildDerived(*s);
    if (m_legendDirty)
        rebuildLegend();
    layoutLegend();
    updateNote();
    if (m_autoFit || m_refitY)
        fitRanges(m_autoFit, true);
    m_refitY = false;
    if (m_xMode == XAxisMode::Time)
        updateTimeTickerFormat();
    updateLayout();  // so the axis rect has the width this replot draws at
    updateDisplay();
    replot();
}

void CurvePlot::rebuildDerived(Series& s) const
{
    s.dirty = false;
    // Parameters mode needs the last value by step.
    s.trace = buildCurveTrace(s.points, m_xMode == XAxisMode::Time ? CurveKey::Seconds : CurveKey::Step,
                              s.style == SeriesStyle::Smoothed ? m_smoothing : 0.0);
}

bool CurvePlot::isShown(const Series& s) const { return s.visible && !s.trace.keys.isEmpty(); }

bool CurvePlot::isSmoothed(const Series& s) const { return m_smoothing > 0 && s.style == SeriesStyle::Smoothed; }

bool CurvePlot::markerValue(const Series& s, double* value) const
{
    if (!isShown(s) || !(s.run->parameters > 0) || !std::isfinite(s.run->parameters))
        return false;
    for (qsizetype i = s.trace.smooth.size() - 1; i >= 0; --i) {
        const double v = s.trace.smooth[i];
        if (std::isfinite(v) && (!m_logScale || v > 0)) {
            *value = v;
            return true;
        }
    }
    return false;
}

void CurvePlot::fitRanges(bool fitX, bool fitY)
{
    double xLo = std::numeric_limits<double>::infinity(), xHi = -xLo;
    double yLo = xLo, yHi = -xLo;
    // QCustomPlot refuses ranges past +-QCPRange::maxRange (and would keep a stale
    // one): a value that far out is left off the fit, drawn out of view.
    const double fitLimit = QCPRange::maxRange / 4;
    auto fits = [fitLimit](double v) { return std::isfinite(v) && std::abs(v) <= fitLimit; };
    auto takeY = [&](double v) {
        if (fits(v) && (!m_logScale || v > 0)) {
            yLo = std::min(yLo, v);
            yHi = std::max(yHi, v);
        }
    };
    for (const auto& s : m_series) {
        if (m_xMode == XAxisMode::Parameters) {
            double v = 0;
            if (!markerValue(*s, &v))
                continue;
            xLo = std::min(xLo, s->run->parameters);
            xHi = std::max(xHi, s->run->parameters);
            takeY(v);
            continue;
        }
        if (!isShown(*s))
            continue;
        for (const double key : std::as_const(s->trace.keys))  // sorted: the first and last that fit
            if (fits(key)) {
                xLo = std::min(xLo, key);
                break;
            }
        for (qsizetype i = s->trace.keys.size() - 1; i >= 0; --i)
            if (fits(s->trace.keys[i])) {
                xHi = std::max(xHi, s->trace.keys[i]);
                break;
            }
        for (const double v : std::as_const(s->trace.raw))
            takeY(v);
        if (isSmoothed(*s))
            for (const double v : std::as_const(s->trace.smooth))
                takeY(v);
    }

    m_settingRange = true;
    if (fitX && xLo <= xHi) {
        if (m_xMode == XAxisMode::Parameters) {
            const double pad = xHi > xLo ? kMarkerHeadroom * (xHi - xLo) : 0.1 * std::abs(xHi) + 1;
            xAxis->setRange(xLo - pad, xHi + pad);
        } else if (xHi > xLo) {
            xAxis->setRange(xLo, xHi);
        } else {
            xAxis->setRange(xLo - 1, xHi + 1);
        }
    }
    if (fitY && yLo <= yHi) {
        const double headroom = m_xMode == XAxisMode::Parameters ? kMarkerHeadroom : kYHeadroom;
        // A series that differs only by rounding (a constant learning rate, smoothed) is
        // flat: ranged around its value, not zoomed onto the last bits of a double.
        const double magnitude = std::max(std::abs(yLo), std::abs(yHi));
        const bool flat = yHi - yLo <= 1e-9 * magnitude;
        if (m_logScale) {
            const double factor = !flat ? std::pow(yHi / yLo, headroom) : 2.0;
            yAxis->setRange(yLo / factor, yHi * factor);
        } else {
            const double span = yHi - yLo;
            const double pad = !flat ? headroom * span : (magnitude != 0 ? 0.1 * magnitude : 1.0);
            yAxis->setRange(yLo - pad, yHi + pad);
        }
    }
    m_settingRange = false;
}

void CurvePlot::updateDisplay()
{
    const bool parameters = m_xMode == XAxisMode::Parameters;
    const QCPRange view = xAxis->range();
    // Decimate one view width either side too, so a pan shows data at once,
    // at the same resolution: three widths, three times the columns.
    const double span = view.size();
    const int columns = 3 * std::max(1, axisRect()->width());
    QVector<double> keys, values;

    for (const auto& s : m_series) {
        const int index = seriesIndex(s->name);
        s->line->setVisible(s->visible);
        if (parameters) {
            s->faint->setVisible(false);
            s->faint->data()->clear();
            s->line->setLineStyle(QCPGraph::lsNone);
            // The first series (train) filled, the others hollow, like solid and dashed lines.
            const auto shape = kMarkerShapes[static_cast<std::size_t>(index) % kMarkerShapes.size()];
            s->line->setScatterStyle(
                QCPScatterStyle(shape, QPen(s->run->color, 2), index == 0 ? s->run->color : Qt::white, 9));
            double v = 0;
            if (markerValue(*s, &v))
                s->line->setData(QVector<double>{s->run->parameters}, QVector<double>{v}, true);
            else
                s->line->data()->clear();
            continue;
        }

        s->line->setLineStyle(QCPGraph::lsLine);
        // Measurements get a marker at each value; a lone point has no line to draw: give it a dot.
        if (s->style == SeriesStyle::Markers)
            s->line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(s->run->color, 1.5),
                                                     m_colors.background, kMarkerSize));
        else
            s->line->setScatterStyle(s->trace.keys.size() == 1 ? QCPScatterStyle(QCPScatterStyle::ssDisc, 5)
                                                               : QCPScatterStyle(QCPScatterStyle::ssNone));
        if (!isShown(*s)) {
            s->line->data()->clear();
            s->faint->data()->clear();
            s->faint->setVisible(false);
            continue;
        }
        curvemath::decimateMinMax(s->trace.keys, isSmoothed(*s) ? s->trace.smooth : s->trace.raw, view.lower - span,
                                  view.upper + span, columns, m_logScale, &keys, &values);
        s->line->setData(keys, values, true);
        // Qt strokes lines wider than one pixel through a slow path: a dense
        // line (min/max zigzags) costs tens of milliseconds per replot at 1.6 px
        // and two at 1 px. Sparse lines (about 3 px or more per segment) get the width.
        QPen pen = s->line->pen();
        pen.setWidthF(keys.size() <= axisRect()->width() && s->style != SeriesStyle::Markers ? kLineWidth : 1.0);
        s->line->setPen(pen);
        const bool faint = isSmoothed(*s);
        s->faint->setVisible(faint);
        if (faint) {
            curvemath::decimateMinMax(s->trace.keys, s->trace.raw, view.lower - span, view.upper + span, columns, m_logScale,
                                      &keys, &values);
            s->faint->setData(keys, values, true);
        } else {
            s->faint->data()->clear();
        }
    }
    updateParameterLabels();
}

void CurvePlot::updateParameterLabels()
{
    const bool parameters = m_xMode == XAxisMode::Parameters;
    for (const auto& run : m_runs) {
        const Series* marked = nullptr;
        if (parameters) {
            for (const QString& name : std::as_const(m_declaredSeries)) {
                const Series* s = findSeries(run->id, name);
                if (s && s->visible && s->line->data()->size() == 1) {
                    marked = s;
                    break;
                }
            }
        }
        if (!marked) {
            if (run->markerLabel)
                run->markerLabel->setVisible(false);
            continue;
        }
        if (!run->markerLabel) {
            run->markerLabel = new QCPItemText(this);
            run->markerLabel->setFont(smallFont(font(), 8, true));
            run->markerLabel->setClipToAxisRect(true);
        }
        QCPItemText* label = run->markerLabel;
        const double x = marked->line->data()->begin()->key;
        const double y = marked->line->data()->begin()->value;
        label->setVisible(true);
        label->setText(run->label);
        label->setColor(run->color.darker(130));
        label->position->setCoords(x, y);
        // Beside the marker, on the side with more room.
        const bool rightHalf = xAxis->coordToPixel(x) > axisRect()->center().x();
        label->setPositionAlignment((rightHalf ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignBottom);
        label->setPadding(rightHalf ? QMargins(0, 0, 8, 4) : QMargins(8, 0, 0, 4));
    }
}

// ---- events ---------------------------------------------------------------------------

void CurvePlot::mousePressEvent(QMouseEvent* event)
{
    Q_EMIT activated();
    setHover(Readout());
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

// ---- hover read-out ----------------------------------------------------------------------

CurvePlot::Readout CurvePlot::readoutAt(const QPointF& pixel) const
{
    Readout best;
    if (!axisRect()->rect().contains(pixel.toPoint()))
        return best;
    double bestDistance = std::numeric_limits<double>::infinity();
    const Series* bestSeries = nullptr;
    qsizetype bestIndex = -1;
    auto consider = [&](const Series& s, qsizetype i, double key, double value) {
        if (!std::isfinite(value) || (m_logScale && value <= 0))
            return;
        const double dx = xAxis->coordToPixel(key) - pixel.x();
        const double dy = yAxis->coordToPixel(value) - pixel.y();
        const double distance = dx * dx + dy * dy;
        if (distance < bestDistance) {
            bestDistance = distance;
            bestSeries = &s;
            bestIndex = i;
        }
    };

    for (const auto& s : m_series) {
        if (!isShown(*s))
            continue;
        if (m_xMode == XAxisMode::Parameters) {
            if (s->line->data()->size() == 1)
                consider(*s, s->trace.keys.size() - 1, s->line->data()->begin()->key, s->line->data()->begin()->value);
            continue;
        }
        const QVector<double>& values = isSmoothed(*s) ? s->trace.smooth : s->trace.raw;
        double lo = xAxis->pixelToCoord(pixel.x() - kHoverRadiusPx);
        double hi = xAxis->pixelToCoord(pixel.x() + kHoverRadiusPx);
        if (lo > hi)
            std::swap(lo, hi);
        const qsizetype first = std::lower_bound(s->trace.keys.cbegin(), s->trace.keys.cend(), lo) - s->trace.keys.cbegin();
        const qsizetype last = std::upper_bound(s->trace.keys.cbegin(), s->trace.keys.cend(), hi) - s->trace.keys.cbegin();
        const qsizetype stride = std::max<qsizetype>(1, (last - first) / kHoverMaxCandidates);
        for (qsizetype i = first; i < last; i += stride)
            consider(*s, i, s->trace.keys[i], values[i]);
        // The nearest points outside the window, for sparse series.
        if (first > 0)
            consider(*s, first - 1, s->trace.keys[first - 1], values[first - 1]);
        if (last < s->trace.keys.size())
            consider(*s, last, s->trace.keys[last], values[last]);
    }
    if (!bestSeries)
        return best;

    // In Parameters mode the marker is the last point by step; find the one whose EMA it shows.
    if (m_xMode == XAxisMode::Parameters) {
        double v = 0;
        markerValue(*bestSeries, &v);
        for (qsizetype i = bestSeries->trace.smooth.size() - 1; i >= 0; --i) {
            if (bestSeries->trace.smooth[i] == v) {
                bestIndex = i;
                break;
            }
        }
    }
    const CurvePoint& point = bestSeries->points[bestSeries->trace.source[bestIndex]];
    best.valid = true;
    best.runId = bestSeries->run->id;
    best.series = bestSeries->name;
    best.name = legendName(*bestSeries);
    best.x = m_xMode == XAxisMode::Parameters ? bestSeries->run->parameters : bestSeries->trace.keys[bestIndex];
    best.step = point.step;
    best.seconds = point.seconds;
    best.raw = bestSeries->trace.raw[bestIndex];
    best.smoothed = bestSeries->trace.smooth[bestIndex];
    best.isSmoothed = isSmoothed(*bestSeries);
    return best;
}

CurvePlot::Readout CurvePlot::hoverReadout() const { return m_hover; }

QString CurvePlot::hoverText() const { return m_hoverLabel->visible() ? m_hoverLabel->text() : QString(); }

QString CurvePlot::readoutText(const Readout& r) const
{
    QStringList lines{r.name};
    if (m_xMode == XAxisMode::Parameters) {
        lines << tr("parameters %1 (%2)")
                     .arg(curvemath::formatCount(r.x), QLocale().toString(static_cast<qlonglong>(std::llround(r.x))));
        lines << (r.isSmoothed ? tr("last smoothed value %1 (step %2)") : tr("last value %1 (step %2)"))
                     .arg(formatValue(r.smoothed))
                     .arg(static_cast<qlonglong>(std::llround(r.step)));
        return lines.join(QLatin1Char('\n'));
    }
    lines << tr("step %1 · %2")
                 .arg(static_cast<qlonglong>(std::llround(r.step)))
                 .arg(curvemath::formatDuration(r.seconds));
    if (r.isSmoothed)
        lines << tr("value %1 · smoothed %2").arg(formatValue(r.raw), formatValue(r.smoothed));
    else
        lines << tr("value %1").arg(formatValue(r.raw));
    return lines.join(QLatin1Char('\n'));
}

void CurvePlot::setHover(const Readout& readout)
{
    const bool wasShown = m_hoverLabel->visible();
    m_hover = readout;
    m_tracer->setVisible(readout.valid);
    m_hoverLabel->setVisible(readout.valid);
    if (!readout.valid) {
        if (wasShown)
            m_hoverLayer->replot();
        return;
    }
    const Series* s = findSeries(readout.runId, readout.series);
    const QColor color = s ? s->run->color : m_colors.text;
    const double y = readout.smoothed;  // the raw value where the series is not smoothed
    m_tracer->position->setCoords(readout.x, y);
    m_tracer->setPen(QPen(color, 1.5));
    m_tracer->setBrush(withAlpha(m_colors.background, 160));

    const QString text = readoutText(readout);
    m_hoverLabel->setText(text);
    // Beside the point, flipped to stay inside the axis rect.
    const QPointF at(xAxis->coordToPixel(readout.x), yAxis->coordToPixel(y));
    const QMargins padding = m_hoverLabel->padding();
    const QSize textSize =
        QFontMetrics(m_hoverLabel->font()).boundingRect(QRect(0, 0, 2000, 2000), Qt::AlignLeft, text).size();
    const QSize size = textSize + QSize(padding.left() + padding.right(), padding.top() + padding.bottom());
    const QRect area = axisRect()->rect();
    constexpr double kOffset = 10;
    const bool left = at.x() + kOffset + size.width() > area.right();
    const bool below = at.y() - kOffset - size.height() < area.top();
    m_hoverLabel->setPositionAlignment((left ? Qt::AlignRight : Qt::AlignLeft)
                                       | (below ? Qt::AlignTop : Qt::AlignBottom));
    m_hoverLabel->position->setCoords(at.x() + (left ? -kOffset : kOffset), at.y() + (below ? kOffset : -kOffset));
    m_hoverLayer->replot();
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

bool CurvePlot::exportImage(const QString& path, QString* error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("pdf") && suffix != QLatin1String("svg")) {
        if (error)
            *error = tr("Unknown image format \"%1\": use .png, .pdf or .svg.").arg(suffix);
        return false;
    }
    setHover(Readout());
    refreshNow();
    // A chart that was never laid out exports at a readable default size.
    const int width = isVisible() && this->width() >= 200 ? this->width() : 800;
    const int height = isVisible() && this->height() >= 150 ? this->height() : 500;
    bool ok = false;
    if (suffix == QLatin1String("png"))
        ok = savePng(path, width, height, 2.0);
    else if (suffix == QLatin1String("pdf"))
        ok = savePdf(path, width, height, QCP::epAllowCosmetic, QStringLiteral("WideLab"), title());
    else
        ok = writeSvg(path, width, height);
    if (!ok && error)
        *error = tr("Could not write %1.").arg(QDir::toNativeSeparators(path));
    return ok;
}

bool CurvePlot::writeSvg(const QString& path, int width, int height)
{
    QFile::remove(path);  // so a stale file cannot pass for success below
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(QSize(width, height));
    generator.setViewBox(QRect(0, 0, width, height));
    generator.setTitle(title());
    generator.setDescription(tr("WideLab training curves"));
    QCPPainter painter;
    if (!painter.begin(&generator))
        return false;
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    toPainter(&painter, width, height);
    painter.end();
    return QFileInfo(path).size() > 0;  // QSvgGenerator reports write errors only as warnings
}

bool CurvePlot::exportCsv(const QString& path, QString* error) const
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        if (error)
            *error = tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    QByteArray chunk = "run_id,run,series,step,seconds,value\n";
    for (const auto& run : m_runs) {
        const QByteArray runFields = csvField(run->id) + ',' + csvField(run->label) + ',';
        for (const QString& name : std::as_const(m_declaredSeries)) {
            const Series* s = findSeries(run->id, name);
            if (!s || !s->visible)
                continue;
            const QByteArray prefix = runFields + csvField(name) + ',';
            for (const CurvePoint& p : s->points) {
                chunk += prefix + csvNumber(p.step) + ',' + csvNumber(p.seconds) + ',' + csvNumber(p.value) + '\n';
                if (chunk.size() > (1 << 16)) {
                    file.write(chunk);
                    chunk.clear();
                }
            }
        }
    }
    file.write(chunk);
    if (!file.commit()) {
        if (error)
            *error = tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    return true;
}

void CurvePlot::exportWithDialog()
{
    askAndExport({tr("PNG image (*.png)"), tr("PDF document (*.pdf)"), tr("SVG image (*.svg)"),
                  tr("CSV table of the raw points (*.csv)")});
}

void CurvePlot::askAndExport(const QStringList& filters)
{
    const QString path = viewexport::askExportPath(this, title().isEmpty() ? tr("chart") : title(), filters,
                                                   m_exportDirectory);
    if (path.isEmpty())
        return;
    QString error;
    const bool csv = QFileInfo(path).suffix().compare(QLatin1String("csv"), Qt::CaseInsensitive) == 0;
    const bool ok = csv ? exportCsv(path, &error) : exportImage(path, &error);
    if (!ok)
        QMessageBox::warning(this, tr("Export failed"), error);
}

}  // namespace widelab
