// defines: ToolIcon, toolIcon: the training toolbar's icons (start, pause, stop,
// save), painted as shapes in the palette's text colour at whatever size and
// scale they are drawn, so that they read in a light or a dark theme and stay sharp
#pragma once

#include <QIcon>

namespace widelab {

enum class ToolIcon { Play, Pause, Stop, Save };

QIcon toolIcon(ToolIcon kind);

}  // namespace widelab
