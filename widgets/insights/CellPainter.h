// defines: widelab::paintCells, a heatmap's cells drawn exactly on every device:
// pixels on screen and in PNGs, filled rectangles (or a lossless image) in SVG and PDF
#pragma once

#include <QtGlobal>

class QImage;
class QPainter;
class QRectF;

namespace widelab {

// Above this many cells a map goes to SVG and PDF as one lossless image instead
// of one rectangle per cell, so a 128-token map does not become 16k elements.
inline constexpr qsizetype kMaxVectorCells = 4096;

// Draws `cells` (one pixel per cell) stretched over `target`, each cell one flat
// colour: never smoothed, never compressed with loss. On screen and into images
// the pixels are scaled without interpolation. Into SVG and PDF each row's runs
// of one colour become filled rectangles; past kMaxVectorCells the image is
// enlarged by whole pixels without interpolation and embedded lossless, so a
// viewer that smooths images still shows sharp cells of the right colour.
void paintCells(QPainter& painter, const QRectF& target, const QImage& cells);

}  // namespace widelab
