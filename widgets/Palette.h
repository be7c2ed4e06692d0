// defines: palette::seriesColor, palette::seriesCount: the colours WideLab gives
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

}  // namespace widelab::palette
