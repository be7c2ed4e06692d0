#include "Palette.h"

#include <QPalette>

#include <qcustomplot.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace widelab::palette {
namespace {

// Okabe, M. and Ito, K., "Color Universal Design" (2008).
constexpr std::array<QRgb, 7> kSeries = {
    0xff0072b2,  // blue
    0xffe69f00,  // orange
    0xff009e73,  // bluish green
    0xffcc79a7,  // reddish purple
    0xff56b4e9,  // sky blue
    0xffd55e00,  // vermillion
    0xfff0e442,  // yellow
};

}  // namespace

int seriesCount() { return static_cast<int>(kSeries.size()); }

QColor seriesColor(int index)
{
    const int n = seriesCount();
    return QColor::fromRgba(kSeries[static_cast<std::size_t>(((index % n) + n) % n)]);
}

double contrastRatio(const QColor& a, const QColor& b)
{
    auto luminance = [](const QColor& c) {
        auto linear = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF());
    };
    const double la = luminance(a), lb = luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QColor seriesColor(int index, const QPalette& on)
{
    QColor color = seriesColor(index);
    const QColor base = on.color(QPalette::Base);
    if (base.lightness() >= 128)
        return color;
    for (int i = 0; i < 12 && contrastRatio(color, base) < 3.0; ++i)
        color = color.lighter(112);
    return color;
}

QColor sharedColor() { return QColor::fromRgba(kSeries[1]); }
QColor individualColor() { return QColor::fromRgba(kSeries[0]); }

QColor blend(const QColor& from, const QColor& to, double t)
{
    auto channel = [t](float a, float b) { return static_cast<float>(a + (b - a) * t); };
    return QColor::fromRgbF(channel(from.redF(), to.redF()), channel(from.greenF(), to.greenF()),
                            channel(from.blueF(), to.blueF()));
}

void followTheme(QCustomPlot* plot, const QPalette& colours)
{
    const QColor base = colours.color(QPalette::Base), text = colours.color(QPalette::Text);
    plot->setBackground(base);
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
        axis->setLabelColor(text);
        axis->setTickLabelColor(text);
        axis->setBasePen(QPen(text));
        axis->setTickPen(QPen(text));
        axis->setSubTickPen(QPen(text));
        axis->grid()->setPen(QPen(blend(text, base, 0.85), 0));
    }
    plot->legend->setBrush(base);
    plot->legend->setTextColor(text);
}

void legendBelowPlot(QCustomPlot* plot)
{
    QCPLayoutGrid* layout = plot->plotLayout();
    if (layout->rowCount() > 1 && layout->hasElement(1, 0))
        return;  // moved before
    auto* row = new QCPLayoutGrid;
    layout->addElement(1, 0, row);
    layout->setRowStretchFactor(1, 0.001);  // as tall as the legend needs
    row->setMargins(QMargins(5, 0, 5, 5));
    row->addElement(0, 0, plot->legend);  // taken out of the plot's inset
    plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    plot->legend->setWrap(4);
}

}  // namespace widelab::palette
