// defines: widelab::CurvePlot, one training-curve chart: every point kept, a
// min/max-decimated display, debiased EMA smoothing, log y, pan/zoom/rubber band,
// a hover read-out, a click naming a point's step, a step cursor, x by step,
// time or parameter count, PNG/PDF/SVG/CSV export
#pragma once

#include "CurvePoint.h"
#include "FigureLayout.h"

#include <qcustomplot.h>

#include <QTimer>

#include <limits>
#include <memory>
#include <vector>

namespace widelab {

class ValueAxisTicker;

// A QCustomPlot that owns its data. A series is one metric of one run (run x
// series); a run has one colour, its series differ by line style in the order
// they were declared (solid, dashed, dotted, dash-dotted).
//
// Every appended point is stored. The graphs are handed a min/max decimation of
// the visible x range (at most 2 points per pixel column, see
// curvemath::decimateMinMax), rebuilt on a 40 ms single-shot timer after
// appends and resizes, so a burst of appends costs one replot, and before the
// replot of a pan or zoom that leaves what was decimated (three view widths),
// so a 100k-point series stays fluid.
//
// Until the user pans or zooms, the view follows the data (fits all of it);
// resetView() and a double-click return to that.
class CurvePlot : public QCustomPlot {
    Q_OBJECT

public:
    enum class XAxisMode {
        Step,        // x = optimiser step
        Time,        // x = seconds since the run started, labelled h:mm:ss
        Parameters,  // one marker per run and series: x = the run's parameter count, y = last smoothed value
    };
    Q_ENUM(XAxisMode)

    // How a series is drawn. Only noisy series are smoothed; what is not
    // smoothed shows exactly the logged values.
    enum class SeriesStyle {
        Smoothed,  // loss, accuracy, gradient norm, tokens/s: the EMA over the raw values, drawn faintly
        Exact,     // a schedule (the learning rate): the logged values as a line, never smoothed
        Markers,   // sparse measurements (validation): a marker at each logged value, joined by a thin line
    };
    Q_ENUM(SeriesStyle)

    // What the hover read-out names: the nearest point (in pixels) of the
    // nearest visible series. In Parameters mode: the nearest marker.
    struct Readout {
        bool valid = false;
        QString runId;
        QString series;    // the metric, e.g. "validation_loss"
        QString name;      // as in the legend, e.g. "wide 1x48 · validation"
        double x = 0;      // in the current x mode (step, seconds or parameters)
        double step = 0;
        double seconds = 0;
        double raw = 0;       // the logged value
        double smoothed = 0;  // the EMA at that point (equals raw when the series is not smoothed)
        bool isSmoothed = false;  // the series is drawn smoothed (smoothing > 0 and SeriesStyle::Smoothed)
    };

    // One marker as Parameters mode hands it to the graph.
    struct ParameterMarker {
        QString runId;
        QString series;
        double parameters = 0;
        double value = 0;
    };

    explicit CurvePlot(QWidget* parent = nullptr);
    ~CurvePlot() override;

    // The title above the chart; also the suggested export file name.
    void setTitle(const QString& title);
    QString title() const;

    // Declares a series this chart draws; the declaration order picks the line
    // style. displayName follows the run label in the legend ("run · train");
    // empty: the run label alone. Series appended without a declaration are
    // declared then, under their own name, smoothed.
    void declareSeries(const QString& series, const QString& displayName = QString(),
                       SeriesStyle style = SeriesStyle::Smoothed);
    QStringList seriesNames() const;
    SeriesStyle seriesStyle(const QString& series) const;  // Smoothed for an undeclared one

    // A short line under the title saying what the chart leaves out and why
    // (e.g. which runs have no balance loss); empty removes it. While no series
    // has a point to draw, the note stands in the middle of the empty chart instead.
    void setNote(const QString& note);
    QString note() const;
    bool noteCentred() const;  // the note is shown in the middle of the plot (no data), not under the title

    // A run with its colour and parameter count (<= 0: unknown, no marker in
    // Parameters mode). Adding a run again updates label, colour and count.
    void addRun(const QString& runId, const QString& label, const QColor& color, double parameterCount = 0);
    void removeRun(const QString& runId);
    void clearRun(const QString& runId);  // drops the run's points, keeps the run
    QStringList runs() const;
    bool hasRun(const QString& runId) const;

    // Stores the points (any order; the display sorts by x). Ignored for a run
    // that was not added.
    void appendPoints(const QString& runId, const QString& series, const QVector<CurvePoint>& points);
    QVector<CurvePoint> points(const QString& runId, const QString& series) const;

    // EMA weight, clamped to [0, 0.999] (curvemath::smoothEma, debiased), for
    // the Smoothed series. Above 0 their raw values stay visible behind the
    // smoothed line, faintly. Exact and Markers series ignore it.
    void setSmoothing(double weight);
    double smoothing() const;

    // Logarithmic y; values <= 0 are not drawn then (gaps).
    void setLogScale(bool on);
    bool logScale() const;

    void setXAxisMode(XAxisMode mode);
    XAxisMode xAxisMode() const;

    // On: a plain left drag draws a zoom rectangle instead of panning.
    // Shift + left drag draws one in either case.
    void setRubberBandZoom(bool on);
    bool rubberBandZoom() const;

    // Hidden series are neither drawn, hovered, fitted nor exported; a click on
    // a legend entry toggles its series.
    void setSeriesVisible(const QString& runId, const QString& series, bool visible);
    bool isSeriesVisible(const QString& runId, const QString& series) const;

    // The legend sits under the axis rect, never over the data: its entries
    // flow into as many columns as the chart's width holds, then wrap.
    int legendColumns() const;
    // The legend's entries in order (its grid also holds empty cells once it wraps).
    // With more than one run and more than one series holding points, the legend
    // collapses: an entry a run (its colour; a click toggles all its series),
    // then a style key a series (its line style; a click toggles it in every run),
    // instead of runs x series entries that would take half the chart.
    QList<QCPAbstractLegendItem*> legendEntries() const;
    QStringList legendTexts() const;  // each entry's text, in order: "A · train", or "A" and "train" collapsed

    // On: the chart's minimum height follows its legend, so that the data keeps
    // its own band (kMinPlotHeight) however many runs are listed; for charts in
    // a scroll area (CurvesView's), which then scrolls rather than squeezes them.
    void setKeepsPlotHeight(bool on) { m_keepsPlotHeight = on; }

    // PNG, PDF or SVG by the file's suffix, laid out as a figure of its own
    // (figure()): `layout`'s size and type, the legend under the plot with
    // every entry, on white; a PNG has layout.pixels(). The chart on screen is
    // left as it was. false with *error set when the suffix is unknown or the
    // file cannot be written.
    bool exportImage(const QString& path, const FigureLayout& layout, QString* error = nullptr);
    bool exportImage(const QString& path, QString* error = nullptr);  // a paper column (FigureLayout's defaults)
    // The offscreen chart an export draws: a copy of this one's runs, series,
    // settings and view (the zoom, if any), laid out in `layout.points()` with
    // fonts sized in points, decimated at the layout's dpi. Never shown.
    std::unique_ptr<CurvePlot> figure(const FigureLayout& layout) const;
    // Every stored point of every visible series, one row each, as
    //   run_id,run,series,step,seconds,value
    // (run = the run's label; series = the metric name), runs in the order
    // added, series in declaration order, points in the order appended.
    // Numbers are written in the shortest form that reads back to the same
    // double; fields holding a comma, quote or line break are quoted (RFC 4180).
    bool exportCsv(const QString& path, QString* error = nullptr) const;

    // A vertical line at `step` (the step a view is frozen on), drawn in Step
    // mode; NaN removes it.
    void setStepMarker(double step);
    double stepMarker() const { return m_markerStep; }
    // The step another view shows (InsightsView's scrubber), as the same line:
    // -1 removes it. In Time and Parameters mode it is hidden (a step has no
    // single time when runs are compared) and comes back in Step mode. It is an
    // item at plot coordinates, so refreshes, rescales, pans and zooms keep it.
    void setCursorStep(qint64 step);
    qint64 cursorStep() const;   // -1: none
    bool cursorShown() const;    // drawn now (set, and in Step mode)

    // The crosshair: a thin dotted line at `x` (in the current x mode) that the
    // pointer over any chart of a CurvesView sets on all of them; NaN removes
    // it. Not drawn in Parameters mode.
    void setCrosshair(double x);
    double crosshair() const { return m_crosshairX; }
    bool crosshairShown() const;
    // Each visible series' value at `x` as drawn (smoothed where the chart
    // smooths): its last point at or before x; series with none there are left
    // out. Runs in the order added, series in declaration order. Step and Time
    // mode only (empty in Parameters mode).
    struct ValueAt {
        QString runId;
        QString series;
        double key = 0;    // where the value was logged, in the current x mode
        double value = 0;
    };
    QVector<ValueAt> valuesAt(double x) const;

    // The read-out for a widget pixel (no state changes), and the one shown now.
    Readout readoutAt(const QPointF& pixel) const;
    Readout hoverReadout() const;
    QString hoverText() const;  // the text of the hover label; empty when hidden
    QRectF hoverRect() const;   // where the hover label is drawn, in the plot's pixels

    // What the graphs were handed at the last refresh (tests, diagnostics).
    int displayedPointCount(const QString& runId, const QString& series) const;     // the main line
    int displayedRawPointCount(const QString& runId, const QString& series) const;  // the faint raw line, 0 when hidden
    QVector<QPointF> displayedPoints(const QString& runId, const QString& series) const;
    QVector<ParameterMarker> parameterMarkers() const;
    QColor seriesColor(const QString& runId, const QString& series) const;     // the main line's pen
    Qt::PenStyle seriesPenStyle(const QString& runId, const QString& series) const;
    QCPGraph* lineGraph(const QString& runId, const QString& series) const;
    QCPGraph* rawGraph(const QString& runId, const QString& series) const;

public Q_SLOTS:
    // Fits all data of the visible series (x exactly, y with 5 % headroom) and
    // follows new data again until the next pan or zoom.
    void resetView();
    // Applies pending data and view changes and replots now, instead of on the timer.
    void refreshNow();
    // Asks for a file name (PNG, PDF, SVG or CSV), for an image then its size
    // and resolution (askFigureLayout, remembered), and exports; reports
    // failure in a message box.
    void exportWithDialog();

Q_SIGNALS:
    // The user clicked into this chart or gave it focus (CurvesView's "current chart").
    void activated();
    // A left click (press and release without dragging) inside the axis rect:
    // the step of the point the hover read-out names there, the nearest point
    // (in pixels) of the nearest visible series. Drags pan or zoom and emit nothing.
    void stepClicked(qint64 step);
    void logScaleChanged(bool on);
    void rubberBandZoomChanged(bool on);
    // The pointer moved over the axis rect: its x in the current x mode; NaN
    // when it left the chart (or the mode is Parameters).
    void pointerMoved(double x);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void focusInEvent(QFocusEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    void changeEvent(QEvent* event) override;  // a new palette (light or dark) recolours the chart

private:
    // The chart's own colours, derived from the widget's palette.
    struct Colors {
        QColor text, axis, grid, hiddenText, background;
    };
    void applyPalette();
    Colors m_colors;

    struct Run;
    struct Series;

    Run* findRun(const QString& runId) const;
    Series* findSeries(const QString& runId, const QString& series) const;
    Series* ensureSeries(Run& run, const QString& series);
    int seriesIndex(const QString& series) const;
    QString legendName(const Series& s) const;
    void styleSeries(Series& s);
    void rebuildLegend();
    void scheduleRefresh();
    void onRefreshTimer();
    void onRangeChanged();
    void onBeforeReplot();
    void rebuildDerived(Series& s) const;
    bool isShown(const Series& s) const;
    bool markerValue(const Series& s, double* value) const;
    void fitRanges(bool fitX, bool fitY);
    void updateDisplay();
    void updateParameterLabels();
    void layoutLegend();
    void updateNote();
    bool isSmoothed(const Series& s) const;
    void configureXAxis();
    void updateTimeTickerFormat();
    void setHover(const Readout& readout);
    void toggleFromKey(bool run, const QString& id);
    QString readoutText(const Readout& r) const;
    bool writeSvg(const QString& path, const QSize& points);
    // The chart's fonts at `points` (the screen's sizes), or on a figure in
    // whole pixels of its layout, scaled to the figure's type size.
    QFont chartFont(double points, bool bold = false) const;
    void applyFigureStyle();  // a figure's fonts and margins, in points
    void askAndExport(const QStringList& filters);

    std::vector<std::unique_ptr<Run>> m_runs;
    std::vector<std::unique_ptr<Series>> m_series;
    QStringList m_declaredSeries;
    QStringList m_displayNames;
    QVector<SeriesStyle> m_seriesStyles;  // parallel to m_declaredSeries
    QCPTextElement* m_title = nullptr;
    QCPTextElement* m_noteLine = nullptr;  // the note under the title, while in the layout
    QCPItemText* m_noteCentre = nullptr;   // the note in the middle of an empty plot
    QString m_note;
    QCPItemTracer* m_tracer = nullptr;
    QCPItemText* m_hoverLabel = nullptr;
    QCPItemStraightLine* m_marker = nullptr;
    QCPItemStraightLine* m_crosshair = nullptr;
    double m_crosshairX = std::numeric_limits<double>::quiet_NaN();
    double m_markerStep = std::numeric_limits<double>::quiet_NaN();
    QCPLayer* m_faintLayer = nullptr;
    QCPLayer* m_hoverLayer = nullptr;
    QSharedPointer<ValueAxisTicker> m_valueTicker;
    QTimer m_refreshTimer;
    QString m_exportDirectory;
    Readout m_hover;
    QPointF m_pressAt{-1, -1};  // where the left button went down; (-1, -1): not down
    bool m_pressed = false;
    double m_smoothing = 0;
    bool m_logScale = false;
    bool m_rubberBand = false;
    bool m_autoFit = true;
    bool m_settingRange = false;  // true while this class moves the axes, so only the user's moves stop auto-fit
    bool m_refitY = false;        // fit y at the next refresh even when not following the data
    bool m_legendDirty = false;
    // The x range the graphs were last handed a decimation of (three view
    // widths), and the view's width then; a pan inside it needs no new one.
    QCPRange m_decimated{0, 0};
    double m_decimatedSpan = 0;
    bool m_redecimate = false;  // the view left m_decimated or changed its width: decimate before the next replot
    XAxisMode m_xMode = XAxisMode::Step;
    // A figure (figure()): its type size in points (0 on screen) and its device
    // pixels a layout unit, which the decimation resolves.
    int m_figureFontPoints = 0;
    bool m_keepsPlotHeight = false;
    double m_pixelsPerUnit = 1.0;
};

}  // namespace widelab
