// Tests TranslationView: a translation run's probe, its translation at the shown
// step and every one before it, the decoder's cross-attention (each head, the
// mean over heads) labelled by what each position writes, the compared run,
// runs that do not translate, damaged maps, the CSV, and its tab in the insights.
// Every expected value below is worked out by hand from the constructed data.
#include "InsightTestData.h"

#include "insights/TranslationView.h"

#include <QListWidget>
#include <QTabWidget>

using namespace widelab;
using namespace widelab::insighttest;

namespace {

const QString kText = QStringLiteral("God created");

ArchitectureSketch translationSketch()
{
    ArchitectureSketch sketch;
    sketch.layers = 1;
    sketch.heads = 2;
    sketch.headKind = QStringLiteral("translation");
    sketch.decoderLayers = 1;
    return sketch;
}

// "God created" -> `translation` (its decoder reads <s> and the words), one
// decoder block of two heads: head 1 looks at the source word it writes from,
// head 2 the other way round; the end token follows the last word.
ProbeResult translated(qint64 step, const std::vector<std::string>& words)
{
    ProbeResult p;
    p.step = step;
    p.text = kText.toStdString();
    p.tokens = {"God", "created"};
    p.targetTokens = {"<s>"};
    p.targetTokens.insert(p.targetTokens.end(), words.begin(), words.end());
    for (const std::string& word : words)
        p.translation += (p.translation.empty() ? "" : " ") + word;
    p.prediction = {0.875f, 0.125f};
    p.predictionLabels = {"</s>", "x"};
    std::vector<std::vector<float>> first, second;
    for (std::size_t t = 0; t < p.targetTokens.size(); ++t) {
        const bool left = t % 2 == 0;
        first.push_back(left ? std::vector<float>{1.0f, 0.0f} : std::vector<float>{0.0f, 1.0f});
        second.push_back(t == 0 ? std::vector<float>{0.5f, 0.5f} : std::vector<float>{0.25f, 0.75f});
    }
    p.crossAttention = {{first, second}};
    return p;
}

// A translation run's history holding `captures`.
std::shared_ptr<InsightHistory> translationHistory(const std::vector<ProbeResult>& captures)
{
    auto history = std::make_shared<InsightHistory>();
    history->setArchitecture(translationSketch());
    for (const ProbeResult& capture : captures)
        history->addCapture(capture);
    return history;
}

QStringList itemTexts(const QListWidget* list)
{
    QStringList texts;
    for (int i = 0; i < list->count(); ++i)
        texts << list->item(i)->text();
    return texts;
}

}  // namespace

class TestTranslationView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void eachRowIsWhatTheDecoderWrites();
    void theTranslationImprovesStepByStep();
    void crossAttentionOfAHeadOrTheMean();
    void aRunThatDoesNotTranslateSaysSo();
    void aDamagedMapIsNotDrawn();
    void csvHoldsEveryHeadsWeights();
    void theInsightsBarHasATranslationTab();
};

void TestTranslationView::eachRowIsWhatTheDecoderWrites()
{
    const ProbeResult p = translated(20, {"Dios", "creó"});
    // Position 0 reads <s> and writes "Dios"; the last reads "creó" and writes the end.
    QCOMPARE(TranslationView::writtenTokens(p),
             (QStringList{QStringLiteral("Dios"), QStringLiteral("creó"), QStringLiteral("</s>")}));
    ProbeResult nothing;  // not a translation model's probe
    QVERIFY(TranslationView::writtenTokens(nothing).isEmpty());
}

void TestTranslationView::theTranslationImprovesStepByStep()
{
    const auto history = translationHistory({translated(10, {"el"}), translated(20, {"Dios", "el"}),
                                             translated(30, {"Dios", "creó"})});
    const auto other = translationHistory({translated(20, {"creó"})});

    TranslationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {QStringLiteral("b"), QStringLiteral("Run B"), other});
    view.show();
    view.refresh();
    QCOMPARE(view.translation()->text(), QStringLiteral("Dios creó"));  // live: the newest
    QCOMPARE(itemTexts(view.history()), (QStringList{QStringLiteral("step 10 · el"), QStringLiteral("step 20 · Dios el"),
                                                     QStringLiteral("step 30 · Dios creó")}));
    QVERIFY(view.history()->item(2)->font().bold());  // the shown step's
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("Run B at step 20: creó")) != nullptr);

    // Replayed at step 25: what the run had by then, the compared run's at its step.
    view.setStep(25);
    view.refresh();
    QCOMPARE(view.translation()->text(), QStringLiteral("Dios el"));
    QCOMPARE(view.history()->count(), 2);
    QVERIFY(view.history()->item(1)->font().bold());
    QVERIFY(!view.history()->item(0)->font().bold());
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("Source (step 20): God created")) != nullptr);
}

void TestTranslationView::crossAttentionOfAHeadOrTheMean()
{
    const auto history = translationHistory({translated(30, {"Dios", "creó"})});
    TranslationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    // The mean over the two heads (the default): rows <s>, Dios, creó.
    const MatrixView::Matrix& mean = view.map()->matrix();
    QCOMPARE(mean.rows, 3);
    QCOMPARE(mean.cols, 2);
    QCOMPARE(mean.rowLabels, (QStringList{QStringLiteral("Dios"), QStringLiteral("creó"), QStringLiteral("</s>")}));
    QCOMPARE(mean.columnLabels, (QStringList{QStringLiteral("God"), QStringLiteral("created")}));
    QVERIFY(sameValues(mean.values, {0.75f, 0.25f, 0.125f, 0.875f, 0.625f, 0.375f}));
    QCOMPARE(comboTexts(view.headBox()), (QStringList{QStringLiteral("mean over heads"), QStringLiteral("head 1"),
                                                      QStringLiteral("head 2")}));
    QCOMPARE(comboTexts(view.blockBox()), QStringList{QStringLiteral("1")});
    view.setHead(0);
    QVERIFY(sameValues(view.map()->matrix().values, {1, 0, 0, 1, 1, 0}));
    QCOMPARE(view.map()->title(), QStringLiteral("Decoder block 1 · head 1"));
    view.setHead(1);
    QVERIFY(sameValues(view.map()->matrix().values, {0.5f, 0.5f, 0.25f, 0.75f, 0.25f, 0.75f}));
    QVERIFY(TranslationView::crossMap(translated(30, {"Dios"}), 1, 0).isEmpty());   // no second block
    QVERIFY(TranslationView::crossMap(translated(30, {"Dios"}), 0, 2).isEmpty());   // no third head
}

void TestTranslationView::aRunThatDoesNotTranslateSaysSo()
{
    auto history = std::make_shared<InsightHistory>();
    ArchitectureSketch lm = translationSketch();
    lm.headKind = QStringLiteral("language_model");
    history->setArchitecture(lm);
    history->addCapture(captureOf(10, kText, {QStringLiteral("God"), QStringLiteral("created")}));
    TranslationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.show();
    view.refresh();
    QVERIFY(!view.exportArea()->isVisible());
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("not a translation model")) != nullptr);

    // A translation run before its first probe.
    const auto fresh = translationHistory({});
    view.setSources({QStringLiteral("f"), QStringLiteral("Fresh"), fresh}, {});
    view.refresh();
    QVERIFY(visibleLabelContaining(&view, QStringLiteral("No probe yet")) != nullptr);
}

void TestTranslationView::aDamagedMapIsNotDrawn()
{
    ProbeResult damaged = translated(10, {"Dios", "creó"});
    damaged.crossAttention[0][1].pop_back();  // head 2: a row short
    const auto history = translationHistory({damaged});
    TranslationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.show();
    view.refresh();
    QCOMPARE(view.map()->matrix().rows, 0);  // the mean needs every head
    QVERIFY(view.map()->emptyText().contains(QStringLiteral("cannot be drawn")));
    view.setHead(0);  // head 1 is whole
    QCOMPARE(view.map()->matrix().rows, 3);
    painted(&view);

    ProbeResult old = translated(10, {"Dios"});  // recorded before cross-attention was
    old.crossAttention.clear();
    const auto before = translationHistory({old});
    view.setSources({QStringLiteral("o"), QStringLiteral("Old"), before}, {});
    view.refresh();
    QCOMPARE(view.translation()->text(), QStringLiteral("Dios"));
    QVERIFY(view.map()->emptyText().contains(QStringLiteral("without the decoder's cross-attention")));
}

void TestTranslationView::csvHoldsEveryHeadsWeights()
{
    const auto history = translationHistory({translated(30, {"Dios", "creó"})});
    TranslationView view;
    view.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history}, {});
    view.refresh();
    const QList<QByteArray> lines = view.csv().split('\n');
    QCOMPARE(lines.front(), QByteArray("run,step,translation,block,head,target_position,writing,source_position,"
                                       "source_token,weight"));
    QCOMPARE(view.csv().count('\n'), 1 + 2 * 3 * 2);  // 2 heads x 3 positions x 2 source tokens
    QVERIFY(lines.contains(QByteArray("Run A,30,Dios creó,1,2,2,creó,2,created,0.75")));
    QVERIFY(lines.contains(QByteArray("Run A,30,Dios creó,1,1,3,</s>,1,God,1")));
    QCOMPARE(view.exportTitle(), QStringLiteral("translation Run A"));
}

void TestTranslationView::theInsightsBarHasATranslationTab()
{
    const auto history = translationHistory({translated(10, {"el"})});
    InsightsView insights;
    insights.addRun(QStringLiteral("a"), QStringLiteral("Run A"), history);
    insights.show();
    auto* page = showInsightsTab<TranslationView>(insights, QStringLiteral("Translation"));
    QVERIFY(page != nullptr);
    QCOMPARE(page->translation()->text(), QStringLiteral("el"));
    // The next probe reaches the page live.
    history->addCapture(translated(20, {"Dios", "creó"}));
    insights.historyChanged(QStringLiteral("a"));
    insights.refreshNow();
    QCOMPARE(page->translation()->text(), QStringLiteral("Dios creó"));
    QCOMPARE(page->history()->count(), 2);
}

QTEST_MAIN(TestTranslationView)
#include "tst_translationview.moc"
