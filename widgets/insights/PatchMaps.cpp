#include "PatchMaps.h"

#include <QCoreApplication>

namespace widelab {

PatchSource patchSource(const ProbeCapture& capture)
{
    return capture.tokenCount() == capture.patchCount() + 1 ? PatchSource::FromCls : PatchSource::MeanOverPatches;
}

QString patchSourceText(PatchSource source)
{
    return source == PatchSource::FromCls ? QCoreApplication::translate("AttentionView", "attention from CLS")
                                          : QCoreApplication::translate("AttentionView", "mean attention over patches");
}

QVector<float> patchAttention(const ProbeCapture& capture, int layer, int head)
{
    if (layer < 0 || layer >= capture.layers() || head < 0 || head >= capture.attention[layer].size())
        return {};
    return patchWeights(capture, capture.attention[layer][head]);
}

QVector<float> patchWeights(const ProbeCapture& capture, const QVector<float>& map)
{
    const int patches = capture.patchCount();
    const int n = capture.tokenCount();
    if (!capture.hasImage() || map.size() != static_cast<qsizetype>(n) * n || (n != patches && n != patches + 1))
        return {};
    QVector<float> out(patches, 0.0f);
    if (patchSource(capture) == PatchSource::FromCls) {
        for (int p = 0; p < patches; ++p)
            out[p] = map[1 + p];  // row 0: the CLS query
        return out;
    }
    for (int q = 0; q < n; ++q)
        for (int p = 0; p < patches; ++p)
            out[p] += map[static_cast<qsizetype>(q) * n + p];
    for (float& w : out)
        w /= static_cast<float>(n);
    return out;
}

QVector<int> patchExperts(const ProbeCapture& capture, int block)
{
    const int patches = capture.patchCount();
    const int n = capture.tokenCount();
    if (!capture.hasImage() || block < 0 || block >= capture.experts.size() || (n != patches && n != patches + 1))
        return {};
    const QVector<QVector<int>>& tokens = capture.experts[block];
    if (tokens.size() != n)
        return {};
    const int first = n - patches;  // 1 with a CLS token
    QVector<int> out(patches, -1);
    for (int p = 0; p < patches; ++p)
        out[p] = tokens[first + p].value(0, -1);
    return out;
}

}  // namespace widelab
