#include "PaceText.h"

#include <QCoreApplication>
#include <QLocale>
#include <QStringList>

namespace widelab {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("PaceText", text); }

QString milliseconds(double seconds) { return QStringLiteral("%1 ms").arg(seconds * 1000.0, 0, 'f', 1); }

}  // namespace

PaceText describePace(const WorldPace& world)
{
    PaceText text;
    if (world.size <= 1)
        return text;
    const int slowest = world.slowestRank();
    text.label = slowest < 0 ? tr("%1 processes").arg(world.size)
                             : tr("%1 processes, slowest rank %2 (%3)")
                                   .arg(world.size)
                                   .arg(slowest)
                                   .arg(milliseconds(world.computeSeconds[static_cast<std::size_t>(slowest)]));
    QStringList lines{tr("Each process's time computing a step (not waiting for the others), and its peak memory:")};
    const QLocale locale;
    for (std::size_t r = 0; r < world.computeSeconds.size(); ++r) {
        QString line = tr("rank %1: %2").arg(r).arg(milliseconds(world.computeSeconds[r]));
        if (r < world.peakBytes.size())
            line += tr(", peak %1").arg(locale.formattedDataSize(world.peakBytes[r], 1));
        if (static_cast<int>(r) == slowest)
            line += tr(" (slowest: the others wait for it)");
        lines << line;
    }
    lines << tr("Rank 0 waited %1 a step for the gradients after its backward pass.")
                 .arg(milliseconds(world.allReduceWaitSeconds));
    text.details = lines.join(QLatin1Char('\n'));
    return text;
}

}  // namespace widelab
