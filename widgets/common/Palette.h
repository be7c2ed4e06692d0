// defines: palette::seriesColor, palette::seriesCount, palette::blend: the colours WideLab gives
// runs, series and experts, safe for the common forms of colour blindness
#pragma once

#include <QColor>

namespace widelab::palette {

// Okabe and Ito's eight colours without black, in an order where neighbours
// differ in lightness as well as hue; index wraps around.
int seriesCount();
QColor seriesColor(int index);

// The colour for "shared across blocks" and "individual per block" in diagrams.
QColor sharedColor();
QColor individualColor();

// `from` moved towards `to` by `t` (0: from, 1: to), opaque: how the views mix
// their greys and tints from the widget palette's text and base colours, so
// that they follow a light or a dark theme.
QColor blend(const QColor& from, const QColor& to, double t);

}  // namespace widelab::palette
