// defines: Theme, applyTheme, savedTheme, saveTheme, themeIsDark: the app's light
// and dark looks, and following the system's
#pragma once

#include <QPalette>
#include <QString>

namespace widelab {

// System: the palette and style the platform gave the app at start (a desktop
// in dark mode gives a dark one). Light and Dark: Qt's Fusion style with a
// light or a dark palette, whatever the desktop says.
enum class Theme { System, Light, Dark };

// Call once, after the QApplication exists and before any window: remembers
// the system's look, then applies `theme`. Later calls only switch.
void applyTheme(Theme theme);
Theme currentTheme();

// The choice kept between sessions (QSettings "appearance/theme").
Theme savedTheme();
void saveTheme(Theme theme);

QString themeName(Theme theme);  // "system", "light", "dark"
// Whether a palette draws light text on a dark window.
bool themeIsDark(const QPalette& palette);

}  // namespace widelab
