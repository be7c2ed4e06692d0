// widelab-bench-curves: how long a frame of panning and zooming takes in the
// training-curves panel with 20 runs of 100,000 steps each shown (the target:
// under 50 ms a frame). The runs are generated (fixed seed) with the shapes a
// real run's curves have; the pan and zoom are mouse drags and wheel turns sent
// to the loss chart, the events a user's mouse sends, so the frames go through
// the same code as on screen (QCustomPlot's range drag, CurvePlot's refresh).
//
//   widelab-bench-curves [--runs N] [--steps N] [--frames N] [--json]
#include "curves/CurvePlot.h"
#include "curves/CurvesView.h"
#include "vocab/Curves.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMouseEvent>
#include <QThread>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

using namespace widelab;

namespace {

constexpr double kTargetMs = 50;
constexpr int kFrameIntervalMs = 16;  // a pointer reports about 60 moves a second

struct Options {
    int runs = 20;
    int steps = 100'000;
    int frames = 60;  // of panning, and as many of zooming
    bool json = false;
};

// One run's logged curves, every step (validation every 1,000): noisy losses
// that fall like a power law, accuracy rising to a plateau, a warm-up then
// cosine learning rate, gradient norms with spikes, a steady throughput with dips.
void addRun(CurvesView& view, int run, int steps, std::mt19937& rng)
{
    const QString id = QStringLiteral("run-%1").arg(run);
    view.addRun(id, QStringLiteral("wide-%1x48-d1024").arg(run + 1), 1e8 * (1 + run));
    std::normal_distribution<double> noise(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const double floor = 1.6 + 0.05 * run;
    const double peakLr = 3e-4 * (1 + 0.1 * run);
    const int warmup = steps / 50;
    QVector<CurvePoint> loss, accuracy, lr, gradNorm, tokens, balance, validationLoss, validationAccuracy;
    for (QVector<CurvePoint>* v : {&loss, &accuracy, &lr, &gradNorm, &tokens, &balance})
        v->reserve(steps);
    for (int i = 0; i < steps; ++i) {
        const double step = i + 1;
        const double seconds = step * (0.35 + 0.01 * run);
        const double meanLoss = floor + 8.0 / std::pow(1.0 + step / 200.0, 0.6);
        loss.append({step, seconds, meanLoss * (1 + 0.04 * noise(rng))});
        const double meanAccuracy = 0.72 * (1 - std::exp(-step / (8000.0 + 500 * run)));
        accuracy.append({step, seconds, std::clamp(meanAccuracy + 0.02 * noise(rng), 0.0, 1.0)});
        const double progress = (step - warmup) / std::max(1, steps - warmup);
        lr.append({step, seconds,
                   step < warmup ? peakLr * step / warmup : peakLr * 0.5 * (1 + std::cos(M_PI * progress))});
        const double spike = uniform(rng) < 0.001 ? 10.0 : 1.0;
        gradNorm.append({step, seconds, spike * (0.8 + 2.0 / std::sqrt(1 + step / 500.0)) * std::exp(0.2 * noise(rng))});
        const double dip = uniform(rng) < 0.002 ? 0.3 : 1.0;
        tokens.append({step, seconds, dip * 48'000 * (1 + 0.03 * noise(rng))});
        balance.append({step, seconds, 0.01 + 0.02 / (1 + step / 1000.0) + 0.002 * std::abs(noise(rng))});
        if (i % 1000 == 999) {
            validationLoss.append({step, seconds, meanLoss + 0.05});
            validationAccuracy.append({step, seconds, meanAccuracy - 0.01});
        }
    }
    view.appendPoints(id, QLatin1String(curve::kLoss), loss);
    view.appendPoints(id, QLatin1String(curve::kValidationLoss), validationLoss);
    view.appendPoints(id, QLatin1String(curve::kAccuracy), accuracy);
    view.appendPoints(id, QLatin1String(curve::kValidationAccuracy), validationAccuracy);
    view.appendPoints(id, QLatin1String(curve::kLearningRate), lr);
    view.appendPoints(id, QLatin1String(curve::kGradientNorm), gradNorm);
    view.appendPoints(id, QLatin1String(curve::kTokensPerSecond), tokens);
    view.appendPoints(id, QLatin1String(curve::kBalanceLoss), balance);
}

// Runs one frame: `send` delivers the user's event, then the event loop runs
// until the chart has replotted and painted. What the refresh timer does in
// that frame (re-decimating for the new range) counts too. Milliseconds.
double frame(CurvePlot* chart, const std::function<void()>& send)
{
    bool replotted = false;
    const auto connection = QObject::connect(chart, &QCustomPlot::afterReplot, [&replotted] { replotted = true; });
    QElapsedTimer timer;
    timer.start();
    send();
    while (!replotted && timer.elapsed() < 5000)
        QCoreApplication::processEvents(QEventLoop::AllEvents);
    QCoreApplication::processEvents(QEventLoop::AllEvents);  // the paint the replot asked for
    const double ms = timer.nsecsElapsed() / 1e6;
    QObject::disconnect(connection);
    return ms;
}

struct Summary {
    double median = 0, p95 = 0, max = 0;
};

Summary summarise(QVector<double> times)
{
    std::sort(times.begin(), times.end());
    auto at = [&times](double q) {
        return times[std::min<qsizetype>(times.size() - 1, static_cast<qsizetype>(std::ceil(q * times.size())) - 1)];
    };
    return {at(0.5), at(0.95), times.back()};
}

// The time between a pointer's moves. The event loop does not run here: what
// falls due meanwhile (the refresh timer) runs at the next frame and is timed
// with it, as it would delay that frame on screen.
void idle() { QThread::msleep(kFrameIntervalMs); }

}  // namespace

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    Options options;
    const QStringList args = QCoreApplication::arguments();
    for (qsizetype i = 1; i < args.size(); ++i) {
        const QString& a = args[i];
        if (a == QLatin1String("--json"))
            options.json = true;
        else if (a == QLatin1String("--runs") && i + 1 < args.size())
            options.runs = args[++i].toInt();
        else if (a == QLatin1String("--steps") && i + 1 < args.size())
            options.steps = args[++i].toInt();
        else if (a == QLatin1String("--frames") && i + 1 < args.size())
            options.frames = args[++i].toInt();
        else {
            std::fprintf(stderr, "usage: widelab-bench-curves [--runs N] [--steps N] [--frames N] [--json]\n");
            return 2;
        }
    }

    CurvesView view;
    view.resize(1366, 768);
    std::mt19937 rng(20261124);
    QElapsedTimer load;
    load.start();
    for (int r = 0; r < options.runs; ++r)
        addRun(view, r, options.steps, rng);
    view.show();
    for (const QString& key : view.chartKeys())
        if (CurvePlot* chart = view.chart(key); chart->isVisible())
            chart->refreshNow();
    const double loadMs = load.nsecsElapsed() / 1e6;
    idle();

    CurvePlot* chart = view.chart(QLatin1String(curve::kLoss));
    const QRect rect = chart->axisRect()->rect();
    const QPointF centre = rect.center();
    // Panning: one drag across a third of the chart and back, a few pixels a frame.
    QVector<double> pan;
    const double reach = rect.width() / 3.0;
    QPointF at = centre;
    QMouseEvent press(QEvent::MouseButtonPress, at, chart->mapToGlobal(at), Qt::LeftButton, Qt::LeftButton,
                      Qt::NoModifier);
    QCoreApplication::sendEvent(chart, &press);
    for (int f = 0; f < options.frames; ++f) {
        const double phase = static_cast<double>(f + 1) / options.frames;
        at = centre + QPointF(reach * std::sin(2 * M_PI * phase), 0.2 * reach * std::sin(4 * M_PI * phase));
        pan.append(frame(chart, [&] {
            QMouseEvent move(QEvent::MouseMove, at, chart->mapToGlobal(at), Qt::NoButton, Qt::LeftButton,
                             Qt::NoModifier);
            QCoreApplication::sendEvent(chart, &move);
        }));
        idle();
    }
    QMouseEvent release(QEvent::MouseButtonRelease, at, chart->mapToGlobal(at), Qt::LeftButton, Qt::NoButton,
                        Qt::NoModifier);
    QCoreApplication::sendEvent(chart, &release);
    idle();

    // Zooming: wheel turns in, then out, at points across the chart.
    QVector<double> zoom;
    for (int f = 0; f < options.frames; ++f) {
        const bool in = f < options.frames / 2;
        const QPointF where(rect.left() + rect.width() * (0.2 + 0.6 * ((f * 7) % 11) / 10.0), centre.y());
        zoom.append(frame(chart, [&] {
            QWheelEvent wheel(where, chart->mapToGlobal(where), QPoint(), QPoint(0, in ? 120 : -120), Qt::NoButton,
                              Qt::NoModifier, Qt::NoScrollPhase, false);
            QCoreApplication::sendEvent(chart, &wheel);
        }));
        idle();
    }

    const Summary panned = summarise(pan);
    const Summary zoomed = summarise(zoom);
    const double worstP95 = std::max(panned.p95, zoomed.p95);
    const bool met = worstP95 < kTargetMs;
    if (options.json) {
        auto summary = [](const Summary& s) {
            return QJsonObject{{QStringLiteral("median_ms"), s.median}, {QStringLiteral("p95_ms"), s.p95},
                               {QStringLiteral("max_ms"), s.max}};
        };
        const QJsonObject out{{QStringLiteral("runs"), options.runs},
                              {QStringLiteral("steps"), options.steps},
                              {QStringLiteral("frames"), options.frames},
                              {QStringLiteral("window"), QStringLiteral("1366x768")},
                              {QStringLiteral("load_ms"), loadMs},
                              {QStringLiteral("pan"), summary(panned)},
                              {QStringLiteral("zoom"), summary(zoomed)},
                              {QStringLiteral("target_ms"), kTargetMs},
                              {QStringLiteral("target_met"), met}};
        std::printf("%s\n", QJsonDocument(out).toJson(QJsonDocument::Indented).constData());
    } else {
        std::printf("%d runs x %d steps, 1366x768, loss chart (%d frames each)\n", options.runs, options.steps,
                    options.frames);
        std::printf("  load and first draw: %.0f ms\n", loadMs);
        std::printf("  pan:  median %6.1f ms  p95 %6.1f ms  max %6.1f ms\n", panned.median, panned.p95, panned.max);
        std::printf("  zoom: median %6.1f ms  p95 %6.1f ms  max %6.1f ms\n", zoomed.median, zoomed.p95, zoomed.max);
        std::printf("  target: p95 under %.0f ms a frame: %s\n", kTargetMs, met ? "met" : "MISSED");
    }
    return met ? 0 : 1;
}
