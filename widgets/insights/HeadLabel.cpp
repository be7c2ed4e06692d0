#include "HeadLabel.h"

#include "InsightHistory.h"

#include <QCoreApplication>

namespace widelab {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("widelab::HeadLabel", text); }

bool splitsIntoPaths(int heads, int paths) { return paths > 1 && heads >= paths && heads % paths == 0; }

}  // namespace

int headsPerPath(int heads, int paths) { return splitsIntoPaths(heads, paths) ? heads / paths : heads; }

QString headLabel(int head, int heads, int paths)
{
    if (!splitsIntoPaths(heads, paths))
        return tr("head %1").arg(head + 1);
    const int perPath = heads / paths;
    return tr("path %1 · head %2").arg(head / perPath + 1).arg(head % perPath + 1);
}

QString headShortLabel(int head, int heads, int paths)
{
    if (!splitsIntoPaths(heads, paths))
        return tr("h%1").arg(head + 1);
    const int perPath = heads / paths;
    return tr("p%1 h%2").arg(head / perPath + 1).arg(head % perPath + 1);
}

int attentionPaths(const TrainingSnapshot* state)
{
    if (state == nullptr)
        return 1;
    // The first block's: a translation model's decoder (numbered after the
    // encoder) may have paths where the encoder has one.
    for (const PathWeights& p : state->paths)
        if (p.sublayer == "attention" && p.block == 0 && p.paths > 1)
            return static_cast<int>(p.paths);
    return 1;
}

}  // namespace widelab
