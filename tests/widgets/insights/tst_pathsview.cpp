// Tests PathsView: path weights over time and their diversity, a model of one path, damaged numbers, and the configuration it follows.
// Every expected value below is worked out by hand from the constructed data.
#include "InsightTestData.h"

using namespace widelab;
using namespace widelab::insighttest;

class TestPathsView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void pathsCurvesAndDiversity();
    void pathsWithoutPathWeightsShowsTheOnePathMessage();
    void pathsWithDamagedNumbersStayInBounds();
    void pathsFollowTheConfigurationAndNameAShippedPreset();
    void translationModelsShowTheEncoderAgainstTheDecoder();
};

void TestPathsView::pathsCurvesAndDiversity()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(pathState(10, 0.0f));
    history->addState(pathState(20, 1.0f));
    PathsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QVERIFY(view.exportArea()->isVisibleTo(&view));
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("one path")), nullptr);

    auto curve = [](const CurvePlot* plot, const QString& run, const QString& series) {
        QVector<QPair<double, double>> out;
        for (const CurvePoint& p : plot->points(run, series))
            out.push_back({p.step, p.value});
        return out;
    };

    // Block 1's attention (the defaults): one run per path, its weight ("alpha")
    // and that of the extra feature leaving it out ("feature", alpha[paths + k]).
    const QStringList paths{QStringLiteral("path 1"), QStringLiteral("path 2")};
    QCOMPARE(view.alphaPlot()->runs(), paths);
    const QString alpha = QStringLiteral("alpha"), feature = QStringLiteral("feature");
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[0], alpha), Curve{{10, 0.5}, {20, 1.5}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[1], alpha), Curve{{10, 0.25}, {20, 0.25}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[0], feature), Curve{{10, 0.125}, {20, 0.125}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[1], feature), Curve{{10, 0.0625}, {20, 0.0625}}));
    QCOMPARE(view.alphaPlot()->seriesPenStyle(paths[0], alpha), Qt::SolidLine);
    QCOMPARE(view.alphaPlot()->seriesPenStyle(paths[0], feature), Qt::DashLine);
    QCOMPARE(view.alphaPlot()->seriesColor(paths[1], alpha), view.alphaPlot()->seriesColor(paths[1], feature));

    // Block 2's FFN.
    view.setBlock(1);
    view.setSublayer(QStringLiteral("ffn"));
    QCOMPARE(view.alphaPlot()->runs(), paths);
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[0], alpha), Curve{{10, 7}, {20, 7}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[0], feature), Curve{{10, 9}, {20, 10}}));
    QVERIFY(sameCurve(curve(view.alphaPlot(), paths[1], feature), Curve{{10, 10}, {20, 10}}));

    // Beta: one run per sublayer (2 blocks x attention, FFN), each with its own values.
    QCOMPARE(view.betaPlot()->runs().size(), 4);
    QSet<QString> seen;
    const QVector<Curve> betas{{{10, 1}, {20, 2}}, {{10, 2}, {20, 3}}, {{10, 3}, {20, 4}}, {{10, 4}, {20, 5}}};
    for (const QString& run : view.betaPlot()->runs()) {
        const Curve c = curve(view.betaPlot(), run, QStringLiteral("beta"));
        QVERIFY2(betas.contains(c), qPrintable(run));
        seen.insert(QString::number(c.front().second));
    }
    QCOMPARE(seen.size(), 4);

    // Diversity against depth at the newest step (20): attention 1.5, 3.5; FFN 2.5, 4.5.
    QCustomPlot* plot = view.diversityPlot();
    QCOMPARE(plot->graphCount(), 2);
    QCOMPARE(plot->graph(0)->name(), QStringLiteral("attention"));  // the shown run is named in the bar above
    QCOMPARE(plot->graph(1)->name(), QStringLiteral("FFN"));
    auto graphData = [](QCPGraph* graph) {
        QVector<QPair<double, double>> out;
        for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
            out.push_back({it->key, it->value});
        return out;
    };
    QVERIFY(sameCurve(graphData(plot->graph(0)), Curve{{1, 1.5}, {2, 3.5}}));
    QVERIFY(sameCurve(graphData(plot->graph(1)), Curve{{1, 2.5}, {2, 4.5}}));
    // Its legend sits under the plot, never over a point (twice refreshed: still one legend row).
    view.refresh();
    plot->resize(420, 260);
    plot->replot();
    QVERIFY(plot->legend->visible());
    QVERIFY(!plot->legend->outerRect().intersects(plot->axisRect()->rect()));
    QVERIFY(plot->legend->outerRect().top() >= plot->axisRect()->outerRect().bottom());

    // Frozen on step 10: that state's diversity.
    view.setStep(10);
    view.refresh();
    QCOMPARE(plot->graphCount(), 2);
    QVERIFY(sameCurve(graphData(plot->graph(0)), Curve{{1, 0.5}, {2, 2.5}}));
    QVERIFY(sameCurve(graphData(plot->graph(1)), Curve{{1, 1.5}, {2, 3.5}}));

    // CSV: per state and sublayer, 4 alpha rows, beta and diversity.
    const QList<QByteArray> lines = view.csv().split('\n');
    QVERIFY(lines.contains("Run A,20,1,attention,alpha path 1,1.5"));
    QVERIFY(lines.contains("Run A,10,2,ffn,alpha mean without path 1,9"));
    QVERIFY(lines.contains("Run A,20,2,attention,beta,4"));
    QCOMPARE(view.csv().count('\n'), 1 + 2 * 4 * 6);
}

void TestPathsView::pathsWithoutPathWeightsShowsTheOnePathMessage()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(stateAt(10));
    PathsView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QVERIFY(!view.exportArea()->isVisibleTo(&view));
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("one path")) != nullptr);
}

void TestPathsView::pathsWithDamagedNumbersStayInBounds()
{
    auto history = std::make_shared<InsightHistory>();
    TrainingSnapshot state = stateAt(10);
    PathWeights huge;  // a block number no model has, and infinite diversity
    huge.block = 1000000;
    huge.sublayer = "ffn";
    huge.paths = 2;
    huge.alpha = {0.5f, 0.5f, 0.25f, 0.25f};
    huge.diversity = std::numeric_limits<double>::infinity();
    PathWeights fine;  // more weights than 2 x paths
    fine.block = 0;
    fine.sublayer = "attention";
    fine.paths = 2;
    fine.alpha = {0.5f, 0.5f, 0.125f, 0.125f, 7.0f};
    fine.diversity = 0.5;
    PathWeights unknown = fine;
    unknown.sublayer = "ffn";
    unknown.diversity = std::numeric_limits<double>::quiet_NaN();
    state.paths = {huge, fine, unknown};
    history->addState(state);
    PathsView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    // Only block 1 is offered; the weights past 2 x paths are not drawn.
    QComboBox* blocks = nullptr;
    for (QComboBox* combo : view.findChildren<QComboBox*>())
        if (combo->accessibleName() == QStringLiteral("Block"))
            blocks = combo;
    QVERIFY(blocks != nullptr);
    QCOMPARE(blocks->count(), 1);
    QCOMPARE(view.alphaPlot()->runs(), (QStringList{QStringLiteral("path 1"), QStringLiteral("path 2")}));
    QCOMPARE(view.alphaPlot()->points(QStringLiteral("path 1"), QStringLiteral("feature")).size(), qsizetype{1});
    // Diversity: the finite 0.5 sets the range, not infinity or NaN.
    const QCPRange range = view.diversityPlot()->yAxis->range();
    QVERIFY(std::isfinite(range.upper));
    QVERIFY2(std::abs(range.upper - 0.5 * 1.15) < 1e-9, qPrintable(QString::number(range.upper)));
    QVERIFY(!painted(&view).isNull());
}

void TestPathsView::pathsFollowTheConfigurationAndNameAShippedPreset()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(pathState(10, 0.0f));
    history->addState(stateAt(20));  // a stop between log steps: no path weights
    history->setArchitecture(sketchWith(1, 4));
    PathsView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    QVERIFY(view.exportArea()->isVisibleTo(&view));
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("one path")), nullptr);

    // A one-path model: the message names a preset that has path weights, and it ships.
    auto onePath = std::make_shared<InsightHistory>();
    onePath->addState(stateAt(10));
    onePath->setArchitecture(sketchWith(1, 1));
    view.setSources({QStringLiteral("b"), QStringLiteral("Run B"), onePath}, {});
    view.refresh();
    QLabel* message = visibleLabelContaining(&view, QStringLiteral("one path"));
    QVERIFY(message);
    const QRegularExpressionMatch named = QRegularExpression(QStringLiteral("e\\.g\\. ([a-z0-9-]+)")).match(message->text());
    QVERIFY2(named.hasMatch(), qPrintable(message->text()));
    const QString preset = QStringLiteral(WIDELAB_PRESETS_DIR "/") + named.captured(1) + QStringLiteral(".json");
    QVERIFY2(QFile::exists(preset), qPrintable(preset));
    QFile file(preset);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY2(file.readAll().contains("\"paths\""), qPrintable(preset));

    // A multi-path model before its first snapshot: not called one-path.
    auto fresh = std::make_shared<InsightHistory>();
    fresh->setArchitecture(sketchWith(1, 3));
    view.setSources({QStringLiteral("c"), QStringLiteral("Run C"), fresh}, {});
    view.refresh();
    QCOMPARE(visibleLabelContaining(&view, QStringLiteral("one path")), nullptr);
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("No measurement yet")) != nullptr);
}

void TestPathsView::translationModelsShowTheEncoderAgainstTheDecoder()
{
    // One encoder block, then one decoder block (numbered on from it: block 1)
    // with cross-attention between its self-attention and its FFN.
    TrainingSnapshot state = stateAt(10);
    state.paths = {pathWeights(0, "attention", {0.5f, 0.5f}, 1.0f, 0.25),
                   pathWeights(0, "ffn", {0.5f, 0.5f}, 1.0f, 0.5),
                   pathWeights(1, "attention", {0.5f, 0.5f}, 1.0f, 0.75),
                   pathWeights(1, "cross_attention", {0.75f, 0.25f}, 1.5f, 1.25),
                   pathWeights(1, "ffn", {0.5f, 0.5f}, 1.0f, 1.0)};
    auto history = std::make_shared<InsightHistory>();
    ArchitectureSketch sketch = sketchWith(1, 2);
    sketch.layers = 1;
    sketch.headKind = QStringLiteral("translation");
    sketch.decoderLayers = 1;
    sketch.decoderPaths = 2;
    history->setArchitecture(sketch);
    history->addState(state);
    PathsView view;
    view.setSources({QStringLiteral("mt"), QStringLiteral("Bible"), history}, {});
    view.refresh();
    QList<QComboBox*> combos = view.findChildren<QComboBox*>();
    QComboBox* blocks = nullptr;
    QComboBox* sublayers = nullptr;
    for (QComboBox* combo : combos)
        (combo->accessibleName() == QLatin1String("Block") ? blocks : sublayers) = combo;
    QCOMPARE(comboTexts(blocks), (QStringList{QStringLiteral("E1"), QStringLiteral("D1")}));
    QCOMPARE(comboTexts(sublayers), (QStringList{QStringLiteral("attention"), QStringLiteral("FFN")}));

    view.setBlock(1);
    QCOMPARE(comboTexts(sublayers),
             (QStringList{QStringLiteral("attention"), QStringLiteral("cross-attention"), QStringLiteral("FFN")}));
    view.setSublayer(QStringLiteral("cross_attention"));
    QVERIFY2(view.alphaPlot()->title().startsWith(QStringLiteral("α of decoder block 1's cross-attention paths")),
             qPrintable(view.alphaPlot()->title()));
    QCOMPARE(view.alphaPlot()->points(QStringLiteral("path 1"), QStringLiteral("alpha")).front().value, 0.75);
    QCOMPARE(view.betaPlot()->runs().size(), 5);

    // Diversity against depth: E1 then D1, cross-attention only where there is one.
    QCustomPlot* plot = view.diversityPlot();
    QCOMPARE(plot->graphCount(), 3);
    QCOMPARE(plot->graph(1)->name(), QStringLiteral("cross-attention"));
    QCOMPARE(plot->graph(1)->data()->size(), 1);
    QCOMPARE(plot->graph(1)->data()->constBegin()->key, 2.0);
    QCOMPARE(plot->graph(1)->data()->constBegin()->value, 1.25);
    QCOMPARE(plot->graph(0)->data()->size(), 2);  // self-attention on both sides
    QCOMPARE(plot->xAxis->label(), QStringLiteral("block (E: encoder, D: decoder)"));

    // Back to the encoder: it has no cross-attention, so its FFN or attention is shown.
    view.setBlock(0);
    QCOMPARE(comboTexts(sublayers), (QStringList{QStringLiteral("attention"), QStringLiteral("FFN")}));
    QVERIFY(view.alphaPlot()->title().startsWith(QStringLiteral("α of encoder block 1's")));
}

int main(int argc, char** argv)
{
    // Runs without a display, also when started by hand rather than by ctest.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestPathsView test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_pathsview.moc"
