// Tests the architecture diagram's layout (a pure function of the sketch and the
// size) and the widget that paints it.
#include "configuration/ArchitectureDiagram.h"
#include "configuration/ArchitectureLayout.h"
#include "configuration/CostBreakdown.h"

#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QTableWidget>

#include <QTest>

#include <algorithm>

using namespace widelab;

namespace {

const QSizeF kSize(420, 460);

ArchitectureSketch wideNet()
{
    ArchitectureSketch s;
    s.layers = 6;
    s.shareAttention = true;
    s.shareFfn = true;
    s.shareLayerNorm = false;
    s.experts = 4;
    s.topK = 2;
    s.heads = 8;
    s.headKind = "classification";
    return s;
}

ArchitectureSketch plain(int layers, int heads)
{
    ArchitectureSketch s;
    s.layers = layers;
    s.heads = heads;
    s.headKind = "classification";
    return s;
}

QVector<DiagramItem> withRole(const QVector<DiagramItem>& items, const QString& role)
{
    QVector<DiagramItem> out;
    std::copy_if(items.begin(), items.end(), std::back_inserter(out), [&](const DiagramItem& i) { return i.role == role; });
    return out;
}

int countRole(const QVector<DiagramItem>& items, const QString& role) { return withRole(items, role).size(); }

void verifyInside(const QVector<DiagramItem>& items, QSizeF size)
{
    const QRectF bounds(QPointF(0, 0), size);
    for (const DiagramItem& item : items) {
        const QRectF r = item.rect;
        QVERIFY2(r.left() >= bounds.left() - 0.01 && r.right() <= bounds.right() + 0.01 && r.top() >= bounds.top() - 0.01
                     && r.bottom() <= bounds.bottom() + 0.01,
                 qPrintable(QStringLiteral("%1 of block %2 leaves the widget").arg(item.role).arg(item.block)));
    }
}

// The sketches a dock shows, by name: dense, experts shared or per block, paths,
// everything shared, and a translation model with experts in every other block.
QVector<QPair<QString, ArchitectureSketch>> kinds(int layers)
{
    QVector<QPair<QString, ArchitectureSketch>> out;
    out.append({"dense", plain(layers, 8)});
    ArchitectureSketch shared = wideNet();
    shared.layers = layers;
    out.append({"shared MoE", shared});
    ArchitectureSketch experts = plain(layers, 8);
    experts.experts = 8;
    out.append({"MoE per block", experts});
    ArchitectureSketch paths = plain(layers, 4);
    paths.paths = 3;
    paths.pathNorm = true;
    paths.learnablePathWeights = true;
    out.append({"paths", paths});
    ArchitectureSketch all = shared;
    all.shareLayerNorm = true;
    all.experts = 8;
    out.append({"all shared", all});
    ArchitectureSketch translation = experts;
    translation.headKind = "translation";
    translation.decoderLayers = 6;
    for (int block = 0; block < layers; ++block)
        translation.moeAtBlock.append(block % 2 == 0);
    out.append({"translation", translation});
    return out;
}

// The sizes a dock gives the diagram: cramped (the 720-pixel window's default
// split), roomier, and the size the tests above use.
const QVector<QSizeF> kDockSizes = {QSizeF(360, 120), QSizeF(380, 300), kSize};

// A block row's least height: a line of text in each sublayer, and room for
// experts (28) or three lanes (34) beside it.
double leastRow(const ArchitectureSketch& s)
{
    if (s.paths > 1)
        return 34;
    return s.experts > 1 ? 28 : 24;
}

QString where(const QString& kind, int layers, QSizeF size)
{
    return QStringLiteral("%1, %2 blocks, %3x%4").arg(kind).arg(layers).arg(size.width()).arg(size.height());
}

}  // namespace

class TestArchitectureDiagram : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void wideNetSharesAttentionAndExperts()
    {
        const QVector<DiagramItem> items = layoutArchitecture(wideNet(), kSize);
        const auto attention = withRole(items, "attention");
        QCOMPARE(attention.size(), 1);
        QVERIFY(attention.first().shared);
        QCOMPARE(attention.first().block, -1);
        const auto ffn = withRole(items, "ffn");
        QCOMPARE(ffn.size(), 1);
        QVERIFY(ffn.first().shared);
        QCOMPARE(ffn.first().count, 4);
        QVERIFY(ffn.first().text.contains("top-2"));
        QCOMPARE(countRole(items, "expert"), 4);
        // Individual LayerNorms: two per block, none shared.
        const auto norms = withRole(items, "layernorm");
        QCOMPARE(norms.size(), 12);
        QVERIFY(std::none_of(norms.begin(), norms.end(), [](const DiagramItem& i) { return i.shared; }));
        QCOMPARE(countRole(items, "block"), 6);
        QCOMPARE(countRole(items, "ellipsis"), 0);
        // Every block is linked to the shared modules.
        const auto links = withRole(items, "link");
        for (int block = 0; block < 6; ++block)
            QVERIFY(std::any_of(links.begin(), links.end(), [&](const DiagramItem& i) { return i.block == block; }));
        // The shared attention spans every block's row.
        const auto blocks = withRole(items, "block");
        for (const DiagramItem& b : blocks)
            QVERIFY(attention.first().rect.top() <= b.rect.center().y() && attention.first().rect.bottom() >= b.rect.center().y());
        verifyInside(items, kSize);
    }

    void unsharedBlocksHaveTheirOwnModules()
    {
        const QVector<DiagramItem> items = layoutArchitecture(plain(6, 8), kSize);
        QCOMPARE(countRole(items, "attention"), 6);
        QCOMPARE(countRole(items, "ffn"), 6);
        QCOMPARE(countRole(items, "expert"), 0);
        QCOMPARE(countRole(items, "layernorm"), 12);
        QCOMPARE(countRole(items, "link"), 0);
        const auto attention = withRole(items, "attention");
        QVERIFY(std::none_of(attention.begin(), attention.end(), [](const DiagramItem& i) { return i.shared; }));
        QVERIFY(attention.first().text.contains("8 heads"));
        verifyInside(items, kSize);
    }

    void blocksStackBottomToTop()
    {
        const QVector<DiagramItem> items = layoutArchitecture(plain(6, 8), kSize);
        const auto blocks = withRole(items, "block");
        auto rowOf = [&](int block) {
            return std::find_if(blocks.begin(), blocks.end(), [&](const DiagramItem& i) { return i.block == block; })->rect;
        };
        for (int block = 1; block < 6; ++block)
            QVERIFY(rowOf(block).bottom() <= rowOf(block - 1).top());
        const QRectF head = withRole(items, "head").first().rect;
        const QRectF embedding = withRole(items, "embedding").first().rect;
        QVERIFY(head.bottom() <= rowOf(5).top());
        QVERIFY(embedding.top() >= rowOf(0).bottom());
        QVERIFY(withRole(items, "label").first().text.startsWith("Block"));
    }

    void perBlockExpertsAndSharedLayerNorms()
    {
        ArchitectureSketch s = plain(3, 4);
        s.experts = 8;
        s.topK = 1;
        s.shareLayerNorm = true;
        const QVector<DiagramItem> items = layoutArchitecture(s, kSize);
        QCOMPARE(countRole(items, "expert"), 3 * 8);
        const auto norms = withRole(items, "layernorm");
        QCOMPARE(norms.size(), 2);
        QVERIFY(norms[0].shared && norms[1].shared);
        // MoE only where moeAtBlock says so.
        s.moeAtBlock = {true, false, true};
        const QVector<DiagramItem> alternate = layoutArchitecture(s, kSize);
        QCOMPARE(countRole(alternate, "expert"), 2 * 8);
        QVERIFY(describeArchitecture(s).contains("in 2 of 3 blocks"));
    }

    void manyBlocksAreCompressed()
    {
        for (const int layers : {24, 48}) {
            ArchitectureSketch s = wideNet();
            s.layers = layers;
            const QVector<DiagramItem> items = layoutArchitecture(s, kSize);
            const auto ellipsis = withRole(items, "ellipsis");
            QCOMPARE(ellipsis.size(), 1);
            const auto blocks = withRole(items, "block");
            QCOMPARE(blocks.size(), 2 * kDiagramKeptBlocks);
            QVERIFY(ellipsis.first().text.contains(QString::number(layers - blocks.size())));
            // The first and the last blocks stay.
            QVERIFY(std::any_of(blocks.begin(), blocks.end(), [](const DiagramItem& i) { return i.block == 0; }));
            QVERIFY(std::any_of(blocks.begin(), blocks.end(), [&](const DiagramItem& i) { return i.block == layers - 1; }));
            // Still one shared attention and one shared MoE with its 4 experts.
            QCOMPARE(countRole(items, "attention"), 1);
            QCOMPARE(countRole(items, "expert"), 4);
            verifyInside(items, kSize);
        }
        // Twelve blocks fit without compression when there is room.
        const QVector<DiagramItem> twelve = layoutArchitecture(plain(12, 8), QSizeF(420, 700));
        QCOMPARE(countRole(twelve, "block"), 12);
        QCOMPARE(countRole(twelve, "ellipsis"), 0);
        // A small widget keeps all six blocks, each at its least height, and grows
        // past its height to be scrolled: 2x6 margins, head and embedding 2x24, 3x6
        // gaps, the legend wrapped to two lines of 18, six rows of 24 and five gaps
        // of 4 make 278.
        QCOMPARE(minimumDiagramHeight(plain(6, 8), 300), 278.0);
        const QVector<DiagramItem> cramped = layoutArchitecture(plain(6, 8), QSizeF(300, 160));
        QCOMPARE(countRole(cramped, "block"), 6);
        QCOMPARE(countRole(cramped, "ellipsis"), 0);
        verifyInside(cramped, QSizeF(300, 278));
    }

    // However little room the dock gives it, no block row is squeezed into a
    // line: each keeps the height of a line of text and its experts or lanes.
    void everyBlockKeepsALegibleHeight()
    {
        for (const int layers : {1, 2, 6, 12, 48}) {
            for (const auto& [kind, sketch] : kinds(layers)) {
                for (const QSizeF size : kDockSizes) {
                    const QVector<DiagramItem> items = layoutArchitecture(sketch, size);
                    const auto blocks = withRole(items, "block");
                    QCOMPARE(blocks.size(), layers > 12 ? 6 : layers);
                    for (const DiagramItem& block : blocks)
                        QVERIFY2(block.rect.height() >= leastRow(sketch) && block.rect.height() >= kDiagramMinBlockHeight,
                                 qPrintable(QStringLiteral("%1: block %2 is %3 px tall")
                                                .arg(where(kind, layers, size))
                                                .arg(block.block + 1)
                                                .arg(block.rect.height())));
                    // What does not fit is scrolled: the layout is as tall as it needs.
                    const double least = minimumDiagramHeight(sketch, size.width());
                    verifyInside(items, QSizeF(size.width(), std::max(size.height(), least)));
                }
            }
        }
        // Two dense blocks at 380 px: the margins, head, embedding, gaps and a
        // legend line take 96, the rows 2x24 and a gap of 4, 148 in all.
        QCOMPARE(minimumDiagramHeight(plain(2, 8), 380), 148.0);
        const auto two = withRole(layoutArchitecture(plain(2, 8), QSizeF(380, 120)), "block");
        QCOMPARE(two[0].rect.height(), 24.0);
        // With room, rows grow to their comfortable 36 and no further.
        const auto roomy = withRole(layoutArchitecture(plain(2, 8), QSizeF(380, 600)), "block");
        QCOMPARE(roomy[0].rect.height(), 36.0);
    }

    // No box covers another: rows, the fold, the head, the embedding and the
    // legend stack without overlapping; inside the stack the labels, LayerNorms,
    // sublayers (one per block or shared) and the fold sit side by side; the
    // experts of an MoE sit side by side inside it.
    void boxesNeverOverlap()
    {
        const QStringList outer = {"block", "ellipsis", "head", "embedding", "legend"};
        const QStringList modules = {"label", "layernorm", "attention", "ffn", "ellipsis"};
        auto overlapping = [](const QVector<DiagramItem>& items, const QStringList& roles) {
            QVector<DiagramItem> boxes;
            std::copy_if(items.begin(), items.end(), std::back_inserter(boxes),
                         [&](const DiagramItem& i) { return roles.contains(i.role); });
            for (int a = 0; a < boxes.size(); ++a)
                for (int b = a + 1; b < boxes.size(); ++b)
                    if (boxes[a].rect.intersects(boxes[b].rect))
                        return QStringLiteral("%1 of block %2 and %3 of block %4")
                            .arg(boxes[a].role).arg(boxes[a].block).arg(boxes[b].role).arg(boxes[b].block);
            return QString();
        };
        for (const int layers : {1, 2, 6, 12, 48}) {
            for (const auto& [kind, sketch] : kinds(layers)) {
                for (const QSizeF size : kDockSizes) {
                    const QVector<DiagramItem> items = layoutArchitecture(sketch, size);
                    const QString context = where(kind, layers, size);
                    QString clash = overlapping(items, outer);
                    QVERIFY2(clash.isEmpty(), qPrintable(context + ": " + clash));
                    clash = overlapping(items, modules);
                    QVERIFY2(clash.isEmpty(), qPrintable(context + ": " + clash));
                    clash = overlapping(items, {"expert"});
                    QVERIFY2(clash.isEmpty(), qPrintable(context + ": " + clash));
                    const auto ffn = withRole(items, "ffn");
                    for (const DiagramItem& expert : withRole(items, "expert"))
                        QVERIFY2(std::any_of(ffn.begin(), ffn.end(), [&](const DiagramItem& f) {
                                     return f.block == expert.block && f.rect.contains(expert.rect);
                                 }),
                                 qPrintable(context + ": an expert outside its MoE"));
                }
            }
        }
    }

    // The fold of a deep model leaves out its middle blocks, never a box: shared
    // modules span it, with their experts, and its words fit what is left of the
    // row.
    void foldCoversNoBox()
    {
        for (const auto& [kind, sketch] : kinds(48)) {
            for (const QSizeF size : kDockSizes) {
                const QVector<DiagramItem> items = layoutArchitecture(sketch, size);
                const auto folds = withRole(items, "ellipsis");
                QCOMPARE(folds.size(), 1);
                const DiagramItem fold = folds.first();
                QCOMPARE(fold.block, 3);   // blocks 4 ...
                QCOMPARE(fold.count, 42);  // ... to 45 are left out
                for (const DiagramItem& item : items)
                    if (item.role != "ellipsis" && item.rect.height() > 0)
                        QVERIFY2(!fold.rect.intersects(item.rect),
                                 qPrintable(QStringLiteral("%1: the fold covers %2 of block %3")
                                                .arg(where(kind, sketch.layers, size), item.role)
                                                .arg(item.block)));
            }
        }
        // Nothing shared: the whole row says it. Everything shared at 380 px: the
        // label column is left, 60 - 2 wide, and "42 more" (7 x 6 + 16) fits it.
        QCOMPARE(withRole(layoutArchitecture(plain(48, 8), QSizeF(380, 300)), "ellipsis").first().text,
                 QStringLiteral("… 42 more blocks …"));
        const DiagramItem narrow = withRole(layoutArchitecture(kinds(48)[4].second, QSizeF(380, 300)), "ellipsis").first();
        QCOMPARE(narrow.rect.width(), 58.0);
        QCOMPARE(narrow.text, QStringLiteral("42 more"));
    }

    // A translation model's decoder is described in two lines where one would be
    // cut, and the blocks move down to make room.
    void translationHeadWrapsInANarrowDock()
    {
        const ArchitectureSketch translation = kinds(6)[5].second;
        const QVector<DiagramItem> items = layoutArchitecture(translation, QSizeF(380, 300));
        const QRectF head = withRole(items, "head").first().rect;
        QCOMPARE(head.height(), 36.0);
        for (const DiagramItem& block : withRole(items, "block"))
            QVERIFY(block.rect.top() >= head.bottom());
        QCOMPARE(withRole(layoutArchitecture(plain(6, 8), QSizeF(380, 300)), "head").first().rect.height(), 24.0);
    }

    void wideAttentionShowsItsHeads()
    {
        const QVector<DiagramItem> items = layoutArchitecture(plain(1, 48), kSize);
        QCOMPARE(countRole(items, "block"), 1);
        const auto heads = withRole(items, "heads");
        QCOMPARE(heads.size(), 1);
        QCOMPARE(heads.first().count, 48);
        QVERIFY(withRole(items, "attention").first().text.contains("48 heads"));
    }

    void multiPathShowsLanes()
    {
        ArchitectureSketch s = plain(3, 4);
        s.paths = 3;
        s.pathNorm = true;
        s.learnablePathWeights = true;
        const QVector<DiagramItem> items = layoutArchitecture(s, kSize);
        QCOMPARE(countRole(items, "path"), 3 * 2 * 3);      // paths x sublayers x blocks
        QCOMPARE(countRole(items, "pathnorm"), 3 * 2 * 3);
        const auto sums = withRole(items, "combine");
        QCOMPARE(sums.size(), 2 * 3);
        QCOMPARE(sums.first().text, QStringLiteral("Σα"));
        QVERIFY(withRole(items, "legend")[2].text.contains("3 parallel paths"));
        // Lanes lie inside their sublayer.
        const auto attention = withRole(items, "attention");
        for (const DiagramItem& lane : withRole(items, "path")) {
            const bool inside = std::any_of(attention.begin(), attention.end(), [&](const DiagramItem& a) {
                return a.block == lane.block && a.rect.contains(lane.rect);
            }) || std::any_of(items.begin(), items.end(), [&](const DiagramItem& f) {
                return f.role == "ffn" && f.block == lane.block && f.rect.contains(lane.rect);
            });
            QVERIFY(inside);
        }
        const QStringList legend = [&] {
            QStringList texts;
            for (const DiagramItem& i : withRole(items, "legend"))
                texts << i.swatch;
            return texts;
        }();
        QCOMPARE(legend, (QStringList{"individual", "shared", "path", "pathnorm", "combine"}));
        verifyInside(items, kSize);
        // Fixed weights: a plain sum, no PathNorm marks.
        s.pathNorm = false;
        s.learnablePathWeights = false;
        const QVector<DiagramItem> fixed = layoutArchitecture(s, kSize);
        QCOMPARE(countRole(fixed, "pathnorm"), 0);
        QCOMPARE(withRole(fixed, "combine").first().text, QStringLiteral("Σ"));
    }

    // The embedding box names what enters the model: tokens, or an image's patches.
    void embeddingNamesTheInput()
    {
        ArchitectureSketch s = plain(2, 8);
        QCOMPARE(withRole(layoutArchitecture(s, kSize), "embedding").first().text,
                 QStringLiteral("Token + position embedding"));
        s.imageInput = true;
        QCOMPARE(withRole(layoutArchitecture(s, kSize), "embedding").first().text,
                 QStringLiteral("Patch + position embedding"));
    }

    void description()
    {
        QCOMPARE(describeArchitecture(wideNet()),
                 QStringLiteral("6 blocks, attention shared, MoE 4 experts top-2 shared, LayerNorm per block, "
                                "8 heads, classification head"));
        ArchitectureSketch s = plain(1, 48);
        s.headKind = "language_model";
        QCOMPARE(describeArchitecture(s), QStringLiteral("1 block, attention per block, FFN per block, "
                                                         "LayerNorm per block, 48 heads, language-model head"));
        // A translation model: its encoder's blocks, and the decoder named with its depth.
        ArchitectureSketch translation = plain(3, 4);
        translation.headKind = "translation";
        translation.decoderLayers = 2;
        QCOMPARE(describeArchitecture(translation), QStringLiteral("3 blocks, attention per block, FFN per block, "
                                                                   "LayerNorm per block, 4 heads, a decoder of 2 "
                                                                   "blocks (translation)"));
        QCOMPARE(withRole(layoutArchitecture(translation, kSize), "head").first().text,
                 QStringLiteral("Final LN → decoder of 2 blocks (self-, cross-attention, FFN) → tied output"));
    }

    void widgetPaintsItsLayout()
    {
        ArchitectureDiagram diagram;
        diagram.resize(kSize.toSize());
        diagram.setSketch(wideNet());
        QCOMPARE(diagram.accessibleDescription(), describeArchitecture(wideNet()));
        QCOMPARE(diagram.items().size(), layoutArchitecture(wideNet(), kSize).size());
        QVERIFY(diagram.heightForWidth(420) > 200);
        const QImage image = diagram.grab().toImage();
        QVERIFY(!image.isNull());
        // The shared attention is painted in the shared colour somewhere inside its box.
        const QRectF box = withRole(diagram.items(), "attention").first().rect;
        const QColor border = image.pixelColor(QPoint(int(box.left()) + 1, int(box.center().y())));
        QVERIFY2(border.red() > border.blue(), qPrintable(border.name()));  // orange, not blue
    }

    // In a scroll area (as the configuration panel holds it) a deep model's
    // diagram grows past the viewport and scrolls; a shallow one fills it.
    void diagramScrollsInsteadOfSqueezing()
    {
        QScrollArea area;
        area.setWidgetResizable(true);
        area.setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        area.setFrameShape(QFrame::NoFrame);
        auto* diagram = new ArchitectureDiagram;
        ArchitectureSketch twelve = wideNet();
        twelve.layers = 12;
        diagram->setSketch(twelve);
        area.setWidget(diagram);
        area.resize(380, 300);
        area.show();
        QVERIFY(QTest::qWaitForWindowExposed(&area));
        // 12 rows of 28 and 11 gaps of 4 above 96 of head, embedding and legend.
        QCOMPARE(diagram->height(), 476);
        QVERIFY(area.verticalScrollBar()->isVisible());
        for (const DiagramItem& block : withRole(diagram->items(), "block"))
            QCOMPARE(block.rect.height(), 28.0);
        ArchitectureSketch one = wideNet();
        one.layers = 1;
        diagram->setSketch(one);
        QTRY_VERIFY(!area.verticalScrollBar()->isVisible());
        QCOMPARE(diagram->height(), 300);
    }

    // The breakdown beside the diagram: the parts with parameters, then the total,
    // as `widelab-cli params` prints them; stale when the form is invalid.
    void costBreakdownListsThePartsAndSaysWhenStale()
    {
        QLocale::setDefault(QLocale(QLocale::English, QLocale::UnitedStates));  // digits grouped with commas
        CostBreakdown breakdown;
        QLabel* note = breakdown.findChild<QLabel*>();
        QVERIFY(note != nullptr);
        QCOMPARE(breakdown.table()->rowCount(), 0);
        QVERIFY(!note->isHidden());  // "not computed yet"

        const QList<CostPart> parts = {{QStringLiteral("attention"), 1000, 1000, 6000, 3.0e6},
                                       {QStringLiteral("experts"), 4000, 2000, 12000, 1.0e6},
                                       {QStringLiteral("path weights"), 0, 0, 0, 0.0}};
        const CostPart total{QStringLiteral("total"), 5000, 3000, 18000, 4.0e6};
        breakdown.setParts(parts, total);
        QCOMPARE(breakdown.table()->rowCount(), 3);  // the part without parameters is left out
        QVERIFY(note->isHidden());
        const QStringList lines = breakdown.toTsv().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 4);
        QCOMPARE(lines[1], QStringLiteral("attention\t1,000\t1,000\t6,000\t3M\t75.0%"));
        QCOMPARE(lines[2], QStringLiteral("experts\t4,000\t2,000\t12,000\t1M\t25.0%"));
        QCOMPARE(lines[3], QStringLiteral("total\t5,000\t3,000\t18,000\t4M\t100.0%"));

        breakdown.setStale(true);
        QVERIFY(!note->isHidden());
        QVERIFY(note->text().contains(QStringLiteral("last valid")));
        QVERIFY(!breakdown.table()->isEnabled());
        breakdown.setStale(false);
        QVERIFY(note->isHidden());
        QVERIFY(breakdown.table()->isEnabled());
    }
};

QTEST_MAIN(TestArchitectureDiagram)
#include "tst_architecturediagram.moc"
