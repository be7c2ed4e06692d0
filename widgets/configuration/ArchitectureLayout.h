// defines: DiagramItem, layoutArchitecture, minimumDiagramHeight, preferredDiagramHeight,
// describeArchitecture: where the architecture diagram puts every module, as a pure
// function of the sketch and a size
#pragma once

#include "ArchitectureSketch.h"

#include <QRectF>
#include <QSizeF>
#include <QString>
#include <QVector>

namespace widelab {

// One thing the diagram draws. Roles:
//   "block"      the frame of one block's row (text: empty)
//   "label"      the block's name at the left of its row ("Block 3")
//   "embedding", "head"
//   "layernorm"  a LayerNorm (two per block, or two tall shared ones)
//   "attention", "ffn"  a sublayer; an MoE is an "ffn" whose count is its experts
//   "heads"      the area inside a single-path attention where its heads are drawn as ticks (count: heads)
//   "expert"     one expert inside an MoE
//   "path"       one parallel lane inside a multi-path sublayer
//   "pathnorm"   the PathNorm at the end of a lane
//   "combine"    a multi-path sublayer's weighted sum (text "Σ", or "Σα" when learnable)
//   "link"       a block's connection to a shared module: a horizontal segment, rect.height() == 0
//   "ellipsis"   the fold standing for blocks left out ("… 42 more blocks …"): the part of
//                its row left of the shared modules, which span it (block: the first
//                block left out; count: how many)
//   "legend"     one legend entry; `swatch` says what it explains
struct DiagramItem {
    QString role;
    int block = -1;        // 0-based block index; -1: not one block's (shared modules, embedding, head, legend)
    bool shared = false;   // one module used by every block
    QRectF rect;
    QString text;          // drawn inside the rect (elided when it does not fit)
    int count = 0;         // "heads" and attention lanes: heads (drawn as ticks); MoE "ffn": experts
    QString swatch;        // legend only: "shared", "individual", "path", "pathnorm", "combine"
};

// At most this many blocks are drawn one by one; deeper models show their first
// and last kDiagramKeptBlocks blocks around an "ellipsis" row.
inline constexpr int kDiagramMaxBlocks = 12;
inline constexpr int kDiagramKeptBlocks = 3;
// No block row is shorter than this (a dense block's; with experts or paths the
// floor is higher): a diagram with less room grows past it and is scrolled.
inline constexpr double kDiagramMinBlockHeight = 24;
// At most this many experts are drawn as boxes per MoE.
inline constexpr int kDiagramMaxExperts = 16;

// Lays out the whole diagram across `size`: head on top, blocks stacked with the
// first block at the bottom, the embedding below them and the legend at the foot.
// Block rows grow with the height up to a comfortable size; below
// minimumDiagramHeight they keep their least height and the items reach past
// size.height(), for the view to scroll.
QVector<DiagramItem> layoutArchitecture(const ArchitectureSketch& sketch, QSizeF size);

// The least height at `width` at which every row keeps its least height.
double minimumDiagramHeight(const ArchitectureSketch& sketch, double width);

// The height the layout would like at `width`: every row at its comfortable size.
double preferredDiagramHeight(const ArchitectureSketch& sketch, double width);

// The height of the text band at the top of a sublayer box: 0 when the box is
// too short (its text then sits at its left), one line, or two wrapped lines for
// the tall boxes of shared modules.
double diagramTextBand(const QRectF& box);

// The width of the text at the left of a box too short for a text band: room for
// the sublayer's name ("Attention"), the rest of the box for its heads or experts.
double diagramSideTextWidth(const QRectF& box);

// One line for screen readers and tooltips, e.g. "6 blocks, attention shared,
// MoE 4 experts top-2 shared, LayerNorm per block, 8 heads, classification head".
QString describeArchitecture(const ArchitectureSketch& sketch);

}  // namespace widelab
