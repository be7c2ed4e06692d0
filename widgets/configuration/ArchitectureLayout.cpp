#include "ArchitectureLayout.h"

#include <QStringList>

#include <algorithm>
#include <cmath>

namespace widelab {
namespace {

constexpr double kMargin = 6;
constexpr double kGap = 6;          // between columns and between the stack's parts
constexpr double kRowGap = 4;       // between block rows
constexpr double kBoxHeight = 24;   // embedding and head
constexpr double kTwoLineBoxHeight = 36;
constexpr double kEllipsisHeight = 20;
constexpr double kLayerNormWidth = 22;
constexpr double kLegendLine = 18;
constexpr double kCombineSize = 14;
constexpr double kPathNormWidth = 7;
constexpr double kCharWidth = 6.0;  // estimate for the legend's wrapping and the fold's wording; painting elides
constexpr int kMaxLanes = 8;

bool isMultiPath(const ArchitectureSketch& s) { return s.paths > 1 || s.pathNorm || s.learnablePathWeights; }

bool moeAt(const ArchitectureSketch& s, int block)
{
    if (block >= 0 && block < s.moeAtBlock.size())
        return s.moeAtBlock[block] && s.experts > 1;
    return s.experts > 1;
}

bool anyMoe(const ArchitectureSketch& s)
{
    for (int block = 0; block < std::max(s.layers, 1); ++block)
        if (moeAt(s, block))
            return true;
    return false;
}

// Preferred and smallest row heights: lanes and experts need room beside the
// label. The smallest keeps a line of text and a readable box in every sublayer.
double preferredRow(const ArchitectureSketch& s) { return isMultiPath(s) ? 52 : (anyMoe(s) ? 44 : 36); }
double smallestRow(const ArchitectureSketch& s)
{
    return isMultiPath(s) ? 34 : (anyMoe(s) ? 28 : kDiagramMinBlockHeight);
}

struct Legend {
    QVector<DiagramItem> items;
    double height = 0;
};

Legend layoutLegend(const ArchitectureSketch& s, double left, double width)
{
    QVector<QPair<QString, QString>> entries = {{"individual", "one per block"},
                                                {"shared", "one module shared by all blocks"}};
    if (s.paths > 1)
        entries.append(qMakePair(QStringLiteral("path"), QStringLiteral("%1 parallel paths per sublayer").arg(s.paths)));
    if (s.pathNorm)
        entries.append(qMakePair(QStringLiteral("pathnorm"), QStringLiteral("PathNorm")));
    if (isMultiPath(s))
        entries.append(qMakePair(QStringLiteral("combine"), s.learnablePathWeights
                                                               ? QStringLiteral("Σα: weighted sum, learnable weights")
                                                               : QStringLiteral("Σ: weighted sum, fixed weights")));
    Legend legend;
    double x = left;
    double y = 0;
    for (const auto& [swatch, text] : entries) {
        const double w = 18 + kCharWidth * text.size() + 12;
        if (x > left && x + w > left + width) {
            x = left;
            y += kLegendLine;
        }
        DiagramItem item;
        item.role = "legend";
        item.swatch = swatch;
        item.shared = swatch == "shared";
        item.text = text;
        item.rect = QRectF(x, y, std::min(w, width), kLegendLine);
        legend.items.append(item);
        x += w;
    }
    legend.height = y + kLegendLine;
    return legend;
}

// Which rows the stack shows, bottom to top: block indices, -1 for the fold. The
// fold depends on the depth alone, so that resizing the dock never changes what
// the picture says; a short widget scrolls instead.
QVector<int> visibleRows(int layers)
{
    QVector<int> rows;
    const bool fold = layers > kDiagramMaxBlocks;
    for (int block = 0; block < layers; ++block) {
        if (!fold || block < kDiagramKeptBlocks || block >= layers - kDiagramKeptBlocks)
            rows.append(block);
        else if (rows.last() >= 0)
            rows.append(-1);
    }
    return rows;
}

// The label column's width: "Block 12" where there is room, "12" where not.
double labelWidthAt(double width) { return width >= 360 ? 60 : 26; }

// A translation model's decoder is one box: its blocks read the encoder's output.
QString headText(const ArchitectureSketch& s)
{
    if (s.headKind == "translation")
        return QStringLiteral("Final LN → decoder of %1 blocks (self-, cross-attention, FFN) → tied output")
            .arg(s.decoderLayers);
    if (s.headKind == "masked_lm")
        return QStringLiteral("Final LN → masked-LM head (the hidden tokens' logits)");
    return s.headKind == "language_model" ? QStringLiteral("Final LN → language-model head (next-token logits)")
                                          : QStringLiteral("Final LN → classification head");
}

// Two lines where one would be elided (the decoder's description in a narrow dock).
double headHeight(const ArchitectureSketch& s, double width)
{
    const double boxWidth = width - 2 * kMargin - labelWidthAt(width);
    return kCharWidth * headText(s).size() + 8 > boxWidth ? kTwoLineBoxHeight : kBoxHeight;
}

// Margins, head, embedding, legend and the gaps between them: all but the stack.
double chromeHeight(const ArchitectureSketch& s, double width)
{
    return 2 * kMargin + headHeight(s, width) + kBoxHeight + 3 * kGap
           + layoutLegend(s, kMargin, width - 2 * kMargin).height;
}

double stackHeight(const QVector<int>& rows, double rowHeight)
{
    double h = 0;
    for (const int row : rows)
        h += row >= 0 ? rowHeight : kEllipsisHeight;
    return h + std::max(0, static_cast<int>(rows.size()) - 1) * kRowGap;
}

QString blockWord(int n) { return n == 1 ? QStringLiteral("block") : QStringLiteral("blocks"); }

// The longest wording of the fold that fits `width` (the painter's pill adds 16).
QString foldText(int hidden, double width)
{
    const QStringList texts = {QStringLiteral("… %1 more %2 …").arg(hidden).arg(blockWord(hidden)),
                               QStringLiteral("%1 more %2").arg(hidden).arg(blockWord(hidden)),
                               QStringLiteral("%1 more").arg(hidden), QStringLiteral("+%1").arg(hidden)};
    for (const QString& text : texts)
        if (kCharWidth * text.size() + 16 <= width)
            return text;
    return texts.last();
}

// The inner area of a sublayer box below (or beside) its text, where lanes and experts go.
QRectF innerArea(const QRectF& box, double rightReserve)
{
    if (const double band = diagramTextBand(box); band > 0)
        return box.adjusted(4, band + 2, -4 - rightReserve, -4);
    // A short box keeps its text on the left and its contents on the right.
    const double textWidth = diagramSideTextWidth(box);
    return QRectF(box.left() + textWidth, box.top() + 3, box.width() - textWidth - 4 - rightReserve, box.height() - 6);
}

class Builder {
public:
    Builder(const ArchitectureSketch& sketch, QSizeF size) : s(sketch), size(size) {}

    QVector<DiagramItem> run();

private:
    void add(DiagramItem item) { items.append(std::move(item)); }
    DiagramItem make(const QString& role, int block, bool shared, QRectF rect, QString text = {}, int count = 0)
    {
        DiagramItem item;
        item.role = role;
        item.block = block;
        item.shared = shared;
        item.rect = rect;
        item.text = std::move(text);
        item.count = count;
        return item;
    }
    void addSublayer(const QString& role, int block, bool shared, const QRectF& box, const QVector<double>& rowCentres);
    void addExperts(int block, bool shared, const QRectF& inner);
    void addLanes(const QString& sublayerRole, int block, bool shared, const QRectF& inner);

    const ArchitectureSketch& s;
    QSizeF size;
    QVector<DiagramItem> items;
};

void Builder::addExperts(int block, bool shared, const QRectF& inner)
{
    if (inner.width() < 4 || inner.height() < 3)
        return;
    const double gap = 2;
    const int fit = static_cast<int>(std::floor((inner.width() + gap) / (5 + gap)));
    const int shown = std::max(1, std::min({s.experts, kDiagramMaxExperts, fit}));
    const double w = std::min(18.0, (inner.width() - (shown - 1) * gap) / shown);
    const bool numbered = shown == s.experts && w >= 10 && inner.height() >= 10;
    for (int e = 0; e < shown; ++e) {
        const QRectF r(inner.left() + e * (w + gap), inner.top(), w, inner.height());
        add(make("expert", block, shared, r, numbered ? QString::number(e + 1) : QString()));
    }
}

void Builder::addLanes(const QString& sublayerRole, int block, bool shared, const QRectF& inner)
{
    if (inner.width() < 4 || inner.height() < 3)
        return;
    const int lanes = std::clamp(s.paths, 1, kMaxLanes);
    const double gap = inner.height() >= lanes * 5 ? 2 : 1;
    const double h = std::max(1.5, (inner.height() - (lanes - 1) * gap) / lanes);
    const double normWidth = s.pathNorm ? kPathNormWidth + 2 : 0;
    for (int p = 0; p < lanes; ++p) {
        const QRectF lane(inner.left(), inner.top() + p * (h + gap), inner.width() - normWidth, h);
        add(make("path", block, shared, lane, QString(), sublayerRole == "attention" ? s.heads : 0));
        if (s.pathNorm) {
            // PathNorm and the path weights belong with the LayerNorms (core: path_att / path_ffn).
            add(make("pathnorm", block, s.shareLayerNorm, QRectF(lane.right() + 2, lane.top(), kPathNormWidth, h)));
        }
    }
}

void Builder::addSublayer(const QString& role, int block, bool shared, const QRectF& box, const QVector<double>& rowCentres)
{
    const bool moe = role == "ffn" && (shared ? anyMoe(s) : moeAt(s, block));
    const bool multiPath = isMultiPath(s);
    QString text;
    int count = 0;
    const QString sharing = QStringLiteral(", shared by all %1 %2").arg(s.layers).arg(blockWord(s.layers));
    if (role == "attention") {
        text = QStringLiteral("Attention");
        if (shared)
            text += sharing;
        if (s.heads > 0)
            text += QStringLiteral(" · %1 head%2").arg(s.heads).arg(s.heads == 1 ? "" : "s");
    } else if (moe) {
        text = QStringLiteral("MoE");
        if (shared)
            text += sharing;
        text += QStringLiteral(" · top-%1 of %2").arg(s.topK).arg(s.experts);
        count = s.experts;
    } else {
        text = QStringLiteral("FFN");
        if (shared)
            text += sharing;
    }
    add(make(role, block, shared, box, text, count));

    const double combineReserve = multiPath ? kCombineSize + 3 : 0;
    const QRectF inner = innerArea(box, combineReserve);
    if (role == "attention" && !multiPath && s.heads > 0 && inner.width() >= 4 && inner.height() >= 3)
        add(make("heads", block, shared, inner, QString(), s.heads));
    if (moe)
        addExperts(block, shared, inner);
    else if (multiPath)
        addLanes(role, block, shared, inner);
    if (multiPath) {
        // One weighted sum per block, at the right end of the sublayer, in that block's row.
        const QString sum = s.learnablePathWeights ? QStringLiteral("Σα") : QStringLiteral("Σ");
        for (int i = 0; i < rowCentres.size(); ++i) {
            const double cy = rowCentres[i];
            const QRectF r(box.right() - kCombineSize - 3, cy - kCombineSize / 2, kCombineSize, kCombineSize);
            add(make("combine", shared ? -1 : block, s.shareLayerNorm, r, sum));
        }
    }
}

QVector<DiagramItem> Builder::run()
{
    const double width = size.width();
    const double height = size.height();
    const double left = kMargin;
    const double right = width - kMargin;
    const Legend legend = layoutLegend(s, left, right - left);

    const int layers = std::max(s.layers, 0);
    const double stackTop = kMargin + headHeight(s, width) + kGap;
    const QVector<int> rows = visibleRows(layers);
    const int blockRows = static_cast<int>(std::count_if(rows.begin(), rows.end(), [](int b) { return b >= 0; }));
    // The rows share what the height leaves them, between their least and their
    // comfortable height; short of the least, the diagram grows and scrolls.
    double rowHeight = preferredRow(s);
    if (blockRows > 0) {
        const double room = height - chromeHeight(s, width) - stackHeight(rows, 0);
        rowHeight = std::clamp(room / blockRows, smallestRow(s), preferredRow(s));
    }

    // Columns, left to right in each row: label, LN, attention, LN, FFN or MoE.
    const double labelWidth = labelWidthAt(width);
    const double contentLeft = left + labelWidth;
    const double rest = std::max(40.0, right - contentLeft - 2 * kLayerNormWidth - 3 * kGap);
    const double attentionWidth = rest * 0.42;
    const double ln1X = contentLeft;
    const double attX = ln1X + kLayerNormWidth + kGap;
    const double ln2X = attX + attentionWidth + kGap;
    const double ffnX = ln2X + kLayerNormWidth + kGap;
    const double ffnWidth = std::max(10.0, right - ffnX);

    // Head on top, then the rows from the last block down to the first.
    add(make("head", -1, false, QRectF(contentLeft, kMargin, right - contentLeft, headHeight(s, width)), headText(s)));
    struct Row {
        int block;
        QRectF rect;
    };
    QVector<Row> placed;
    double y = stackTop;
    for (int i = static_cast<int>(rows.size()) - 1; i >= 0; --i) {
        const double h = rows[i] >= 0 ? rowHeight : kEllipsisHeight;
        placed.append({rows[i], QRectF(left, y, right - left, h)});
        y += h + kRowGap;
    }
    const double stackEnd = placed.isEmpty() ? stackTop : y - kRowGap;
    add(make("embedding", -1, false, QRectF(contentLeft, stackEnd + kGap, right - contentLeft, kBoxHeight),
             s.imageInput ? QStringLiteral("Patch + position embedding") : QStringLiteral("Token + position embedding")));
    for (DiagramItem item : legend.items) {
        item.rect.translate(0, stackEnd + kGap + kBoxHeight + kGap);
        add(item);
    }
    if (placed.isEmpty())
        return items;

    const double spanTop = placed.first().rect.top() + 3;
    const double spanBottom = placed.last().rect.bottom() - 3;
    const QRectF spanLn1(ln1X, spanTop, kLayerNormWidth, spanBottom - spanTop);
    const QRectF spanAtt(attX, spanTop, attentionWidth, spanBottom - spanTop);
    const QRectF spanLn2(ln2X, spanTop, kLayerNormWidth, spanBottom - spanTop);
    const QRectF spanFfn(ffnX, spanTop, ffnWidth, spanBottom - spanTop);
    QVector<double> blockCentres;  // rows of blocks, for the shared modules' per-block marks
    QRectF ellipsisRow;

    for (const Row& row : placed) {
        if (row.block < 0) {
            ellipsisRow = row.rect;
            continue;
        }
        const int b = row.block;
        const QRectF inRow = row.rect.adjusted(0, 3, 0, -3);
        const double cy = row.rect.center().y();
        blockCentres.append(cy);
        add(make("block", b, false, row.rect));
        add(make("label", b, false, QRectF(left + 2, row.rect.top(), labelWidth - 4, row.rect.height()),
                 labelWidth >= 60 ? QStringLiteral("Block %1").arg(b + 1) : QString::number(b + 1)));
        if (!s.shareLayerNorm) {
            add(make("layernorm", b, false, QRectF(ln1X, inRow.top(), kLayerNormWidth, inRow.height()), "LN"));
            add(make("layernorm", b, false, QRectF(ln2X, inRow.top(), kLayerNormWidth, inRow.height()), "LN"));
        }
        if (!s.shareAttention)
            addSublayer("attention", b, false, QRectF(attX, inRow.top(), attentionWidth, inRow.height()), {cy});
        if (!s.shareFfn)
            addSublayer("ffn", b, false, QRectF(ffnX, inRow.top(), ffnWidth, inRow.height()), {cy});
        // Each block's connections into the shared modules it uses.
        auto link = [&](double from, double to) {
            add(make("link", b, true, QRectF(from, cy, to - from, 0)));
        };
        if (s.shareLayerNorm || s.shareAttention)
            link(ln1X + kLayerNormWidth, attX);
        if (s.shareAttention || s.shareLayerNorm)
            link(attX + attentionWidth, ln2X);
        if (s.shareLayerNorm || s.shareFfn)
            link(ln2X + kLayerNormWidth, ffnX);
        if (s.shareLayerNorm)
            link(contentLeft - 6, ln1X);
    }
    if (s.shareLayerNorm) {
        add(make("layernorm", -1, true, spanLn1, "LayerNorm, shared"));
        add(make("layernorm", -1, true, spanLn2, "LayerNorm, shared"));
    }
    if (s.shareAttention)
        addSublayer("attention", -1, true, spanAtt, blockCentres);
    if (s.shareFfn)
        addSublayer("ffn", -1, true, spanFfn, blockCentres);
    if (!ellipsisRow.isNull()) {
        // The fold takes only the part of its row left of the first shared module:
        // those span the folded blocks too, and their experts and lanes stay in view.
        double foldRight = ellipsisRow.right();
        if (s.shareFfn)
            foldRight = ffnX;
        if (s.shareAttention)
            foldRight = attX;
        if (s.shareLayerNorm)
            foldRight = ln1X;
        const QRectF fold(ellipsisRow.left(), ellipsisRow.top(), foldRight - 2 - ellipsisRow.left(), ellipsisRow.height());
        const int hidden = layers - blockRows;
        add(make("ellipsis", kDiagramKeptBlocks, false, fold, foldText(hidden, fold.width()), hidden));
    }
    return items;
}

}  // namespace

double diagramTextBand(const QRectF& box)
{
    if (box.height() < 30)
        return 0;
    if (box.height() < 90)
        return 13;
    // A tall shared module's text wraps: "Attention, shared by all 48 blocks · 8
    // heads" takes three lines in a narrow dock's attention column.
    return box.width() < 150 ? 41 : 28;
}

double diagramSideTextWidth(const QRectF& box) { return std::min(std::max(box.width() * 0.45, 58.0), 70.0); }

QVector<DiagramItem> layoutArchitecture(const ArchitectureSketch& sketch, QSizeF size)
{
    return Builder(sketch, size).run();
}

double minimumDiagramHeight(const ArchitectureSketch& sketch, double width)
{
    return chromeHeight(sketch, width) + stackHeight(visibleRows(std::max(sketch.layers, 0)), smallestRow(sketch));
}

double preferredDiagramHeight(const ArchitectureSketch& sketch, double width)
{
    return chromeHeight(sketch, width) + stackHeight(visibleRows(std::max(sketch.layers, 0)), preferredRow(sketch));
}

QString describeArchitecture(const ArchitectureSketch& s)
{
    const auto where = [](bool shared) { return shared ? QStringLiteral("shared") : QStringLiteral("per block"); };
    QStringList parts;
    parts << QStringLiteral("%1 %2").arg(s.layers).arg(blockWord(s.layers));
    parts << QStringLiteral("attention %1").arg(where(s.shareAttention));
    if (anyMoe(s)) {
        int moeBlocks = 0;
        for (int block = 0; block < s.layers; ++block)
            moeBlocks += moeAt(s, block) ? 1 : 0;
        QString moe = QStringLiteral("MoE %1 experts top-%2 %3").arg(s.experts).arg(s.topK).arg(where(s.shareFfn));
        if (moeBlocks < s.layers)
            moe += QStringLiteral(" in %1 of %2 blocks").arg(moeBlocks).arg(s.layers);
        parts << moe;
    } else {
        parts << QStringLiteral("FFN %1").arg(where(s.shareFfn));
    }
    parts << QStringLiteral("LayerNorm %1").arg(where(s.shareLayerNorm));
    if (isMultiPath(s)) {
        QString paths = QStringLiteral("%1 %2").arg(s.paths).arg(s.paths == 1 ? "path" : "paths");
        if (s.pathNorm)
            paths += QStringLiteral(" with PathNorm");
        paths += s.learnablePathWeights ? QStringLiteral(" and learnable weights") : QStringLiteral(" and fixed weights");
        parts << paths;
    }
    if (s.heads > 0)
        parts << QStringLiteral("%1 %2").arg(s.heads).arg(s.heads == 1 ? "head" : "heads");
    parts << (s.headKind == "translation"      ? QStringLiteral("a decoder of %1 blocks (translation)").arg(s.decoderLayers)
              : s.headKind == "language_model" ? QStringLiteral("language-model head")
              : s.headKind == "masked_lm"      ? QStringLiteral("masked-LM head")
                                               : QStringLiteral("classification head"));
    return parts.join(QStringLiteral(", "));
}

}  // namespace widelab
