// defines: CurvePlot::Run, CurvePlot::Series and the few helpers the CurvePlot*.cpp
// files share. Internal to the chart: only CurvePlot's own sources include it.
#pragma once

#include "CurvePlot.h"
#include "CurveTrace.h"

#include <QFont>

#include <array>

namespace widelab {

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

namespace curveplot {

// An entry of a collapsed legend (several runs and several series in one chart,
// which would otherwise need runs x series entries): a run, drawn in its colour,
// standing for all its series; or a series' style key (solid "train", dashed
// "validation"), drawn in the text's colour, standing for that series of every
// run. A click toggles what it stands for.
class KeyLegendItem : public QCPAbstractLegendItem {
public:
    enum class Kind { Run, Series };
    KeyLegendItem(QCPLegend* legend, Kind kind, const QString& id, const QString& text, const QPen& pen, bool marker);

    Kind kind() const { return m_kind; }
    QString id() const { return m_id; }   // the run's id, or the series' name
    QString text() const { return m_text; }

protected:
    void draw(QCPPainter* painter) override;
    QSize minimumOuterSizeHint() const override;

private:
    Kind m_kind;
    QString m_id;
    QString m_text;
    QPen m_pen;
    bool m_marker;
};

constexpr int kMinChartHeight = 170;  // a chart on screen, title, axes and legend included
constexpr int kMinPlotHeight = 80;  // the data's own band in a chart on screen, whatever the legend holds
constexpr double kLineWidth = 1.6;  // sparse lines; dense ones are drawn 1 px wide (updateDisplay)
// A run's series in declaration order: solid, dashed, dotted, dash-dotted (the legend's style key too).
constexpr std::array<Qt::PenStyle, 4> kLineStyles = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};

inline QColor withAlpha(QColor color, int alpha)
{
    color.setAlpha(alpha);
    return color;
}

inline QFont smallFont(const QFont& base, double pointSize, bool bold = false)
{
    QFont font = base;
    font.setPointSizeF(pointSize);
    font.setBold(bold);
    return font;
}

}  // namespace curveplot
}  // namespace widelab
