// defines: widelab::PatchSource, patchSource, patchSourceText, patchAttention, patchWeights,
// patchExperts: a probe image's per-patch values, taken from the probe's token
// maps (the image views draw them over the picture)
#pragma once

#include "InsightHistory.h"

#include <QString>
#include <QVector>

namespace widelab {

// Where a patch's attention weight comes from. A model with a CLS token reads
// the image from that token, so its row (CLS -> every patch) is what the image
// means to the classifier; a model that pools by averaging has no such row, and
// the mean over every query token (each a patch) of the weights into a patch
// stands for it.
enum class PatchSource { FromCls, MeanOverPatches };

// FromCls when the capture has one token more than patches (CLS first), else MeanOverPatches.
PatchSource patchSource(const ProbeResult& capture);
// "attention from CLS" / "mean attention over patches": what the view says it draws.
QString patchSourceText(PatchSource source);

// One head's weight into each patch, gridRows x gridCols, row-major. Empty when
// the capture has no image or the head's map is not tokens x tokens.
// tokens = P (+1 with CLS), patches P = gridRows * gridCols
//   FromCls:         w[p] = map[0][1 + p]
//   MeanOverPatches: w[p] = (1 / P) * sum_q map[q][p]
QVector<float> patchAttention(const ProbeResult& capture, int layer, int head);
// The same of any tokens x tokens map of the capture (the mean over a layer's
// heads, say); empty as above.
QVector<float> patchWeights(const ProbeResult& capture, const QVector<float>& map);  // map: as headMap

// The first-choice expert of each patch in a block, gridRows x gridCols,
// row-major; -1: the patch was dropped (no expert had room). Empty when the
// capture has no image or the block's routing does not cover every token.
QVector<int> patchExperts(const ProbeResult& capture, int block);

}  // namespace widelab
