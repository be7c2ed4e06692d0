// Tests LayerNormView: divergence curves and gamma/beta maps, and rows of unequal length or none.
// Every expected value below is worked out by hand from the constructed data.
#include "InsightTestData.h"

using namespace widelab;
using namespace widelab::insighttest;

class TestLayerNormView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void layerNormCurvesAndMaps();
    void layerNormRowsOfUnequalLengthOrNoneAreDrawnOrExplained();
};

void TestLayerNormView::layerNormCurvesAndMaps()
{
    auto history = std::make_shared<InsightHistory>();
    history->addState(normState(10, 0.0));
    history->addState(normState(20, 10.0));
    history->addState(normState(30, 20.0));
    auto other = std::make_shared<InsightHistory>();
    other->addState(normState(10, 100.0));

    LayerNormView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history},
                    {QStringLiteral("b"), QStringLiteral("Run B"), other});
    view.refresh();

    auto curve = [&view](const QString& run, const QString& series) {
        QVector<QPair<double, double>> out;
        for (const CurvePoint& p : view.divergencePlot()->points(run, series))
            out.push_back({p.step, p.value});
        return out;
    };
    QCOMPARE(view.divergencePlot()->runs(), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
    // Before the FFN, all pairs (the defaults).
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("gamma")), Curve{{10, 0.1}, {20, 10.1}, {30, 20.1}}));
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("beta")), Curve{{10, 0.2}, {20, 10.2}, {30, 20.2}}));
    QVERIFY(sameCurve(curve(QStringLiteral("b"), QStringLiteral("gamma")), Curve{{10, 100.1}}));

    view.setReading(LayerNormView::Reading::Elementwise);
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("gamma")), Curve{{10, 0.3}, {20, 10.3}, {30, 20.3}}));
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("beta")), Curve{{10, 0.4}, {20, 10.4}, {30, 20.4}}));

    view.setPosition(LayerNormView::Position::Attention);
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("gamma")), Curve{{10, 1.3}, {20, 11.3}, {30, 21.3}}));
    view.setReading(LayerNormView::Reading::AllPairs);
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("gamma")), Curve{{10, 1.1}, {20, 11.1}, {30, 21.1}}));
    QVERIFY(sameCurve(curve(QStringLiteral("a"), QStringLiteral("beta")), Curve{{10, 1.2}, {20, 11.2}, {30, 21.2}}));
    QVERIFY(sameCurve(curve(QStringLiteral("b"), QStringLiteral("beta")), Curve{{10, 101.2}}));

    // Maps at the newest step, 30 (f = 0.3), before attention.
    QCOMPARE(view.gammaMap()->matrix().rows, 2);
    QCOMPARE(view.gammaMap()->matrix().cols, 3);
    QVERIFY(sameValues(view.gammaMap()->matrix().values, {2.0f, 1.3f, 1.0f, /**/ 1.0f, 1.0f, 1.0f}));
    QVERIFY(sameValues(view.betaMap()->matrix().values, {0.3f, 0.0f, 0.0f, /**/ 0.0f, 0.0f, 0.5f}));
    // Gamma is centred on 1, beta on 0: those read as the neutral colour.
    QCOMPARE(view.gammaMap()->cellColor(1, 0), QColor(colorscale::diverging(0)));
    QCOMPARE(view.gammaMap()->cellColor(0, 0), QColor(colorscale::diverging(1)));  // 2, the farthest from 1
    QCOMPARE(view.betaMap()->cellColor(0, 1), QColor(colorscale::diverging(0)));

    view.setPosition(LayerNormView::Position::Ffn);
    QVERIFY(sameValues(view.gammaMap()->matrix().values, {1.0f, 1.3f, 0.7f, /**/ 0.5f, 1.5f, 1.6f}));
    QVERIFY(sameValues(view.betaMap()->matrix().values, {0.0f, 0.3f, -0.3f, /**/ 0.25f, -0.25f, 0.0f}));

    // Frozen on step 25: the state of step 20 (f = 0.2); the curves keep the whole run.
    view.setStep(25);
    view.refresh();
    QVERIFY(sameValues(view.gammaMap()->matrix().values, {1.0f, 1.2f, 0.8f, /**/ 0.5f, 1.5f, 1.4f}));
    QVERIFY2(view.gammaMap()->title().contains(QStringLiteral("20")), qPrintable(view.gammaMap()->title()));
    QCOMPARE(view.divergencePlot()->points(QStringLiteral("a"), QStringLiteral("gamma")).size(), 3);

    // Before the first state: nothing to map.
    view.setStep(5);
    view.refresh();
    QVERIFY(view.gammaMap()->matrix().values.isEmpty());
    QVERIFY(!view.gammaMap()->emptyText().isEmpty());

    // CSV: both runs' divergence rows and the shown gamma and beta.
    view.setStep(-1);
    view.refresh();
    const QList<QByteArray> lines = view.csv().split('\n');
    QVERIFY(lines.contains("Run A,20,ffn,divergence_gamma_all_pairs,,,10.1"));
    QVERIFY(lines.contains("Run A,30,ffn,gamma,2,1,0.5"));
    QVERIFY(lines.contains("Run B,10,ffn,divergence_beta_elementwise,,,100.4"));
    // Per run: 4 divergence rows per state + 2 x 6 gamma/beta cells at the newest state.
    QCOMPARE(view.csv().count('\n'), 1 + (3 * 4 + 12) + (1 * 4 + 12));
}

void TestLayerNormView::layerNormRowsOfUnequalLengthOrNoneAreDrawnOrExplained()
{
    auto history = std::make_shared<InsightHistory>();
    TrainingSnapshot ragged = stateAt(10);
    ragged.ffnGamma = {{1.0f, 2.0f, 3.0f}, {1.0f}};
    ragged.ffnBeta = {{0.0f, kNaN, 0.5f}, {kInf}};
    ragged.divergence = {std::numeric_limits<double>::quiet_NaN(), 0.5, 0.25, 0.125};
    history->addState(ragged);
    LayerNormView view;
    view.resize(900, 600);
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.setPosition(LayerNormView::Position::Ffn);
    view.refresh();
    // The widest row sets the columns; the short one is padded with gaps, which no scale takes in.
    const MatrixView::Matrix& gamma = view.gammaMap()->matrix();
    QCOMPARE(gamma.rows, 2);
    QCOMPARE(gamma.cols, 3);
    QVERIFY(std::isnan(gamma.values[4]) && std::isnan(gamma.values[5]));
    QCOMPARE(view.gammaMap()->scaleHighText(), QStringLiteral("3.000"));  // centred on 1: 1 +- 2
    QVERIFY(finiteText(view.betaMap()->scaleLowText()) && finiteText(view.betaMap()->scaleHighText()));
    QVERIFY(!painted(&view).isNull());

    // Rows without channels: explained, not drawn.
    auto hollow = std::make_shared<InsightHistory>();
    TrainingSnapshot none = stateAt(20);
    none.ffnGamma = {{}, {}};
    none.ffnBeta = {{}, {}};
    hollow->addState(none);
    view.setSources({QStringLiteral("h"), QStringLiteral("Run H"), hollow}, {});
    view.refresh();
    QVERIFY2(view.gammaMap()->emptyText().contains(QStringLiteral("without channels")),
             qPrintable(view.gammaMap()->emptyText()));
    QVERIFY(!painted(&view).isNull());
}

int main(int argc, char** argv)
{
    // Runs without a display, also when started by hand rather than by ctest.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestLayerNormView test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_layernormview.moc"
