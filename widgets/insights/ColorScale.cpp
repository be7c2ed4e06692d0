#include "ColorScale.h"

#include "common/Palette.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace widelab::colorscale {

namespace {

struct Stop {
    double t;
    int r, g, b;
};

QRgb interpolate(const Stop* stops, int count, double t)
{
    t = std::clamp(t, stops[0].t, stops[count - 1].t);
    int i = 0;
    while (i + 2 < count && t > stops[i + 1].t)
        ++i;
    const Stop& a = stops[i];
    const Stop& b = stops[i + 1];
    const double f = (t - a.t) / (b.t - a.t);
    auto mix = [f](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
    return qRgb(mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b));
}

// Sampled from the viridis ramp (perceptually uniform, monotone in lightness).
constexpr std::array<Stop, 6> kSequential{{
    {0.0, 68, 1, 84},
    {0.2, 65, 68, 135},
    {0.4, 42, 120, 142},
    {0.6, 34, 168, 132},
    {0.8, 122, 209, 81},
    {1.0, 253, 231, 37},
}};

// Blue to orange through a light grey: the Okabe-Ito blue and orange at the ends.
constexpr std::array<Stop, 5> kDiverging{{
    {-1.0, 0, 84, 147},
    {-0.5, 102, 160, 204},
    {0.0, 236, 236, 236},
    {0.5, 240, 180, 90},
    {1.0, 190, 110, 0},
}};

}  // namespace

QRgb sequential(double t)
{
    if (!std::isfinite(t))
        t = 0;
    return interpolate(kSequential.data(), static_cast<int>(kSequential.size()), t);
}

QRgb diverging(double t)
{
    if (!std::isfinite(t))
        t = 0;
    return interpolate(kDiverging.data(), static_cast<int>(kDiverging.size()), t);
}

QColor categorical(int index)
{
    const int count = palette::seriesCount();
    const QColor base = palette::seriesColor(index % count);
    switch ((index / count) % 3) {
    case 1:
        return base.lighter(140);
    case 2:
        return base.darker(150);
    default:
        return base;
    }
}

QImage sequentialImage(const float* values, int rows, int cols, double low, double high)
{
    QImage image(cols, rows, QImage::Format_RGB32);
    const double span = high > low ? high - low : 1.0;
    for (int r = 0; r < rows; ++r) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(r));
        for (int c = 0; c < cols; ++c)
            line[c] = sequential((values[static_cast<qsizetype>(r) * cols + c] - low) / span);
    }
    return image;
}

bool finiteRange(const float* values, qsizetype count, double* low, double* high)
{
    bool any = false;
    double lo = 0, hi = 0;
    for (qsizetype i = 0; i < count; ++i) {
        const double v = values[i];
        if (!std::isfinite(v))
            continue;
        lo = any ? std::min(lo, v) : v;
        hi = any ? std::max(hi, v) : v;
        any = true;
    }
    if (any) {
        *low = lo;
        *high = hi;
    }
    return any;
}

QImage divergingImage(const float* values, int rows, int cols, double center, double halfRange)
{
    QImage image(cols, rows, QImage::Format_RGB32);
    const double range = halfRange > 0 ? halfRange : 1.0;
    for (int r = 0; r < rows; ++r) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(r));
        for (int c = 0; c < cols; ++c)
            line[c] = diverging((values[static_cast<qsizetype>(r) * cols + c] - center) / range);
    }
    return image;
}

QVector<QImage> attentionImages(const QVector<QVector<float>>& maps, int tokens, bool perHead, double* layerMax)
{
    const qsizetype cells = static_cast<qsizetype>(tokens) * tokens;
    double top = 0;
    for (const QVector<float>& map : maps) {
        double low = 0, high = 0;
        if (map.size() == cells && finiteRange(map.constData(), cells, &low, &high))
            top = std::max(top, high);
    }
    if (top <= 0)
        top = 1;
    QVector<QImage> images;
    for (const QVector<float>& map : maps) {
        if (tokens <= 0 || map.size() != cells) {
            images.push_back(QImage());
            continue;
        }
        double low = 0, own = 0;
        finiteRange(map.constData(), cells, &low, &own);
        images.push_back(sequentialImage(map.constData(), tokens, tokens, 0.0, perHead && own > 0 ? own : top));
    }
    if (layerMax)
        *layerMax = top;
    return images;
}

}  // namespace widelab::colorscale
