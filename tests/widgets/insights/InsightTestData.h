// defines: the constructed data and helpers the insight tests share (widelab::insighttest):
// states and captures (ProbeResult, its maps written row-major) by step, the attention probe, routed, LayerNorm and path
// histories, comparisons with a tolerance, and an answer to an input dialog
#pragma once

#include "curves/CurvePlot.h"
#include "insights/AttentionView.h"
#include "insights/ColorScale.h"
#include "insights/ExpertsView.h"
#include "insights/HeadRolesView.h"
#include "insights/HeadGrid.h"
#include "insights/InsightHistory.h"
#include "insights/InsightsView.h"
#include "insights/LayerNormView.h"
#include "insights/LogitLensView.h"
#include "insights/MatrixView.h"
#include "insights/PathsView.h"
#include "insights/PredictionBars.h"
#include "insights/TokenFlowView.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QInputDialog>
#include <QLabel>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSlider>
#include <QTabWidget>
#include <QTableWidget>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace widelab::insighttest {

using Map = QVector<float>;  // tokens x tokens, row = query, row-major

inline std::vector<std::string> strings(const QStringList& texts)
{
    std::vector<std::string> out;
    for (const QString& text : texts)
        out.push_back(text.toStdString());
    return out;
}

// A map written row-major as the rows of a ProbeResult's map ([query][key]), `tokens`
// keys a row; what is left over at the end (a map of the wrong size) is a shorter last row.
inline std::vector<std::vector<float>> rowsOf(const Map& map, int tokens)
{
    std::vector<std::vector<float>> rows;
    const qsizetype width = tokens > 0 ? tokens : std::max<qsizetype>(1, map.size());
    for (qsizetype at = 0; at < map.size(); at += width)
        rows.emplace_back(map.begin() + at, map.begin() + std::min(map.size(), at + width));
    return rows;
}

// Maps [layer][head], each written row-major, as a ProbeResult holds them.
inline std::vector<std::vector<std::vector<std::vector<float>>>> mapsOf(const QVector<QVector<Map>>& attention,
                                                                        int tokens)
{
    std::vector<std::vector<std::vector<std::vector<float>>>> maps;
    for (const QVector<Map>& layer : attention) {
        maps.emplace_back();
        for (const Map& head : layer)
            maps.back().push_back(rowsOf(head, tokens));
    }
    return maps;
}

inline TrainingSnapshot stateAt(qint64 step)
{
    TrainingSnapshot state;
    state.step = step;
    return state;
}

inline ProbeResult captureOf(qint64 step, const QString& text, const QStringList& tokens,
                             const QVector<QVector<Map>>& attention = {})
{
    ProbeResult capture;
    capture.step = step;
    capture.text = text.toStdString();
    capture.tokens = strings(tokens);
    capture.attention = mapsOf(attention, static_cast<int>(tokens.size()));
    return capture;
}

inline QVector<qint64> stepsOf(const QVector<TrainingSnapshot>& states)
{
    QVector<qint64> steps;
    for (const TrainingSnapshot& s : states)
        steps << s.step;
    return steps;
}

inline QVector<qint64> stepsOf(const QVector<ProbeResult>& captures)
{
    QVector<qint64> steps;
    for (const ProbeResult& c : captures)
        steps << c.step;
    return steps;
}

inline bool near(double a, double b, double tolerance = 1e-6) { return std::abs(a - b) <= tolerance; }

inline bool sameValues(const QVector<float>& actual, const QVector<float>& expected, double tolerance = 1e-6)
{
    if (actual.size() != expected.size()) {
        qWarning() << "sizes differ:" << actual.size() << expected.size();
        return false;
    }
    for (qsizetype i = 0; i < actual.size(); ++i)
        if (!near(actual[i], expected[i], tolerance)) {
            qWarning() << "value" << i << "is" << actual[i] << "expected" << expected[i];
            return false;
        }
    return true;
}

using Curve = QVector<QPair<double, double>>;  // (step or key, value)

// Shows the Insights tab titled `title` and redraws it: its page, as type Page;
// nullptr when no tab has that title or its page is of another type.
template <typename Page>
Page* showInsightsTab(InsightsView& insights, const QString& title)
{
    auto* tabs = insights.findChild<QTabWidget*>(QString(), Qt::FindDirectChildrenOnly);
    for (int i = 0; tabs != nullptr && i < tabs->count(); ++i)
        if (tabs->tabText(i) == title) {
            tabs->setCurrentIndex(i);
            insights.refreshNow();
            return dynamic_cast<Page*>(insights.currentPage());
        }
    return nullptr;
}

// (key, value) of a QCustomPlot graph's or bars' points, in order.
template <typename Plottable>
Curve pointsOf(const Plottable* plottable)
{
    Curve out;
    for (auto it = plottable->data()->constBegin(); it != plottable->data()->constEnd(); ++it)
        out.push_back({it->key, it->value});
    return out;
}

inline bool sameCurve(const Curve& actual, const Curve& expected, double tolerance = 1e-9)
{
    if (actual.size() != expected.size()) {
        qWarning() << "curve sizes differ:" << actual << expected;
        return false;
    }
    for (qsizetype i = 0; i < actual.size(); ++i)
        if (!near(actual[i].first, expected[i].first, tolerance)
            || !near(actual[i].second, expected[i].second, tolerance)) {
            qWarning() << "curves differ:" << actual << expected;
            return false;
        }
    return true;
}

// Three heads over four tokens; head h puts all its weight on key (q + h) % 4 for query q.
inline ProbeResult shiftedHeads()
{
    QVector<Map> heads;
    for (int h = 0; h < 3; ++h) {
        Map map(16, 0.0f);
        for (int q = 0; q < 4; ++q)
            map[q * 4 + (q + h) % 4] = 1.0f;
        heads << map;
    }
    return captureOf(7, QStringLiteral("the cat sat down"),
                     {QStringLiteral("the"), QStringLiteral("cat"), QStringLiteral("sat"), QStringLiteral("down")},
                     {heads});
}

// The probe of the attention tests: three tokens (the first holds a comma, so the CSV quotes it),
// two layers of two heads, at step 10. All weights are dyadic, so floats hold them exactly.
inline const QStringList kTokens{QStringLiteral("x,y"), QStringLiteral("cat"), QStringLiteral("sat")};
inline const Map kL0H0{0.5f, 0.5f, 0.0f, /**/ 0.0f, 1.0f, 0.0f, /**/ 0.25f, 0.25f, 0.5f};
inline const Map kL0H1{1.0f, 0.0f, 0.0f, /**/ 0.5f, 0.5f, 0.0f, /**/ 0.0f, 0.5f, 0.5f};
inline const Map kL1H0{0.0f, 0.0f, 1.0f, /**/ 0.0f, 1.0f, 0.0f, /**/ 1.0f, 0.0f, 0.0f};
inline const Map kL1H1{0.25f, 0.75f, 0.0f, /**/ 0.125f, 0.375f, 0.5f, /**/ 0.0f, 0.0f, 1.0f};
// Step 20: layer 2, head 2 looks at the first token only.
inline const Map kL1H1Later{1.0f, 0.0f, 0.0f, /**/ 1.0f, 0.0f, 0.0f, /**/ 1.0f, 0.0f, 0.0f};

inline ProbeResult attentionProbe(qint64 step)
{
    return captureOf(step, QStringLiteral("probe"), kTokens,
                     {{kL0H0, kL0H1}, {kL1H0, step == 10 ? kL1H1 : kL1H1Later}});
}

// Finds the visible QInputDialog and answers it with `text` (polling until it is open).
inline void answerInputDialog(const QString& text, int triesLeft = 200)
{
    QTimer::singleShot(10, [text, triesLeft] {
        for (QWidget* widget : QApplication::topLevelWidgets())
            if (auto* dialog = qobject_cast<QInputDialog*>(widget); dialog != nullptr && dialog->isVisible()) {
                dialog->setTextValue(text);
                dialog->accept();
                return;
            }
        if (triesLeft > 0)
            answerInputDialog(text, triesLeft - 1);
        else if (QWidget* modal = QApplication::activeModalWidget())
            modal->close();  // never leave the test hanging in exec()
    });
}

inline QLabel* visibleLabelContaining(QWidget* parent, const QString& text)
{
    for (QLabel* label : parent->findChildren<QLabel*>())
        if (label->isVisibleTo(parent) && label->text().contains(text))
            return label;
    return nullptr;
}

inline RoutingStats load(std::int64_t block, const std::vector<std::int64_t>& tokens, std::int64_t unused,
                         const std::vector<double>& loadVsFair, double entropy = 0, const std::vector<double>& dropped = {})
{
    RoutingStats l;
    l.block = block;
    l.tokensPerExpert = tokens;
    l.unusedExperts = unused;
    l.loadVsFair = loadVsFair;
    l.routerEntropy = entropy;
    l.droppedPercentPerChoice = dropped;
    return l;
}

// Two blocks of four experts at steps 50 and 100; at 100 block 2 uses experts 1 and 2 only,
// 10 and 30 of 40 tokens: a fair share is 10, so expert 2 has 3x its share.
inline std::shared_ptr<InsightHistory> routedHistory()
{
    auto history = std::make_shared<InsightHistory>();
    TrainingSnapshot early = stateAt(50);
    early.routing = {load(0, {40, 0, 0, 0}, 3, {4, 0, 0, 0}), load(1, {0, 0, 40, 0}, 3, {0, 0, 4, 0})};
    history->addState(early);
    TrainingSnapshot state = stateAt(100);
    state.routing = {load(0, {20, 20, 20, 20}, 0, {1, 1, 1, 1}, 1.25, {0, 0}),
                     load(1, {10, 30, 0, 0}, 2, {1, 3, 0, 0}, 0.5, {0, 12.5})};
    history->addState(state);
    ProbeResult capture =
        captureOf(100, QStringLiteral("probe"), {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")});
    capture.experts = {{{1, 2}, {0, 3}, {-1, 2}},  // block 1: first choices 2, 1, dropped (1-based)
                       {{3, -1}, {-1, -1}, {2, 0}}};  // block 2: 4, dropped, 3
    history->addCapture(capture);
    return history;
}

// The LayerNorm measurements of a state: every field the LayerNorm view reads.
inline void setNorms(TrainingSnapshot& s, double base)
{
    s.divergence = {base + 0.1, base + 0.2, base + 0.3, base + 0.4};  // gamma/beta all pairs, elementwise
    s.attentionDivergence = {base + 1.1, base + 1.2, base + 1.3, base + 1.4};
    const float f = float(s.step) / 100.0f;
    s.ffnGamma = {{1.0f, 1.0f + f, 1.0f - f}, {0.5f, 1.5f, 1.0f + 2 * f}};
    s.ffnBeta = {{0.0f, f, -f}, {0.25f, -0.25f, 0.0f}};
    s.attentionGamma = {{2.0f, 1.0f + f, 1.0f}, {1.0f, 1.0f, 1.0f}};
    s.attentionBeta = {{f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.5f}};
}

inline TrainingSnapshot normState(qint64 step, double base)
{
    TrainingSnapshot s = stateAt(step);
    setNorms(s, base);
    return s;
}

inline PathWeights pathWeights(std::int64_t block, const std::string& sublayer, const std::vector<float>& alpha,
                               float beta, double diversity)
{
    PathWeights p;
    p.block = block;
    p.sublayer = sublayer;
    p.paths = 2;
    p.alpha = alpha;
    p.beta = beta;
    p.diversity = diversity;
    return p;
}

// Two blocks, each with a two-path attention and FFN (two raw paths, two extra features).
inline TrainingSnapshot pathState(qint64 step, float shift)
{
    TrainingSnapshot s = stateAt(step);
    const std::string att = "attention", ffn = "ffn";
    s.paths = {pathWeights(0, att, {0.5f + shift, 0.25f, 0.125f, 0.0625f}, 1.0f + shift, 0.5 + shift),
               pathWeights(0, ffn, {2.0f, 3.0f + shift, 4.0f, 5.0f}, 2.0f + shift, 1.5 + shift),
               pathWeights(1, att, {-1.0f, -2.0f, -3.0f, -4.0f + shift}, 3.0f + shift, 2.5 + shift),
               pathWeights(1, ffn, {7.0f, 8.0f, 9.0f + shift, 10.0f}, 4.0f + shift, 3.5 + shift)};
    return s;
}

// Captures of "probe" at steps 10 and 20 and states (routing, norms, paths) at 10, 20 and 30.
inline std::shared_ptr<InsightHistory> fullHistory()
{
    auto history = std::make_shared<InsightHistory>();
    history->addCapture(attentionProbe(10));
    history->addCapture(attentionProbe(20));
    for (qint64 step : {10, 20, 30}) {
        TrainingSnapshot s = pathState(step, float(step) / 10);
        setNorms(s, 0);
        s.routing = {load(0, {20, 20, 20, 20}, 0, {1, 1, 1, 1})};
        history->addState(s);
    }
    return history;
}

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

// Whether a scale end as MatrixView prints it is a plain finite number.
inline bool finiteText(const QString& text)
{
    bool ok = false;
    const double value = QString(text).remove(QLatin1Char('%')).toDouble(&ok);
    return ok && std::isfinite(value);
}

// Paints `widget` offscreen; a crash or an assertion in paintEvent fails the test here.
inline QImage painted(QWidget* widget)
{
    widget->resize(widget->size().expandedTo(QSize(400, 300)));
    return widget->grab().toImage();
}

inline ArchitectureSketch sketchWith(int experts, int paths)
{
    ArchitectureSketch sketch;
    sketch.layers = 2;
    sketch.experts = experts;
    sketch.topK = experts > 1 ? 2 : 1;
    sketch.paths = paths;
    return sketch;
}

inline QStringList comboTexts(const QComboBox* box)
{
    QStringList texts;
    for (int i = 0; i < box->count(); ++i)
        texts << box->itemText(i);
    return texts;
}

}  // namespace widelab::insighttest
