// defines: widelab::FigureLayout, the size, resolution and type size of an
// exported chart (a paper column by default), remembered between exports, and
// askFigureLayout, the dialog that chooses it
#pragma once

#include <QSize>

#include <optional>

class QWidget;

namespace widelab {

// An exported figure is laid out for the page, not copied from the screen: at
// this physical size, with type this size, drawn at `dpi` pixels an inch.
// Lengths inside the figure (fonts, lines, margins) are in points (1/72 in).
struct FigureLayout {
    double widthInches = 3.5;   // one column of a two-column paper
    double heightInches = 2.6;
    int dpi = 300;              // PNG pixels an inch (PDF and SVG stay vectors)
    int fontPoints = 8;         // axis labels, ticks and legend; the title is 2 pt larger

    // The figure in points, rounded to whole points: what it is laid out in.
    QSize points() const;
    // The PNG's size: 3.5 x 2.6 in at 300 dpi is 1050 x 780.
    QSize pixels() const;

    // The last layout chosen (QSettings "export/figure*"), else the defaults;
    // values out of the dialog's ranges fall back to the defaults.
    static FigureLayout remembered();
    void remember() const;
};

// Asks for the figure's size (with one- and two-column presets), resolution and
// type size, starting from `initial`. Empty when cancelled.
std::optional<FigureLayout> askFigureLayout(QWidget* parent, const FigureLayout& initial);

}  // namespace widelab
