// defines: colorscale::sequential, colorscale::diverging, colorscale::categorical:
// how the heatmaps turn numbers into colours, readable with the common forms of
// colour blindness and in grey scale
#pragma once

#include <QColor>
#include <QImage>
#include <QVector>

namespace widelab::colorscale {

// t in [0, 1] (clamped): dark blue through teal and green to yellow, lightness
// rising all the way (a viridis-like ramp).
QRgb sequential(double t);
// t in [-1, 1] (clamped): blue through a light neutral to orange.
QRgb diverging(double t);
// A distinct colour for category `index` (experts): the Okabe-Ito colours, then
// their lighter and darker variants.
QColor categorical(int index);

// rows x cols values, row-major, as an image of one pixel per cell.
// Sequential: [low, high] onto [0, 1]; diverging: center +- halfRange onto [-1, 1].
QImage sequentialImage(const float* values, int rows, int cols, double low, double high);
QImage divergingImage(const float* values, int rows, int cols, double center, double halfRange);

// The smallest and largest finite values among `count`; false (and the range
// left alone) when none is finite. NaN and infinities never set a colour range.
bool finiteRange(const float* values, qsizetype count, double* low, double* high);

// The heatmaps of one layer's attention maps, each `tokens` x `tokens` weights:
// from 0 to the layer's largest finite weight, or each to its own largest
// (`perHead`; a map of zeros keeps the layer's). A map of another size gives a
// null image, never a guess. `layerMax` receives the layer's top (1 when none).
QVector<QImage> attentionImages(const QVector<QVector<float>>& maps, int tokens, bool perHead,
                                double* layerMax = nullptr);

}  // namespace widelab::colorscale
