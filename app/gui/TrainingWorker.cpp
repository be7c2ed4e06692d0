// Torch first: Qt's `slots` macro would break its headers (this file is built
// with QT_NO_KEYWORDS as well).
#include "train/Trainer.h"
#include "vocab/ConfigError.h"
#include "data/Tokenizer.h"
#include "runtime/CpuBlockCache.h"

#include "RunFiles.h"
#include "TrainingWorker.h"

#include <c10/util/Exception.h>

#include <QDir>
#include <QFile>

#include <new>

namespace widelab {
namespace {

// Forwards the core's observer calls as the worker's signals (queued to the window).
class SignalObserver : public TrainingObserver {
public:
    explicit SignalObserver(TrainingWorker& worker) : m_worker(worker) {}
    void onSnapshot(const TrainingSnapshot& s) override { Q_EMIT m_worker.record(recordOf(s)); }
    void onEvaluation(const EvaluationResult& r) override { Q_EMIT m_worker.record(recordOf(r)); }
    void onProbe(const ProbeResult& p) override { Q_EMIT m_worker.record(recordOf(p)); }
    void onValidationInsights(const ValidationInsights& v) override { Q_EMIT m_worker.record(recordOf(v)); }
    void onMessage(const std::string& level, const std::string& text) override
    {
        Q_EMIT m_worker.message(QString::fromStdString(level), QString::fromStdString(text));
    }
    void onPaused(std::int64_t step) override { Q_EMIT m_worker.paused(static_cast<qint64>(step)); }

private:
    TrainingWorker& m_worker;
};

QString outcomeName(TrainOutcome outcome)
{
    switch (outcome) {
    case TrainOutcome::Completed: return QStringLiteral("completed");
    case TrainOutcome::Stopped: return QStringLiteral("stopped");
    case TrainOutcome::NonFinite: return QStringLiteral("non-finite");
    case TrainOutcome::OutOfMemory: return QStringLiteral("out-of-memory");
    }
    return QStringLiteral("failed");
}

}  // namespace

void registerEngineTypes()
{
    qRegisterMetaType<RunStarted>();
    qRegisterMetaType<MetricsRecord>();
    qRegisterMetaType<TrainingRequest>();
}

TrainingWorker::TrainingWorker(std::shared_ptr<TrainingControl> control, QObject* parent)
    : RunEvents(parent), m_control(std::move(control))
{
}

TrainingWorker::~TrainingWorker() = default;

void TrainingWorker::train(const TrainingRequest& request)
{
    // Every failure becomes a message: nothing thrown may leave this thread.
    auto fail = [&](const QString& text) {
        Q_EMIT message(QStringLiteral("error"), text);
        Q_EMIT finished(QStringLiteral("failed"), text);
    };
    try {
        // From the start: what setting up says (data generated, a checkpoint
        // passed over) reaches the window as it happens.
        SignalObserver observer(*this);
        TrainerOptions options;
        options.resume = request.resume;
        options.force = request.force;
        options.observers = {&observer};
        options.cancelled = [control = m_control] { return control->stopRequested(); };
        RunDocument document = parseRunDocument(request.documentJson.toStdString(), "the configuration");
        Trainer trainer(std::move(document), request.directory.toStdString(), options);
        // The run's whole log so far, earlier sessions included (the window shows it
        // afresh once the run has started): read here, before anything else is logged.
        QStringList log;
        QFile logFile(runFile(request.directory, runlayout::kLog));
        if (logFile.open(QIODevice::ReadOnly | QIODevice::Text))
            log = QString::fromUtf8(logFile.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        Q_EMIT started(RunStarted{request.directory, QString::fromStdString(trainer.document().name),
                                  QString::fromStdString(trainer.device().str()), trainer.step(),
                                  trainer.totalSteps(), log});
        const TrainSummary summary = trainer.run(*m_control);
        Q_EMIT finished(outcomeName(summary.outcome), QString::fromStdString(summary.message));
    } catch (const SetupCancelled& error) {
        Q_EMIT message(QStringLiteral("info"), QString::fromStdString(error.what()));
        Q_EMIT finished(QStringLiteral("stopped"), QString::fromStdString(error.what()));
    } catch (const InsufficientMemory& error) {
        Q_EMIT message(QStringLiteral("error"), QString::fromStdString(error.what()));
        Q_EMIT finished(QStringLiteral("insufficient-memory"), QString::fromStdString(error.what()));
    } catch (const ConfigError& error) {
        fail(QString::fromStdString(error.what()));
    } catch (const std::bad_alloc&) {
        fail(tr("Out of memory. Try a smaller batch, a shorter sequence or a smaller model; the checkpoints "
                "written so far are kept."));
    } catch (const c10::Error& error) {
        const std::string what = error.what_without_backtrace();
        fail(tr("LibTorch reported an error: %1").arg(QString::fromStdString(what.substr(0, what.find('\n')))));
    } catch (const std::exception& error) {
        fail(QString::fromStdString(error.what()));
    }
    // The run's activations are idle now that its trainer is gone: the app
    // should not hold them until the next run.
    releaseCpuBlockCache();
}

}  // namespace widelab
