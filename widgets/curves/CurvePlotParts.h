// defines: CurvePlot::Run, CurvePlot::Series and the few helpers the CurvePlot*.cpp
// files share. Internal to the chart: only CurvePlot's own sources include it.
#pragma once

#include "CurvePlot.h"
#include "CurveTrace.h"

#include <QFont>

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

constexpr double kLineWidth = 1.6;  // sparse lines; dense ones are drawn 1 px wide (updateDisplay)

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
