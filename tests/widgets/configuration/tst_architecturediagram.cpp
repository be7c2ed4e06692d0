// Tests the architecture diagram's layout (a pure function of the sketch and the
// size) and the widget that paints it.
#include "configuration/ArchitectureDiagram.h"
#include "configuration/ArchitectureLayout.h"
#include "configuration/CostBreakdown.h"

#include <QLabel>
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
            QVERIFY(blocks.size() >= 2 && blocks.size() <= kDiagramMaxBlocks);
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
        // A small widget compresses even six blocks rather than overflow.
        const QVector<DiagramItem> cramped = layoutArchitecture(plain(6, 8), QSizeF(300, 160));
        QCOMPARE(countRole(cramped, "ellipsis"), 1);
        verifyInside(cramped, QSizeF(300, 160));
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
