// defines: widelab::CurvesView, the training-curves panel: a grid of CurvePlots
// (loss, accuracy, balance loss, learning rate, gradient norm, tokens/s) under
// shared controls (smoothing, log y, x axis, reset view, export), linked to the
// insight views by a clicked step and a step cursor
#pragma once

#include "CurvePlot.h"
#include "CurvePoint.h"

#include <QStringList>
#include <QVector>
#include <QWidget>

#include <functional>
#include <limits>

class QAction;
class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QPushButton;
class QSlider;
class QToolButton;

namespace widelab {

// The app hands it plain data: runs (each gets the next free palette colour,
// the same in every chart) and points per metric. Metrics and their charts:
//   loss                "loss" (train, solid, smoothed), "validation_loss" (markers, dashed)
//   accuracy            "accuracy" (train, solid, smoothed), "validation_accuracy" (markers, dashed)
//   balance_loss        "balance_loss" (smoothed; only runs whose model has experts)
//   learning_rate       "learning_rate" (exact: a schedule is never smoothed)
//   gradient_norm       "gradient_norm" (smoothed)
//   tokens_per_second   "tokens_per_second" (smoothed)
//   bleu                "validation_bleu", "validation_chrf" (markers; a translation run's,
//                       the chart shown once a run has them)
// Validation values are measured now and then, so they are drawn as markers at
// their logged values, never smoothed. Points of other metrics, or of runs not
// added, are ignored.
// The controls set every chart; each chart's context menu can still change its own.
class CurvesView : public QWidget {
    Q_OBJECT

public:
    explicit CurvesView(QWidget* parent = nullptr);
    ~CurvesView() override;

    // What a run's configuration says about it, beyond its curves.
    struct RunTraits {
        bool hasExperts = true;  // model.experts > 1; unknown (e.g. no readable config) counts as true
    };

    // A new run takes the palette colour fewest current runs use (the lowest
    // such index). Adding a known run again updates its label and parameter count.
    void addRun(const QString& runId, const QString& label, double parameterCount);
    // A run without experts has no balance loss (its trainer logs zeros): the
    // balance-loss chart leaves it out and its note names it; with no run having
    // experts, the chart says so in its middle. Set before appending the run's
    // points: its balance-loss points are dropped while it has no experts.
    void setRunTraits(const QString& runId, const RunTraits& traits);
    RunTraits runTraits(const QString& runId) const;  // the default for an unknown run
    void removeRun(const QString& runId);
    void appendPoints(const QString& runId, const QString& metric, const QVector<CurvePoint>& points);
    void clearRun(const QString& runId);  // e.g. before reloading from disk
    QStringList runs() const;
    QColor runColor(const QString& runId) const;  // invalid for an unknown run

    // "loss", "accuracy", "balance_loss", "learning_rate", "gradient_norm",
    // "tokens_per_second", "bleu"; nullptr for another key.
    CurvePlot* chart(const QString& chartKey) const;
    QStringList chartKeys() const;
    QString chartKeyForMetric(const QString& metric) const;  // empty when no chart draws it
    // The chart the user last clicked (the loss chart at first): what the export button exports.
    CurvePlot* currentChart() const;

    void setSmoothing(double weight);  // [0, 0.999], shown by the slider
    double smoothing() const;
    void setLogScale(bool on);
    bool logScale() const;
    void setXAxisMode(CurvePlot::XAxisMode mode);
    CurvePlot::XAxisMode xAxisMode() const;

    qint64 cursorStep() const;  // -1: none

    // The crosshair: the pointer over any chart draws a line at its x on every
    // chart (CurvePlot::setCrosshair) and, while the Values table is shown,
    // fills it with every shown run's value of every metric there. NaN (the
    // pointer left) hides the line and keeps the table, to be read.
    void showValuesAt(double x);
    void setValuesShown(bool on);  // the Values button
    bool valuesShown() const;
    // The table: a row a run (its label first), a column a metric that some run
    // has a value for, headed "Loss · train"; a cell as the chart draws it.
    QString valuesCell(int row, const QString& columnHeader) const;  // empty when none
    int valuesRowCount() const;
    QString valuesTitle() const;  // "At step 1,200" (Time mode: "At 0:20:00")

    // Charts of any other metric the runs write, one a metric, by its tag
    // (vocab/MetricScalars.h: "routing/block_2/router_entropy", "memory/cpu/bytes",
    // "paths/block_1/ffn/alpha/path_1", "validation/perplexity", ...), after the
    // fixed ones. The Charts... button offers `tags()`'s tags in a MetricChooser.
    void setMetricTags(std::function<QStringList()> tags);
    // False when it is charted already. A new chart starts empty: the app hands it
    // the runs' points (metricChartAdded).
    bool addMetricChart(const QString& tag);
    void removeMetricChart(const QString& tag);
    QStringList metricCharts() const;              // the added charts' tags, in order
    void setMetricCharts(const QStringList& tags);  // replaces them (a workspace's saved layout)
    void chooseCharts();                            // the Charts... button

    // One line above the charts while no run is shown (the app's first-start
    // invitation: pick a preset, press F5); none when empty.
    void setEmptyHint(const QString& text);
    bool emptyHintShown() const;

public Q_SLOTS:
    // One vertical line at `step` on every chart (the step the insight views
    // show); -1 removes it. Drawn in Step mode only (CurvePlot::setCursorStep).
    void setCursorStep(qint64 step);
    void resetViews();
    // Ask for a file name and export the chart (PNG, PDF, SVG or CSV).
    void exportChart(const QString& chartKey);
    void exportCurrentChart();

Q_SIGNALS:
    // A point of a curve in any chart was clicked: its step (CurvePlot::stepClicked).
    void stepClicked(qint64 step);
    // The theme changed and with it the runs' colours (runColor): lists that
    // show them should read them again.
    void runColorsChanged();
    // A metric chart was added: it draws the points appended from now on.
    void metricChartAdded(const QString& tag);
    // The added charts changed (added, removed, replaced): for the app to keep.
    void metricChartsChanged(const QStringList& tags);

protected:
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;  // a new palette recolours the runs

private:
    struct RunEntry {
        QString id;
        QString label;
        double parameters = 0;
        int colorIndex = 0;
        RunTraits traits;
    };

    // optional: laid out only once it has points (a translation run's BLEU).
    void addChart(const QString& key, const QString& title, const QStringList& metrics,
                  const QStringList& displayNames, const QVector<CurvePlot::SeriesStyle>& styles, bool optional = false);
    bool chartShown(int chart) const;
    void setCurrentChart(CurvePlot* chart);
    void relayout();
    void applySmoothingFromSlider(int value);
    bool drawsRun(const CurvePlot* chart, const RunEntry& run) const;
    void updateBalanceNote();
    void updateEmptyHint();

    QVector<RunEntry> m_runs;
    QStringList m_chartKeys;
    QVector<CurvePlot*> m_charts;
    QStringList m_metrics;        // metric names, parallel to m_metricCharts
    QStringList m_metricHeaders;  // "Loss · train": the Values table's headers, parallel to m_metrics
    QVector<int> m_metricCharts;  // index into m_charts
    CurvePlot* m_current = nullptr;
    int m_columns = 0;
    QVector<bool> m_optional;        // parallel to m_charts
    QVector<CurvePlot*> m_laidOut;   // the charts in the grid, in order
    QVector<QAction*> m_exportActions;  // parallel to m_charts
    int m_fixedCharts = 0;              // the first charts, always there; the rest are metric charts
    std::function<QStringList()> m_metricTags;
    QToolButton* m_chooseCharts = nullptr;

    QSlider* m_smoothingSlider = nullptr;
    QLabel* m_smoothingValue = nullptr;
    QCheckBox* m_logScale = nullptr;
    QComboBox* m_xAxis = nullptr;
    QPushButton* m_reset = nullptr;
    QToolButton* m_export = nullptr;
    QWidget* m_chartArea = nullptr;
    QLabel* m_emptyHint = nullptr;
    QToolButton* m_valuesButton = nullptr;
    QWidget* m_valuesPanel = nullptr;
    QLabel* m_valuesTitle = nullptr;
    class QTableWidget* m_values = nullptr;
    double m_valuesX = std::numeric_limits<double>::quiet_NaN();
    QGridLayout* m_grid = nullptr;
};

}  // namespace widelab
