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

// Five runs of a comparison with long names, train (50 falling points) and
// validation (3 markers) each: ten legend entries, or a collapsed legend of
// five runs and two style keys.
inline void fillComparison(CurvePlot& plot)
{
    plot.declareSeries(QStringLiteral("loss"), QStringLiteral("train"));
    plot.declareSeries(QStringLiteral("validation_loss"), QStringLiteral("validation"),
                       CurvePlot::SeriesStyle::Markers);
    const QList<QColor> colors{kBlue, kOrange, Qt::darkGreen, Qt::magenta, Qt::darkCyan};
    for (int r = 0; r < 5; ++r) {
        const QString id = QString::number(r);
        plot.addRun(id, QStringLiteral("widenet-run-%1-20261124").arg(r), colors[r]);
        QVector<double> values;
        for (int i = 0; i < 50; ++i)
            values.append(5.0 / (1 + 0.1 * i) + 0.2 * r);
        plot.appendPoints(id, QStringLiteral("loss"), pointsOf(values));
        plot.appendPoints(id, QStringLiteral("validation_loss"), pointsOf({5.1 + r, 3.0 + r, 2.0 + r}));
    }
}

}  // namespace widelab::curveplottest
