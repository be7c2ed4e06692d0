// defines: what the CurvePlot tests share (widelab::curveplottest): the runs' colours, points from
// values, a shown plot of a known size, and a comparison with a tolerance
#pragma once

#include "curves/CurvePlot.h"

#include <QtTest>

#include <cmath>
#include <limits>

namespace widelab::curveplottest {

inline const QColor kBlue(0, 114, 178);
inline const QColor kOrange(230, 159, 0);

// Points at steps 0, 1, 2, ... with the given values, two seconds per step.
inline QVector<CurvePoint> pointsOf(const QVector<double>& values)
{
    QVector<CurvePoint> points;
    for (qsizetype i = 0; i < values.size(); ++i)
        points.append({static_cast<double>(i), 2.0 * static_cast<double>(i), values[i]});
    return points;
}

inline QVector<CurvePoint> constant(double value, int count)
{
    return pointsOf(QVector<double>(count, value));
}

// A shown plot of a known size, so the axis rect has a known pixel width.
inline void showPlot(CurvePlot& plot)
{
    plot.resize(600, 400);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
}

inline bool near(double a, double b, double tolerance = 1e-9) { return std::abs(a - b) <= tolerance; }

}  // namespace widelab::curveplottest
