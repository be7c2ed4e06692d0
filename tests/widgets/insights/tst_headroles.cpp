// Tests the head roles page (HeadRoleGrid, HeadRolesView) and the logit lens
// page (LensMap, LogitLensView) with hand-built histories: cell colours by the
// dominant role, legibility at 48 heads, path-major heads, scrubbing, the
// comparison run, the role-over-training plot, argmax and true-class marks, CSV.
// Every expected value below is worked out by hand from the constructed data.
#include "insights/HeadRolesView.h"
#include "insights/InsightHistory.h"
#include "insights/LogitLensView.h"
#include "common/Palette.h"

#include <QApplication>
#include <QLabel>
#include <QSignalSpy>
#include <QTest>

#include <qcustomplot.h>

#include <cmath>
#include <memory>

using namespace widelab;

namespace {

const QStringList kRoles{QStringLiteral("previous token"), QStringLiteral("next token"),
                         QStringLiteral("first token"),    QStringLiteral("self"),
                         QStringLiteral("local"),          QStringLiteral("broad")};

// layers x heads, every head scoring `fill` in every role, dominant role 5 ("broad").
HeadRoleScores uniformHeads(int layers, int heads, double fill = 0.25)
{
    HeadRoleScores s;
    for (const QString& role : kRoles)
        s.roles.push_back(role.toStdString());
    const auto L = static_cast<std::size_t>(layers), H = static_cast<std::size_t>(heads);
    s.scores = std::vector<std::vector<std::vector<double>>>(L, std::vector<std::vector<double>>(H, std::vector<double>(6, fill)));
    s.dominant = std::vector<std::vector<std::int64_t>>(L, std::vector<std::int64_t>(H, 5));
    return s;
}

// Two layers of three heads. Layer 1 head 2 (0-based 0, 1) is a previous-token
// head scoring `previous`; layer 2 head 1 is a next-token head scoring 0.2.
HeadRoleScores smallHeads(double previous)
{
    HeadRoleScores s = uniformHeads(2, 3, 0.125);
    s.scores[0][1][0] = previous;
    s.dominant[0][1] = 0;
    s.scores[1][0][1] = 0.25;
    s.dominant[1][0] = 1;
    return s;
}

ValidationInsights insightAt(qint64 step, const HeadRoleScores& heads)
{
    ValidationInsights v;
    v.step = step;
    v.heads = heads;
    return v;
}

// Validations at 100, 200 and 300: the previous-token head scores 0.5, 0.75, 0.875.
std::shared_ptr<InsightHistory> roleHistory()
{
    auto history = std::make_shared<InsightHistory>();
    history->addValidationInsight(insightAt(100, smallHeads(0.5)));
    history->addValidationInsight(insightAt(200, smallHeads(0.75)));
    history->addValidationInsight(insightAt(300, smallHeads(0.875)));
    return history;
}

// Three stages: after block 1's attention and FFN, and after block 2's attention (the output).
ProbeResult lensCapture(qint64 step)
{
    ProbeResult c;
    c.step = step;
    c.text = "probe";
    c.tokens = {"a", "b"};
    c.predictionLabels = {"cat", "dog", "bird, small"};
    c.prediction = {0.125f, 0.625f, 0.25f};
    c.label = 1;
    c.logitLens = {LensStage{0, "attention", {0.5f, 0.25f, 0.25f}}, LensStage{0, "ffn", {0.25f, 0.5f, 0.25f}},
                   LensStage{1, "attention", {0.125f, 0.625f, 0.25f}}};
    return c;
}

template <typename Page>
void show(Page& page, std::shared_ptr<const InsightHistory> history, std::shared_ptr<const InsightHistory> other = {},
          qint64 step = -1)
{
    page.setSources({QStringLiteral("a"), QStringLiteral("Run A"), history},
                    other ? InsightSource{QStringLiteral("b"), QStringLiteral("Run B"), other} : InsightSource{});
    page.setStep(step);
    page.refresh();
}

QColor base(const QWidget& w) { return w.palette().color(QPalette::Base); }
QColor text(const QWidget& w) { return w.palette().color(QPalette::Text); }

}  // namespace

class TestHeadRoles : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roleColoursAreDistinctAndScoresSetTheStrength();
    void aCellTakesItsDominantRolesColour();
    void fortyEightHeadsStayLegible();
    void multiPathHeadsAreGroupedByPath();
    void scrubbingShowsTheEarlierValidation();
    void csvHoldsEveryHeadsScores();
    void theComparisonRunGetsItsOwnGrid();
    void clickingAHeadPlotsItsRolesOverTraining();
    void emptyStatesSayWhy();

    void lensOutlinesEachStagesTopClassAndTheTrueClass();
    void lensColumnsNameTheirLabels();
    void lensCsvIsLong();
    void lensComparisonAndEmptyStates();
};

void TestHeadRoles::roleColoursAreDistinctAndScoresSetTheStrength()
{
    const QColor ink(Qt::black);
    QStringList all = kRoles;
    all << QStringLiteral("duplicate token") << QStringLiteral("induction");
    QVector<QRgb> colours;
    for (int i = 0; i < all.size(); ++i)
        colours << headRoleColor(all[i], i, ink).rgb();
    for (int i = 0; i < colours.size(); ++i)
        for (int j = i + 1; j < colours.size(); ++j)
            QVERIFY2(colours[i] != colours[j], qPrintable(all[i] + QStringLiteral(" = ") + all[j]));
    QCOMPARE(headRoleColor(QStringLiteral("previous token"), 0, ink), palette::seriesColor(0));
    QCOMPARE(headRoleColor(QStringLiteral("induction"), 7, ink), ink);
    // By name, not by place: "induction" listed first is still the text colour.
    QCOMPARE(headRoleColor(QStringLiteral("induction"), 0, ink), ink);

    // The bar is the role's colour at any score, its height the score (clamped);
    // the tint 15 % of the way from the background.
    const QColor role(0, 114, 178), white(Qt::white);
    const HeadRoleCell half = headRoleCell(role, 0.5, white);
    QCOMPARE(half.bar.rgb(), role.rgb());
    QCOMPARE(half.fill, 0.5);
    QCOMPARE(headRoleCell(role, 0.01, white).bar.rgb(), role.rgb());
    QCOMPARE(headRoleCell(role, 2.0, white).fill, 1.0);
    QCOMPARE(headRoleCell(role, -1.0, white).fill, 0.0);
    QCOMPARE(headRoleCell(role, std::nan(""), white).fill, 0.0);
    QVERIFY(std::abs(half.tint.red() - int(std::lround(255 - 0.15 * 255))) <= 1);
    QVERIFY(std::abs(half.tint.blue() - int(std::lround(255 - 0.15 * (255 - 178)))) <= 1);
}

void TestHeadRoles::aCellTakesItsDominantRolesColour()
{
    HeadRoleGrid grid;
    grid.resize(600, 200);
    grid.setState(smallHeads(0.9), 1, QStringLiteral("Run A"));
    QCOMPARE(grid.dominant(0, 1), 0);
    QCOMPARE(grid.dominantScore(0, 1), 0.9);
    QCOMPARE(grid.dominant(1, 0), 1);
    QCOMPARE(grid.dominant(0, 0), 5);
    const QColor previous = palette::seriesColor(0);
    QCOMPARE(grid.cellColor(0, 1).rgb(), previous.rgb());
    QCOMPARE(grid.cellFill(0, 1), 0.9);
    QCOMPARE(grid.cellColor(1, 0).rgb(), palette::seriesColor(1).rgb());  // next token
    QCOMPARE(grid.cellColor(0, 0).rgb(), palette::seriesColor(5).rgb());  // broad
    QVERIFY(!grid.cellColor(2, 0).isValid());

    // On screen: the bar in the role's colour up to 90 % of the cell, the tint above.
    const QImage image = grid.grab().toImage();
    const QRectF cell = grid.cellRect(0, 1);
    QVERIFY(cell.width() > 20);
    const auto pixel = [&](const QRectF& c, double fromBottom) {
        return QColor(image.pixel(QPointF(c.left() + 3, c.bottom() - fromBottom * c.height()).toPoint())).rgb();
    };
    QCOMPARE(pixel(cell, 0.1), previous.rgb());
    QCOMPARE(pixel(cell, 0.93), headRoleCell(previous, 0.9, base(grid)).tint.rgb());
    // A weak "broad" head (0.125) keeps vermillion, a weak "next token" head (0.25)
    // orange: at the foot of each cell, the two colours themselves, not two pale
    // shades of one (what blending towards the background gave).
    QCOMPARE(pixel(grid.cellRect(0, 0), 0.05), palette::seriesColor(5).rgb());
    QCOMPARE(pixel(grid.cellRect(1, 0), 0.05), palette::seriesColor(1).rgb());
    QCOMPARE(pixel(grid.cellRect(0, 0), 0.5), headRoleCell(palette::seriesColor(5), 0.125, base(grid)).tint.rgb());
    QCOMPARE(grid.cellText(0, 1), QStringLiteral("0.90"));
    QCOMPARE(grid.cellAt(cell.center()), QPoint(1, 0));

    const QString tip = grid.readout(0, 1);
    QVERIFY2(tip.startsWith(QStringLiteral("layer 1, head 2\ndominant: previous token (0.900)")), qPrintable(tip));
    QVERIFY(tip.contains(QStringLiteral("previous token: 0.900")));
    QVERIFY(tip.contains(QStringLiteral("broad: 0.125")));
    QCOMPARE(tip.count(QLatin1Char('\n')), 1 + 6);

    QSignalSpy clicked(&grid, &HeadRoleGrid::cellClicked);
    QTest::mouseClick(&grid, Qt::LeftButton, Qt::NoModifier, grid.cellRect(1, 2).center().toPoint());
    QCOMPARE(clicked.size(), 1);
    QCOMPARE(clicked.front().at(0).toInt(), 1);
    QCOMPARE(clicked.front().at(1).toInt(), 2);
}

void TestHeadRoles::fortyEightHeadsStayLegible()
{
    // The wide model at 1280 pixels: 48 cells side by side, each with its score printed.
    HeadRoleGrid wide;
    wide.resize(1240, 200);
    wide.setState(uniformHeads(1, 48, 0.5), 1, QStringLiteral("wide 1x48"));
    const QRectF first = wide.cellRect(0, 0), last = wide.cellRect(0, 47);
    QVERIFY2(first.width() >= 22, qPrintable(QString::number(first.width())));
    QVERIFY(last.right() <= wide.width());
    QVERIFY(!wide.cellText(0, 47).isEmpty());
    QCOMPARE(wide.cellText(0, 47).right(2), QStringLiteral("50"));
    QVERIFY(wide.heightForWidth(1240) < 120);  // one row, not a tall strip

    // Deep 12 x 12 in half the width (beside a comparison).
    HeadRoleGrid deep;
    deep.resize(600, 600);
    deep.setState(uniformHeads(12, 12, 0.5), 1, QStringLiteral("deep 12x12"));
    QVERIFY(deep.cellRect(0, 0).width() >= 40);
    QCOMPARE(deep.cellText(11, 11), QStringLiteral("0.50"));
    QVERIFY(deep.heightForWidth(600) <= 500);
    QVERIFY(deep.cellRect(11, 11).bottom() <= deep.heightForWidth(600));
}

void TestHeadRoles::multiPathHeadsAreGroupedByPath()
{
    HeadRoleGrid grid;
    grid.resize(800, 200);
    grid.setState(uniformHeads(1, 8), 2, QString());
    QCOMPARE(grid.paths(), 2);
    QVERIFY(grid.readout(0, 5).startsWith(QStringLiteral("layer 1, path 2 · head 2\n")));
    QVERIFY(grid.readout(0, 3).startsWith(QStringLiteral("layer 1, path 1 · head 4\n")));
    // A gap between the paths, none within one.
    QVERIFY(grid.cellRect(0, 4).left() - grid.cellRect(0, 3).right() >= 6);
    QVERIFY(std::abs(grid.cellRect(0, 3).left() - grid.cellRect(0, 2).right()) < 0.01);
    QCOMPARE(grid.cellAt(QPointF(grid.cellRect(0, 3).right() + 3, grid.cellRect(0, 3).center().y())), QPoint(-1, -1));
    // Paths that do not divide the heads: plain head numbers.
    grid.setState(uniformHeads(1, 6), 4, QString());
    QVERIFY(grid.readout(0, 5).startsWith(QStringLiteral("layer 1, head 6\n")));
}

void TestHeadRoles::scrubbingShowsTheEarlierValidation()
{
    HeadRolesView view;
    view.resize(900, 600);
    auto history = roleHistory();
    show(view, history);  // live: the newest, step 300
    QCOMPARE(view.grid(0)->dominantScore(0, 1), 0.875);
    QVERIFY(view.grid(0)->title().contains(QStringLiteral("step 300")));
    show(view, history, {}, 250);  // frozen between validations: the one at 200
    QCOMPARE(view.grid(0)->dominantScore(0, 1), 0.75);
    QVERIFY(view.grid(0)->title().contains(QStringLiteral("step 200")));
    QCOMPARE(view.grid(0)->cellColor(0, 1).rgb(), palette::seriesColor(0).rgb());
    QCOMPARE(view.grid(0)->cellFill(0, 1), 0.75);
    show(view, history, {}, 100);
    QCOMPARE(view.grid(0)->dominantScore(0, 1), 0.5);
    QVERIFY(view.exportTitle().startsWith(QStringLiteral("head roles Run A step 100")));
    // Before the first validation: the page says so.
    show(view, history, {}, 50);
    QVERIFY(!view.exportArea()->isVisibleTo(&view));
    QVERIFY2(view.emptyLabel()->text().contains(QStringLiteral("No validation at or before step 50")),
             qPrintable(view.emptyLabel()->text()));
}

void TestHeadRoles::csvHoldsEveryHeadsScores()
{
    HeadRolesView view;
    auto history = std::make_shared<InsightHistory>();
    HeadRoleScores s = uniformHeads(1, 2, 0.125);
    s.scores[0][1] = {0.875, 0.0625, 0.0, 0.5, 0.25, 0.0};
    s.dominant[0][1] = 0;
    history->addValidationInsight(insightAt(40, s));
    show(view, history);
    const QByteArray expected = "step,run,layer,head,previous token,next token,first token,self,local,broad,dominant\n"
                                "40,Run A,1,1,0.125,0.125,0.125,0.125,0.125,0.125,broad\n"
                                "40,Run A,1,2,0.875,0.0625,0,0.5,0.25,0,previous token\n";
    QCOMPARE(view.csv(), expected);
}

void TestHeadRoles::theComparisonRunGetsItsOwnGrid()
{
    HeadRolesView view;
    view.resize(1200, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    auto other = std::make_shared<InsightHistory>();
    HeadRoleScores lm = uniformHeads(1, 2, 0.25);
    lm.roles.insert(lm.roles.end(), {"duplicate token", "induction"});
    for (auto& head : lm.scores[0])
        head.insert(head.end(), {0.0, 0.5});
    lm.dominant[0][1] = 7;
    other->addValidationInsight(insightAt(150, lm));
    show(view, roleHistory());
    QVERIFY(!view.grid(1)->isVisible());
    show(view, roleHistory(), other, 250);
    QVERIFY(view.grid(1)->isVisible());
    QVERIFY(view.grid(1)->title().startsWith(QStringLiteral("Run B · validation at step 150")));
    QVERIFY(view.grid(0)->title().startsWith(QStringLiteral("Run A · validation at step 200")));
    QCOMPARE(view.grid(1)->cellColor(0, 1).rgb(), text(view).rgb());  // induction
    QCOMPARE(view.grid(1)->cellFill(0, 1), 0.5);
    // Small grids side by side; the legend names the comparison's extra roles.
    QVERIFY(view.gridsSideBySide());
    QVERIFY(view.grid(1)->geometry().left() > view.grid(0)->geometry().left());
    QVERIFY(view.legend()->text().contains(QStringLiteral("induction")));
    // The CSV: both runs, the union of their roles (the first run's LM roles empty).
    const QByteArray csv = view.csv();
    QVERIFY(csv.startsWith("step,run,layer,head,previous token,next token,first token,self,local,broad,"
                           "duplicate token,induction,dominant\n"));
    QCOMPARE(csv.count('\n'), 1 + 6 + 2);
    QVERIFY(csv.contains("\n200,Run A,1,2,0.75,0.125,0.125,0.125,0.125,0.125,,,previous token\n"));
    QVERIFY(csv.contains("\n150,Run B,1,2,0.25,0.25,0.25,0.25,0.25,0.25,0,0.5,induction\n"));

    // 48 heads each: one grid under the other.
    auto wide = std::make_shared<InsightHistory>();
    wide->addValidationInsight(insightAt(100, uniformHeads(1, 48)));
    auto wide2 = std::make_shared<InsightHistory>();
    wide2->addValidationInsight(insightAt(100, uniformHeads(1, 48)));
    show(view, wide, wide2);
    QVERIFY(!view.gridsSideBySide());
    QTRY_VERIFY(view.grid(1)->geometry().top() > view.grid(0)->geometry().bottom() - 1);
    QVERIFY(view.grid(0)->cellRect(0, 0).width() >= 22);
}

void TestHeadRoles::clickingAHeadPlotsItsRolesOverTraining()
{
    HeadRolesView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    show(view, roleHistory(), {}, 200);
    QVERIFY(!view.rolePlot()->isVisible());
    QCOMPARE(view.selectedRun(), -1);
    // Until a head is chosen the grid sits at the top, not in the middle of the page.
    QVERIFY2(view.grid(0)->mapTo(&view, QPoint(0, 0)).y() < 120,
             qPrintable(QString::number(view.grid(0)->mapTo(&view, QPoint(0, 0)).y())));
    QTest::mouseClick(view.grid(0), Qt::LeftButton, Qt::NoModifier, view.grid(0)->cellRect(0, 1).center().toPoint());
    QCOMPARE(view.selectedRun(), 0);
    QCOMPARE(view.grid(0)->selected(), QPoint(1, 0));
    QVERIFY(view.rolePlot()->isVisible());
    QCustomPlot* plot = view.rolePlot();
    QCOMPARE(plot->graphCount(), 6);  // one per role
    QCPGraph* previous = nullptr;
    for (int g = 0; g < plot->graphCount(); ++g) {
        QCOMPARE(plot->graph(g)->data()->size(), 3);  // one point per validation
        if (plot->graph(g)->name() == QStringLiteral("previous token"))
            previous = plot->graph(g);
    }
    QVERIFY(previous);
    QCOMPARE(previous->pen().color(), palette::seriesColor(0));
    QVector<QPointF> points;
    for (const QCPGraphData& p : *previous->data())
        points << QPointF(p.key, p.value);
    QCOMPARE(points, (QVector<QPointF>{{100, 0.5}, {200, 0.75}, {300, 0.875}}));
    QCOMPARE(view.plotCursorStep(), 200.0);
    // Scrubbing moves the cursor and keeps the head.
    show(view, roleHistory(), {}, 300);
    QCOMPARE(view.plotCursorStep(), 300.0);
    QCOMPARE(view.grid(0)->selected(), QPoint(1, 0));
    // A model without that head (another run chosen): the selection goes.
    auto small = std::make_shared<InsightHistory>();
    small->addValidationInsight(insightAt(10, uniformHeads(1, 1)));
    show(view, small);
    QCOMPARE(view.selectedRun(), -1);
    QVERIFY(!view.rolePlot()->isVisible());
    QVERIFY(std::isnan(view.plotCursorStep()));
}

void TestHeadRoles::emptyStatesSayWhy()
{
    HeadRolesView view;
    view.resize(800, 600);
    show(view, std::make_shared<InsightHistory>());
    QVERIFY(!view.exportArea()->isVisibleTo(&view));
    QVERIFY(view.emptyLabel()->text().startsWith(QStringLiteral("No validation yet")));
    QCOMPARE(view.csv(), QByteArray("step,run,layer,head,dominant\n"));
    // A validation that scored no heads (an older run).
    auto older = std::make_shared<InsightHistory>();
    older->addValidationInsight(insightAt(100, HeadRoleScores()));
    show(view, older);
    QVERIFY(view.emptyLabel()->text().contains(QStringLiteral("scored no heads")));
    // No run at all.
    view.setSources({}, {});
    view.refresh();
    QCOMPARE(view.emptyLabel()->text(), QStringLiteral("No run to show."));
}

// --- logit lens ---------------------------------------------------------------

void TestHeadRoles::lensOutlinesEachStagesTopClassAndTheTrueClass()
{
    LogitLensView view;
    view.resize(1000, 600);
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(lensCapture(20));
    show(view, history);
    LensMap* map = view.lensMap(0);
    QCOMPARE(map->matrix().rows, 3);
    QCOMPARE(map->matrix().cols, 3);
    QCOMPARE(map->matrix().rowLabels, (QStringList{QStringLiteral("block 1 attention"), QStringLiteral("block 1 ffn"),
                                                   QStringLiteral("block 2 attention")}));
    QCOMPARE(map->topColumns(), (QVector<int>{0, 1, 1}));
    QCOMPARE(map->trueColumn(), 1);
    QCOMPARE(map->matrix().columnLabels,
             (QStringList{QStringLiteral("cat"), QStringLiteral("✓dog"), QStringLiteral("bird, small")}));
    QCOMPARE(view.topLines(0), (QStringList{QStringLiteral("block 1 attention: predicts cat (0.50)"),
                                            QStringLiteral("block 1 ffn: predicts dog (0.50) ✓"),
                                            QStringLiteral("block 2 attention: predicts dog (0.63) ✓")}));
    QVERIFY(view.topPredictions(0)->text().contains(QStringLiteral("block 1 attention: predicts cat (0.50)")));
    // Colour 0..1, whatever the largest value.
    QCOMPARE(map->scaleLowText(), QStringLiteral("0.00"));
    QCOMPARE(map->scaleHighText(), QStringLiteral("1.00"));
    QCOMPARE(map->readout(2, 1), QStringLiteral("block 2 attention, dog: probability 0.6250 (this stage's top class) (the true class)"));
    QCOMPARE(map->readout(0, 2), QStringLiteral("block 1 attention, bird, small: probability 0.2500"));

    // Drawn: the top cell of the first stage outlined in vermillion, inside its edge.
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QImage image = map->grab().toImage();
    // Whether a pixel in the top three rows of a cell (mid-width) is the outline's vermillion.
    auto outlined = [&](int row, int col) {
        const QRectF cell = map->cellRect(row, col);
        for (int y = int(cell.top()); y <= int(cell.top()) + 3; ++y)
            if (QColor(image.pixel(int(cell.center().x()), y)) == palette::seriesColor(5))
                return true;
        return false;
    };
    QVERIFY(outlined(0, 0));
    QVERIFY(outlined(1, 1));
    QVERIFY(outlined(2, 1));
    QVERIFY(!outlined(0, 2));
    QVERIFY(!outlined(2, 0));
    QVERIFY(view.exportTitle().startsWith(QStringLiteral("logit lens Run A step 20")));

    // Scrubbed to an earlier capture.
    ProbeResult later = lensCapture(40);
    later.logitLens[0].distribution = {0.0f, 0.0f, 1.0f};
    history->addCapture(later);
    show(view, history, {}, 30);
    QCOMPARE(view.lensMap(0)->topColumns(), (QVector<int>{0, 1, 1}));
    show(view, history);
    QCOMPARE(view.lensMap(0)->topColumns(), (QVector<int>{2, 1, 1}));
}

void TestHeadRoles::lensColumnsNameTheirLabels()
{
    // A language model: the lens keeps some tokens of the vocabulary.
    ProbeResult c = lensCapture(10);
    c.predictionLabels = {"a", " ", "\n", "the", "cat"};
    c.lensColumns = {4, 2, 1};
    c.label = 2;
    c.logitLens[0].distribution = {0.25f, 0.5f, 0.25f};
    c.logitLens[1].distribution = {0.5f, 0.25f, 0.25f};
    c.logitLens[2].distribution = {0.125f, 0.125f, 0.75f};
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(c);
    LogitLensView view;
    view.resize(1000, 600);
    show(view, history);
    LensMap* map = view.lensMap(0);
    QCOMPARE(map->trueColumn(), 1);
    QCOMPARE(map->matrix().columnLabels, (QStringList{QStringLiteral("cat"), QStringLiteral("✓⏎"), QStringLiteral("␣")}));
    QCOMPARE(view.topLines(0).at(2), QStringLiteral("block 2 attention: predicts ␣ (0.75)"));
    // A true token outside the kept columns: nothing marked.
    c.label = 3;
    history->addCapture(c);
    show(view, history);
    QCOMPARE(view.lensMap(0)->trueColumn(), -1);

    // Many tokens: columns keep their width and the map scrolls sideways.
    ProbeResult wide = lensCapture(10);
    wide.predictionLabels.clear();
    for (int t = 0; t < 100; ++t)
        wide.predictionLabels.push_back(QStringLiteral("tok%1").arg(t).toStdString());
    for (LensStage& stage : wide.logitLens)
        stage.distribution.assign(100, 0.01f);
    auto many = std::make_shared<InsightHistory>();
    many->addCapture(wide);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    show(view, many);
    QVERIFY(view.lensMap(0)->minimumWidth() >= 100 * LogitLensView::kMinCellWidth);
    QTRY_VERIFY(view.lensMap(0)->cellRect(0, 0).width() >= LogitLensView::kMinCellWidth - 0.5);
}

void TestHeadRoles::lensCsvIsLong()
{
    auto history = std::make_shared<InsightHistory>();
    ProbeResult c = lensCapture(20);
    c.logitLens = {LensStage{0, "ffn", {0.5f, 0.25f, 0.25f}}, LensStage{1, "ffn", {0.125f, 0.625f, 0.25f}}};
    history->addCapture(c);
    LogitLensView view;
    show(view, history);
    const QByteArray expected = "run,step,probe,stage,label,probability\n"
                                "Run A,20,probe,block 1 ffn,cat,0.5\n"
                                "Run A,20,probe,block 1 ffn,dog,0.25\n"
                                "Run A,20,probe,block 1 ffn,\"bird, small\",0.25\n"
                                "Run A,20,probe,block 2 ffn,cat,0.125\n"
                                "Run A,20,probe,block 2 ffn,dog,0.625\n"
                                "Run A,20,probe,block 2 ffn,\"bird, small\",0.25\n";
    QCOMPARE(view.csv(), expected);
}

void TestHeadRoles::lensComparisonAndEmptyStates()
{
    LogitLensView view;
    view.resize(1200, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(lensCapture(20));
    auto other = std::make_shared<InsightHistory>();
    ProbeResult o = lensCapture(30);
    o.logitLens[2].distribution = {0.75f, 0.125f, 0.125f};
    other->addCapture(o);
    show(view, history, other);
    QCOMPARE(view.lensMap(1)->topColumns(), (QVector<int>{0, 1, 0}));
    QCOMPARE(view.topLines(1).at(2), QStringLiteral("block 2 attention: predicts cat (0.75)"));
    QVERIFY(view.panesSideBySide());
    QCOMPARE(view.csv().count('\n'), 1 + 9 + 9);
    QVERIFY(view.csv().contains("Run B,30,probe,block 2 attention,cat,0.75\n"));

    // A capture without a lens (an older run), and a run without captures.
    ProbeResult old = lensCapture(20);
    old.logitLens.clear();
    auto older = std::make_shared<InsightHistory>();
    older->addCapture(old);
    show(view, older);
    QVERIFY(!view.exportArea()->isVisibleTo(&view));
    QVERIFY2(view.emptyLabel()->text().contains(QStringLiteral("no logit lens")), qPrintable(view.emptyLabel()->text()));
    show(view, std::make_shared<InsightHistory>());
    QVERIFY(view.emptyLabel()->text().startsWith(QStringLiteral("No probe captured yet")));
    QCOMPARE(view.csv(), QByteArray("run,step,probe,stage,label,probability\n"));
}

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestHeadRoles test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_headroles.moc"
