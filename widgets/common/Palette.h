// defines: palette::seriesColor, palette::seriesCount, palette::blend,
// palette::followTheme, palette::legendBelowPlot: the colours WideLab gives runs,
// series and experts, safe for the common forms of colour blindness, and a chart
// in the widget's theme with its legend clear of the points
#pragma once

#include <QColor>

class QCustomPlot;
class QPalette;

namespace widelab::palette {

// Okabe and Ito's eight colours without black, in an order where neighbours
// differ in lightness as well as hue; index wraps around.
int seriesCount();
QColor seriesColor(int index);
// The same colour as drawn on `on`'s base colour: on a dark base one too dark to
// read (Okabe and Ito's blue) is lightened until it contrasts 3:1 with it
// (WCAG's ratio for graphics); on a light base, unchanged.
QColor seriesColor(int index, const QPalette& on);
// WCAG 2 contrast ratio of two colours, 1 (none) to 21 (black on white).
double contrastRatio(const QColor& a, const QColor& b);

// The colour for "shared across blocks" and "individual per block" in diagrams.
QColor sharedColor();
QColor individualColor();

// `from` moved towards `to` by `t` (0: from, 1: to), opaque: how the views mix
// their greys and tints from the widget palette's text and base colours, so
// that they follow a light or a dark theme.
QColor blend(const QColor& from, const QColor& to, double t);

// A chart in the theme of `colours` (a widget's palette): the base colour behind
// it, axes, ticks, labels and the legend's text in the text colour, the grid a
// faint mix of the two, the legend on the base colour.
void followTheme(QCustomPlot* plot, const QPalette& colours);

// The legend in a row of its own under the plot, its entries side by side, so
// that it never covers a point; the same on every call.
void legendBelowPlot(QCustomPlot* plot);

}  // namespace widelab::palette
