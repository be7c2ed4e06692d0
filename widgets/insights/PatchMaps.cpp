#include "PatchMaps.h"

#include <QCoreApplication>

namespace widelab {

PatchSource patchSource(const ProbeResult& capture)
{
    return probeTokenCount(capture) == probePatchCount(capture) + 1 ? PatchSource::FromCls
                                                                    : PatchSource::MeanOverPatches;
}

QString patchSourceText(PatchSource source)
{
    return source == PatchSource::FromCls ? QCoreApplication::translate("AttentionView", "attention from CLS")
                                          : QCoreApplication::translate("AttentionView", "mean attention over patches");
}

QVector<float> patchAttention(const ProbeResult& capture, int layer, int head)
{
    if (layer < 0 || layer >= probeLayers(capture) || head < 0
        || head >= static_cast<int>(capture.attention[static_cast<std::size_t>(layer)].size()))
        return {};
    return patchWeights(capture, headMap(capture, layer, head));
}

QVector<float> patchWeights(const ProbeResult& capture, const QVector<float>& map)
{
    const int patches = probePatchCount(capture);
    const int n = probeTokenCount(capture);
    if (!probeHasImage(capture) || map.size() != static_cast<qsizetype>(n) * n || (n != patches && n != patches + 1))
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

QVector<int> patchExperts(const ProbeResult& capture, int block)
{
    const int patches = probePatchCount(capture);
    const int n = probeTokenCount(capture);
    if (!probeHasImage(capture) || block < 0 || block >= static_cast<int>(capture.experts.size())
        || (n != patches && n != patches + 1))
        return {};
    const std::vector<std::vector<std::int64_t>>& tokens = capture.experts[static_cast<std::size_t>(block)];
    if (tokens.size() != static_cast<std::size_t>(n))
        return {};
    const int first = n - patches;  // 1 with a CLS token
    QVector<int> out(patches, -1);
    for (int p = 0; p < patches; ++p) {
        const std::vector<std::int64_t>& choices = tokens[static_cast<std::size_t>(first + p)];
        out[p] = choices.empty() ? -1 : static_cast<int>(choices.front());
    }
    return out;
}

}  // namespace widelab
